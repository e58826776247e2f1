/**
 * An advisory lock file that keeps two processes from writing one bank directory at once: two
 * writers appending to the same keys file would interleave rows and each overwrite the other's
 * manifest.
 *
 * The lock is created exclusively (a hard link, which fails on an existing name like O_EXCL). It records the owner's pid, host and (on Linux) the process start
 * time, so a lock left behind by a crashed process is recognised as stale and taken over, while a
 * recycled pid belonging to an unrelated process is not mistaken for the owner.
 *
 * A stale lock is removed under a second lock of the same kind, `<lock>.break`: processes that break
 * it take turns, so between the read that judged it stale and its removal nobody else can have
 * changed it (its owner is gone, and a link fails while it stands). A `.break` lock left by a breaker
 * that died is stale in turn and broken the same way, under `<lock>.break.break`.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { link, lstat, open, rm } from "node:fs/promises";
import { hostname } from "node:os";
import { GavelError, clip } from "../errors.js";
import { pidState } from "../util/pid.js";
import { readRegularFile, RegularFileError } from "../util/regular-file.js";

/** A lock file is one short JSON line; anything longer is not a lock. */
const MAX_LOCK_BYTES = 64 * 1024;
/** How long a take of the lock keeps trying while other processes break a stale one (after three tries), and its pause between tries then. */
const CONTENDED_MS = 5000;
const BREAK_WAIT_MS = 10;

/** What a lock file holds. */
interface LockInfo {
  pid: number;
  host: string;
  /** Process start time in clock ticks since boot (Linux `/proc/<pid>/stat` field 22), if known. */
  start?: string;
  createdAt: string;
}

/** Start time of a process (Linux only), used to tell a live owner from a recycled pid. */
function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may contain spaces and parentheses; fields resume after the last ')'.
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return rest[19]; // field 22 overall: 3 + 19
  } catch {
    return undefined;
  }
}

/** Whether the process a lock names still runs (unknowable for another host: assume it does). */
function ownerAlive(info: LockInfo): boolean {
  if (info.host !== hostname()) return true;
  // alive includes another user's process (EPERM); a pid of 0 or below (a process group) is no owner
  if (pidState(info.pid) !== "alive") return false;
  if (info.start !== undefined) {
    const now = processStart(info.pid);
    if (now !== undefined && now !== info.start) return false; // pid recycled
  }
  return true;
}

function parseLock(text: string): LockInfo | undefined {
  try {
    const v = JSON.parse(text) as LockInfo;
    if (typeof v === "object" && v !== null && Number.isInteger(v.pid) && typeof v.host === "string") return v;
  } catch {
    // fall through
  }
  return undefined;
}

/** A lock file's text, or null when it cannot be read as one (missing, damaged, not a regular file). */
const readLock = (p: string) => readRegularFile(p, MAX_LOCK_BYTES).then((b) => b.toString("utf8"), () => null);

/**
 * Removes the file at `path` (a lock, or another file that one process at a time holds by linking it
 * in) if it still reads as `stale` (null: a damaged or odd file), holding `<path>.break` meanwhile.
 * False when another process holds that (it is breaking the same file): the caller waits a moment and
 * tries again. Either way the caller then tries to link its own. `what` names the thing in errors.
 */
export async function breakStale(path: string, stale: string | null, what: string): Promise<boolean> {
  let breaking: DirLock;
  try {
    breaking = await DirLock.acquire(`${path}.break`, what);
  } catch (err) {
    if (err instanceof GavelError && err.code === "BANK_LOCKED") return false;
    throw err;
  }
  try {
    if ((await readLock(path)) === stale) await rm(path, { force: true });
  } finally {
    await breaking.release();
  }
  return true;
}

/**
 * {@link breakStale}, then, when another process was breaking the same file, a short random pause
 * (10-20 ms) before the caller tries to link its own again.
 */
export async function breakStaleOrPause(path: string, stale: string | null, what: string): Promise<void> {
  if (!(await breakStale(path, stale, what))) await new Promise((r) => setTimeout(r, BREAK_WAIT_MS * (1 + Math.random())));
}

/** A held lock; {@link DirLock.release} removes the file. */
export class DirLock {
  private constructor(
    readonly path: string,
    private readonly token: string,
  ) {}

  /**
   * Take the lock at `path`, breaking it when its owner is gone.
   *
   * @param what how to name the locked thing in errors, e.g. `bank /x/y`
   * @throws GavelError `BANK_LOCKED` when a live process (this one included) holds it
   */
  static async acquire(path: string, what: string): Promise<DirLock> {
    const me: LockInfo = { pid: process.pid, host: hostname(), start: processStart(process.pid), createdAt: new Date().toISOString() };
    const token = randomBytes(8).toString("hex");
    const body = JSON.stringify({ ...me, token }) + "\n";
    const deadline = Date.now() + CONTENDED_MS;
    for (let attempt = 0; attempt < 3 || Date.now() < deadline; attempt++) {
      // Write the whole lock body to a private file, then hard-link it into place: link() fails
      // with EEXIST like O_EXCL does, but the lock appears with its content already in it, so no
      // other process can read a half-written lock and take it for a dead one.
      const tmp = `${path}.${token}.new`;
      const fh = await open(tmp, "wx", 0o600);
      try {
        await fh.writeFile(body);
        await fh.sync();
      } catch (err) {
        // a full disk (ENOSPC) or an I/O error: the private file goes too (the caller types the error)
        await fh.close().catch(() => undefined);
        await rm(tmp, { force: true }).catch(() => undefined);
        throw err;
      }
      await fh.close();
      try {
        await link(tmp, path);
        return new DirLock(path, token);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      } finally {
        await rm(tmp, { force: true });
      }
      // The lock as a bounded regular file: null when something else stands in its place (a FIFO, a
      // device, a dangling or looping link, an oversized file), which nobody can be relying on.
      let text: string | null;
      try {
        text = (await readRegularFile(path, MAX_LOCK_BYTES)).toString("utf8");
      } catch (err) {
        if (!(err instanceof RegularFileError)) throw err;
        if (err.reason === "missing" && (await lstat(path).then(() => false, () => true))) continue; // released meanwhile: retry
        if (err.reason === "directory") throw new GavelError(`${what}: its lock ${clip(path)} is a directory; move it aside`, "CORRUPT_FILE");
        text = null;
      }
      const info = text === null ? undefined : parseLock(text);
      // Locks appear complete (see above), so one that does not parse was damaged on disk, not
      // caught mid-write; nobody can be relying on it.
      if (info && ownerAlive(info)) {
        const who = info.pid === process.pid && info.host === me.host ? "this process (it is already open; close it first)" : `process ${info.pid} on ${info.host}`;
        throw new GavelError(
          `${what} is in use by ${who}, since ${info.createdAt ?? "?"}. ` +
            `Wait for it to finish; if that process is gone, delete ${path}.`,
          "BANK_LOCKED",
        );
      }
      // (what was damaged still reads as null; a lock someone took meanwhile reads as its text)
      await breakStaleOrPause(path, text, what);
    }
    throw new GavelError(`${what}: could not take the lock ${clip(path)} (contended); try again`, "BANK_LOCKED");
  }

  /** Remove the lock file, if it is still ours. Idempotent. */
  async release(): Promise<void> {
    try {
      const text = (await readRegularFile(this.path, MAX_LOCK_BYTES)).toString("utf8");
      const v = JSON.parse(text) as { token?: string };
      if (v.token !== this.token) return; // broken and retaken by someone else: not ours to remove
    } catch {
      return;
    }
    await rm(this.path, { force: true });
  }
}
