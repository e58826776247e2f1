/**
 * Starting a resident router on demand: a detached `gavel serve --idle-exit-ms N` for a bank, its
 * output in a 0600 log file beside the socket. Used by the hook (`gavel hook claude-code
 * --start-server`) and by `serverRouter({ start })`. Imports only node built-ins, util/ and protocol.ts.
 *
 * @module
 */
import { spawn } from "node:child_process";
import { closeSync, existsSync, fstatSync, openSync, readSync, rmSync, statSync, writeFileSync } from "node:fs";
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

/**
 * What {@link startServer} did. `started` with `failed`: the server it started before exited without
 * listening (its marker named a process that is gone), and `failed` is the last line of its log, the
 * reason (a corrupt bank, a missing model), so that a start failing at every prompt says why.
 */
export type StartOutcome = { started: number; log: string; failed?: string } | { starting: number } | { refused: string };

/** Most bytes of the log's end read for a failed start's last line. */
const LOG_TAIL_BYTES = 4096;

/** The last non-empty line of `file`'s last {@link LOG_TAIL_BYTES} bytes; undefined when none can be read. */
function lastLogLine(file: string): string | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(file, "r");
    const size = fstatSync(fd).size;
    const n = Math.min(size, LOG_TAIL_BYTES);
    const buf = Buffer.alloc(n);
    readSync(fd, buf, 0, n, size - n);
    const lines = buf.toString("utf8").split("\n").map((l) => l.trim()).filter((l) => l !== "");
    return lines.at(-1);
  } catch {
    return undefined; // the line is only a help to the message
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

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
  /** More flags for the server (`--model PATH`, `--context N`, …), after those the start sets. */
  args?: readonly string[];
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
  const log = `${socket}.log`;
  // a server removes its marker once it listens: one naming a process that is gone failed to start
  let failed: string | undefined;
  try {
    const pid = Number(readRegularFileSync(marker, 64).toString("utf8").trim());
    if (pidAlive(pid) && Date.now() - statSync(marker).mtimeMs < STARTING_MS) return { starting: pid };
    if (Number.isInteger(pid) && pid > 0 && !pidAlive(pid)) failed = lastLogLine(log) ?? "(its log is empty)";
  } catch {
    // no marker (or an unreadable one): start
  }
  const fd = openSync(log, "a", 0o600);
  try {
    const args = [cli, "serve", "--bank", bank, "--idle-exit-ms", String(options.idleExitMs), ...(options.socket ? ["--socket", options.socket] : []), ...(options.args ?? [])];
    const child = spawn(process.execPath, args, { cwd: options.cwd, detached: true, stdio: ["ignore", fd, fd] });
    child.on("error", () => undefined);
    child.unref();
    if (child.pid === undefined) return { refused: "the server process did not start" };
    rmSync(marker, { force: true });
    writeFileSync(marker, `${child.pid}\n`, { mode: 0o600 });
    return failed === undefined ? { started: child.pid, log } : { started: child.pid, log, failed };
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
