// The hook's on-demand server (`gavel hook claude-code --start-server`, GAVEL_START_SERVER=1): when no
// server runs for the bank, start a detached `gavel serve --idle-exit-ms N` for it (serve/start.ts) and
// return at once, so that the next prompt is served; the current one is never held while the model loads.
// hook-run.ts imports this module only when no server answers (node:child_process is not loaded otherwise).
import { DEFAULT_ON_DEMAND_IDLE_MS, startServer } from "../../serve/start.js";

/**
 * Starts a server for `bank`, where none runs (`idleExitMs` defaults to DEFAULT_ON_DEMAND_IDLE_MS),
 * and returns the hook's line saying what happened.
 */
export function startServerLine(bank: string, start: { socket?: string; idleExitMs?: number; cwd: string }): string {
  // the hook's own CLI (the one Claude Code ran), so the server is the same gavel
  const r = startServer(bank, { ...start, idleExitMs: start.idleExitMs ?? DEFAULT_ON_DEMAND_IDLE_MS, cli: process.argv[1] });
  if ("started" in r) {
    // the one started before exited without listening: say why, or every prompt reads "started one"
    const failed = r.failed === undefined ? "" : `; the server started before exited without listening: ${r.failed}`;
    return `no gavel server ran for the bank ${bank}; started one (pid ${r.started}, log ${r.log}) for the next prompts${failed}`;
  }
  if ("starting" in r) return `the gavel server for the bank ${bank} is still starting (pid ${r.starting})`;
  return `no gavel server runs for the bank ${bank}, and none was started: ${r.refused}`;
}
