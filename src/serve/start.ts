/**
 * Starting a resident router on demand: a detached `gavel serve --idle-exit-ms N` for a bank, its
 * output in a 0600 log file beside the socket. Used by the hook (`gavel hook claude-code
 * --start-server`) and by `serverRouter({ start })`. Imports only node built-ins, util/ and protocol.ts.
 *
 * @module
 */
import { spawn } from "node:child_process";
import { closeSync, existsSync, openSync, rmSync, statSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { readRegularFile, readRegularFileSync } from "../util/regular-file.js";
import { join } from "node:path";
import { findPackageRoot } from "../util/package-root.js";
import { pidAlive } from "../util/pid.js";
import { defaultSocketPath } from "./protocol.js";

/** How long a server started on demand waits with no client before it exits (30 min). */
export const DEFAULT_ON_DEMAND_IDLE_MS = 30 * 60 * 1000;

/** A start newer than this whose process still lives is taken as still loading (no second start). */
const STARTING_MS = 5 * 60 * 1000;

/** What {@link startServer} did. */
export type StartOutcome = { started: number; log: string } | { starting: number } | { refused: string };

/** Options of {@link startServer}. */
export interface StartOptions {
  /** The socket to serve on (default: the bank's). */
  socket?: string;
  /** The server's `--idle-exit-ms`. */
  idleExitMs: number;
  /** The server's working folder. */
  cwd: string;
  /** The CLI to run (default: this package's dist/cli/gavel.js). */
  cli?: string;
}

/**
 * Starts `gavel serve` for `bank` (absolute), detached from this process, its output appended to
 * `<socket>.log` (0600). A start marker (`<socket>.starting`, the server's pid) keeps callers in a row
 * from starting two servers while the first still loads its model. A missing bank is refused.
 */
export function startServer(bank: string, options: StartOptions): StartOutcome {
  if (!existsSync(bank)) return { refused: `no skill bank at ${bank} (gavel install <skills> builds one)` };
  const root = findPackageRoot();
  const cli = options.cli ?? (root ? join(root, "dist", "cli", "gavel.js") : null);
  if (!cli || !existsSync(cli)) return { refused: "the gavel CLI (dist/cli/gavel.js) was not found" };
  const socket = options.socket ?? defaultSocketPath(bank);
  const marker = `${socket}.starting`;
  try {
    const pid = Number(readRegularFileSync(marker, 64).toString("utf8").trim());
    if (pidAlive(pid) && Date.now() - statSync(marker).mtimeMs < STARTING_MS) return { starting: pid };
  } catch {
    // no marker (or an unreadable one): start
  }
  const log = `${socket}.log`;
  const fd = openSync(log, "a", 0o600);
  try {
    const args = [cli, "serve", "--bank", bank, "--idle-exit-ms", String(options.idleExitMs), ...(options.socket ? ["--socket", options.socket] : [])];
    const child = spawn(process.execPath, args, { cwd: options.cwd, detached: true, stdio: ["ignore", fd, fd] });
    child.on("error", () => undefined);
    child.unref();
    if (child.pid === undefined) return { refused: "the server process did not start" };
    rmSync(marker, { force: true });
    writeFileSync(marker, `${child.pid}\n`, { mode: 0o600 });
    return { started: child.pid, log };
  } finally {
    closeSync(fd);
  }
}

/**
 * The start marker `gavel hook --start-server` leaves beside the socket (`<socket>.starting`, the
 * pid it started: src/serve/start.ts), removed once this server listens and again when it stops,
 * when it names this process: a marker of another server is left alone.
 */
export async function removeStartMarker(socket: string): Promise<void> {
  const marker = `${socket}.starting`;
  const pid = Number((await readRegularFile(marker, 64).then((b) => b.toString("utf8"), () => "")).trim());
  if (pid === process.pid) await rm(marker, { force: true });
}
