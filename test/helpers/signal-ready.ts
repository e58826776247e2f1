/**
 * Waiting until a child process has started and sits idle (blocked reading its stdin, say), so a test
 * that then signals it is not racing the child's start-up: a loaded machine can take seconds to load a
 * CLI's modules, and a signal sent before its handler is installed ends the process by the default
 * action. (Node catches SIGINT from its own start, to reset the terminal, so the signal mask in
 * /proc/<pid>/status cannot say when the program's handler is in place.)
 */
import { readFileSync } from "node:fs";

/**
 * Resolves once `pid`'s main thread has been asleep (state S in /proc/<pid>/stat) at every look for
 * `quietMs` in a row, or after `fallbackMs` where /proc cannot say (other platforms). Rejects when the
 * process is gone or `deadlineMs` passes first.
 */
export async function whenIdle(pid: number, { quietMs = 750, deadlineMs = 120_000, fallbackMs = 5_000 } = {}): Promise<void> {
  if (process.platform !== "linux") return new Promise((resolve) => setTimeout(resolve, fallbackMs));
  const until = Date.now() + deadlineMs;
  let quietSince: number | undefined;
  for (;;) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      throw new Error(`process ${pid} is gone before it went idle`);
    }
    // the state follows the command name in parentheses (which may itself hold spaces or parentheses)
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    if (state === "Z" || state === "X") throw new Error(`process ${pid} ended before it went idle`);
    const now = Date.now();
    quietSince = state === "S" ? (quietSince ?? now) : undefined;
    if (quietSince !== undefined && now - quietSince >= quietMs) return;
    if (now > until) throw new Error(`process ${pid} did not go idle within ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
