/**
 * Whether the bank's commit moved: `gavel mcp` over stdio tells its client `notifications/resources/list_changed`
 * and `notifications/prompts/list_changed` when an install or uninstall commits while it runs. A commit
 * replaces `<bank>/manifest.json` (a new file renamed over it), so its inode, size and mtime say it.
 * Checked at each frame the client sends and every {@link BANK_WATCH_MS} (a stat; the timer does not
 * keep the process alive); never calls the skill source, so an idle session costs `gavel serve` nothing.
 *
 * @module
 */
import { statSync } from "node:fs";
import { join } from "node:path";
import { MANIFEST } from "../../bank/manifest.js";

/** How often an idle session looks at the bank's manifest. */
export const BANK_WATCH_MS = 5000;

/** A watch of one bank's commit; `check()` calls `changed` once per commit seen. */
export interface BankWatch {
  check(): void;
  stop(): void;
}

/** The manifest's identity, or "" when there is none. */
function stamp(file: string): string {
  try {
    const st = statSync(file, { bigint: true });
    return `${st.ino}:${st.size}:${st.mtimeNs}`;
  } catch {
    return "";
  }
}

/** Watches `bankDir`'s commit, calling `changed` when it moves (after `check()` or the timer). */
export function watchBank(bankDir: string, changed: () => void, everyMs: number = BANK_WATCH_MS): BankWatch {
  const file = join(bankDir, MANIFEST);
  let last = stamp(file);
  const check = () => {
    const now = stamp(file);
    if (now === last) return;
    last = now;
    changed();
  };
  const timer = setInterval(check, everyMs);
  timer.unref();
  return { check, stop: () => clearInterval(timer) };
}
