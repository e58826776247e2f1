/**
 * Bounded reads of files a user or a third party put on disk (SKILL.md files, projections, models,
 * bank manifests, JSONL libraries). Lives in util/, the lowest layer that reads such files, so every
 * reader of them uses it (gguf/regular-file.ts re-exports it for the GGUF reader's older imports).
 *
 * Symlink policy: symbolic links are followed (hosts link shared skill folders and models into
 * place), but what the link finally resolves to must be a regular file. A link (or a path) to a
 * character device (`/dev/zero`, `/dev/urandom`), a FIFO, a socket or a directory is refused before
 * a byte is read: `stat` (which follows links) is checked before the open, the open carries
 * O_NONBLOCK so a FIFO swapped in between never blocks it, and `fstat` of the opened handle is
 * checked again. Sizes are checked against the caller's cap from `fstat`, and a read never takes
 * more than the cap (+1 byte to see growth), so a file that grows while it is read cannot exhaust
 * memory either.
 */
import { closeSync, constants, fstatSync, openSync, readSync, statSync, type Stats } from "node:fs";
import { open, stat, type FileHandle } from "node:fs/promises";
import { clip } from "../errors.js";

/** Why a path cannot be read as a regular file. */
export type NotRegularReason = "missing" | "directory" | "fifo" | "device" | "socket" | "other" | "too-large" | "unreadable";

/** A refusal of {@link openRegularFile} / {@link readRegularFile}: callers map it to their typed error. */
export class RegularFileError extends Error {
  readonly reason: NotRegularReason;
  readonly path: string;
  constructor(path: string, reason: NotRegularReason, message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "RegularFileError";
    this.path = path;
    this.reason = reason;
  }
}

/** What a non-regular file is, in words and as a reason. */
function kindOf(st: Stats): [NotRegularReason, string] {
  if (st.isDirectory()) return ["directory", "a directory"];
  if (st.isFIFO()) return ["fifo", "a FIFO (named pipe)"];
  if (st.isCharacterDevice() || st.isBlockDevice()) return ["device", "a device"];
  if (st.isSocket()) return ["socket", "a socket"];
  return ["other", "not a regular file"];
}

function refuseNonRegular(path: string, st: Stats): void {
  if (st.isFile()) return;
  const [reason, what] = kindOf(st);
  throw new RegularFileError(path, reason, `${clip(path)} is ${what}, not a regular file (after following symlinks)`);
}

function fromErrno(path: string, err: unknown): RegularFileError {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "ENOENT" || code === "ENOTDIR") return new RegularFileError(path, "missing", `${clip(path)}: file not found`, err);
  if (code === "ELOOP") return new RegularFileError(path, "other", `${clip(path)}: too many levels of symbolic links`, err);
  return new RegularFileError(path, "unreadable", `${clip(path)}: cannot open (${code ?? clip(String(err))})`, err);
}

/**
 * Opens `path` for reading (or `writable`: read and write) only when it resolves to a regular file,
 * without ever blocking on a FIFO. The handle is the caller's to close.
 *
 * @throws RegularFileError: `missing`, `directory`, `fifo`, `device`, `socket`, `other`, `unreadable`
 */
export async function openRegularFile(path: string, options: { writable?: boolean } = {}): Promise<{ fh: FileHandle; size: number }> {
  let st: Stats;
  try {
    st = await stat(path);
  } catch (err) {
    throw fromErrno(path, err);
  }
  refuseNonRegular(path, st);
  const flags = (options.writable ? constants.O_RDWR : constants.O_RDONLY) | constants.O_NONBLOCK;
  let fh: FileHandle;
  try {
    fh = await open(path, flags);
  } catch (err) {
    throw fromErrno(path, err);
  }
  try {
    // The path may have been swapped between stat and open: check what was opened.
    const st2 = await fh.stat();
    refuseNonRegular(path, st2);
    return { fh, size: st2.size };
  } catch (err) {
    await fh.close().catch(() => undefined);
    throw err;
  }
}

/**
 * The bytes of `path`, a regular file of at most `maxBytes` bytes (see the module's symlink policy).
 *
 * @throws RegularFileError: as {@link openRegularFile}, and `too-large` above `maxBytes`
 */
export async function readRegularFile(path: string, maxBytes: number): Promise<Buffer> {
  const { fh, size } = await openRegularFile(path);
  try {
    if (size > maxBytes) throw new RegularFileError(path, "too-large", `${clip(path)} is ${size} bytes, above the cap of ${maxBytes}`);
    // Read at most maxBytes + 1: a file that grew after fstat is caught without reading all of it.
    const buf = Buffer.alloc(Math.min(size, maxBytes) + 1);
    let n = 0;
    while (n < buf.length) {
      const { bytesRead } = await fh.read(buf, n, buf.length - n, n);
      if (bytesRead === 0) break;
      n += bytesRead;
    }
    if (n > maxBytes) throw new RegularFileError(path, "too-large", `${clip(path)} grew past the cap of ${maxBytes} bytes while it was read`);
    return buf.subarray(0, n);
  } finally {
    await fh.close().catch(() => undefined);
  }
}

/**
 * {@link readRegularFile}, synchronously (for the few readers that must stay synchronous, such as
 * discovery's small JSON settings files): the same checks, the same cap.
 *
 * @throws RegularFileError: as {@link readRegularFile}
 */
export function readRegularFileSync(path: string, maxBytes: number): Buffer {
  let fd: number;
  try {
    refuseNonRegular(path, statSync(path));
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    throw err instanceof RegularFileError ? err : fromErrno(path, err);
  }
  try {
    const st = fstatSync(fd);
    refuseNonRegular(path, st);
    if (st.size > maxBytes) throw new RegularFileError(path, "too-large", `${clip(path)} is ${st.size} bytes, above the cap of ${maxBytes}`);
    const buf = Buffer.alloc(st.size + 1);
    let n = 0;
    for (let got; n < buf.length && (got = readSync(fd, buf, n, buf.length - n, n)) > 0; ) n += got;
    if (n > maxBytes) throw new RegularFileError(path, "too-large", `${clip(path)} grew past the cap of ${maxBytes} bytes while it was read`);
    return buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

/** Escapes and caps a string quoted in an error message (file contents never flood a message). */
export function quoteForMessage(s: string, max = 80): string {
  const cut = s.length > max ? s.slice(0, max) : s;
  // JSON escapes C0 controls, quotes and backslashes; DEL, C1 controls and bidi overrides too here.
  const q = JSON.stringify(cut).replace(/[\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2066-\u2069]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  return s.length > max ? `${q.slice(0, -1)}…" (${s.length} characters)` : q;
}
