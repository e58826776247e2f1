// The hook's on-demand server (`gavel hook claude-code --start-server`, GAVEL_START_SERVER=1): when no
// server runs for the bank, start a detached `gavel serve --idle-exit-ms N` for it and return at once,
// so that the next prompt is served; the current one is never held while the model loads.
//
// Like hook.ts this imports only node built-ins and the serve protocol (no model, no addon): it runs
// on every prompt that finds no server.
import { spawn } from "node:child_process";
import { existsSync, openSync, closeSync, readFileSync, writeFileSync, rmSync, statSync } from "node:fs";
import { defaultSocketPath } from "../../serve/protocol.js";

/** How long a server started on demand waits with no client before it exits (30 min). */
export const DEFAULT_ON_DEMAND_IDLE_MS = 30 * 60 * 1000;

/** A start newer than this whose process still lives is taken as still loading (no second start). */
const STARTING_MS = 5 * 60 * 1000;

/** What {@link startServer} did. */
export type StartOutcome = { started: number; log: string } | { starting: number } | { refused: string };

/** Whether process `pid` exists (signal 0 checks without sending anything). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Starts `gavel serve` for `bank` (absolute), detached from the hook, its output in a 0600 log file
 * beside the socket (`<socket>.log`). A start marker (`<socket>.starting`, the server's pid) keeps two
 * prompts in a row from starting two servers while the first still loads its model.
 */
export function startServer(bank: string, options: { socket?: string; idleExitMs: number; cwd: string }): StartOutcome {
  if (!existsSync(bank)) return { refused: `no skill bank at ${bank} (gavel install <skills> builds one)` };
  const socket = options.socket ?? defaultSocketPath(bank);
  const marker = `${socket}.starting`;
  try {
    const pid = Number(readFileSync(marker, "utf8").trim());
    if (Number.isInteger(pid) && pid > 0 && alive(pid) && Date.now() - statSync(marker).mtimeMs < STARTING_MS) return { starting: pid };
  } catch {
    // no marker (or an unreadable one): start
  }
  const log = `${socket}.log`;
  const fd = openSync(log, "a", 0o600);
  try {
    const args = [process.argv[1], "serve", "--bank", bank, "--idle-exit-ms", String(options.idleExitMs), ...(options.socket ? ["--socket", options.socket] : [])];
    const child = spawn(process.execPath, args, { cwd: options.cwd, detached: true, stdio: ["ignore", fd, fd], env: process.env });
    child.unref();
    if (child.pid === undefined) return { refused: "the server process did not start" };
    rmSync(marker, { force: true });
    writeFileSync(marker, `${child.pid}\n`, { mode: 0o600 });
    return { started: child.pid, log };
  } finally {
    closeSync(fd);
  }
}

/** The hook's line when no server runs for `bank`, after starting one when `start` is given. */
export function noServerLine(bank: string, why: string, start: { socket?: string; idleExitMs: number; cwd: string } | null): string {
  if (!start) return `no gavel server runs for the bank ${bank} (${why}start one with \`gavel serve\`)`;
  const r = startServer(bank, start);
  if ("started" in r) return `no gavel server ran for the bank ${bank}; started one (pid ${r.started}, log ${r.log}) for the next prompts`;
  if ("starting" in r) return `the gavel server for the bank ${bank} is still starting (pid ${r.starting})`;
  return `no gavel server runs for the bank ${bank}, and none was started: ${r.refused}`;
}
