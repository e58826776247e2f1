/**
 * Whether the bank's commit moved: `gavel mcp` over stdio tells its client `notifications/resources/list_changed`
 * and `notifications/prompts/list_changed` when an install or uninstall commits while it runs. A commit
 * replaces `<bank>/manifest.json` (a new file renamed over it), so its inode, size and mtime say it.
 * Looked at when the client sends a frame and every {@link BANK_WATCH_MS}: an asynchronous stat, one at
 * a time (a frame that comes while one runs asks for one more after it, so a commit made meanwhile is
 * still seen), so a frame never waits on the disk; the timer does not keep the process alive. Never calls
 * the skill source, so an idle session costs `gavel serve` nothing.
 *
 * @module
 */
import { stat, statSync, type BigIntStats } from "node:fs";
import { join } from "node:path";
import { MANIFEST } from "../../bank/manifest.js";

/** How often an idle session looks at the bank's manifest. */
export const BANK_WATCH_MS = 5000;

/** A watch of one bank's commit; `check()` starts a look (`changed` is called once per commit seen). */
export interface BankWatch {
  check(): void;
  stop(): void;
}

/** A manifest's identity from its stat, or "" when there is none. */
function identity(err: Error | null, st: BigIntStats | undefined): string {
  return err || !st ? "" : `${st.ino}:${st.size}:${st.mtimeNs}`;
}

/** The manifest's identity now (once, when the watch starts: what later looks compare with). */
function stampNow(file: string): string {
  try {
    return identity(null, statSync(file, { bigint: true }));
  } catch {
    return "";
  }
}

/** Watches `bankDir`'s commit, calling `changed` when it moves (after `check()` or the timer). */
export function watchBank(bankDir: string, changed: () => void, everyMs: number = BANK_WATCH_MS): BankWatch {
  const file = join(bankDir, MANIFEST);
  let last = stampNow(file);
  let running = false;
  let again = false;
  let stopped = false;
  const check = (): void => {
    if (stopped) return;
    if (running) {
      again = true; // looked at once more after the one in flight
      return;
    }
    running = true;
    stat(file, { bigint: true }, (err, st) => {
      running = false;
      const now = identity(err, st);
      if (again) {
        again = false;
        check();
      }
      if (!stopped && now !== last) {
        last = now;
        changed();
      }
    });
  };
  const timer = setInterval(check, everyMs);
  timer.unref();
  return {
    check,
    stop: () => {
      stopped = true;
      clearInterval(timer);
    },
  };
}
