/**
 * Durable file writes, written once: a file is replaced whole or not at all, and the replacement
 * survives a power cut. The GGUF writer (so the projections), the bank store and its texts, training
 * checkpoints, the layer choice and the states cache all write through here.
 *
 * The recipe: write a temporary file beside the target (same directory, so the rename cannot cross
 * file systems), fsync it, rename it over the target, fsync the directory. Readers therefore see the
 * old file or the new one, never a torn one. A failure after the rename is a {@link DirSyncError}: the
 * new file is in place then, and a caller must not act as though the old one still were.
 */
import { randomBytes } from "node:crypto";
import { open, rename, rm, type FileHandle } from "node:fs/promises";
import { dirname } from "node:path";

/**
 * fsync a directory, so that a rename or create inside it survives a power cut (on Linux a rename is
 * only durable once its directory is synced). On Windows a directory cannot be flushed
 * (FlushFileBuffers on a directory handle fails, Node's EPERM) and NTFS journals the rename itself:
 * nothing to do there.
 */
export async function fsyncDir(dir: string): Promise<void> {
  if (process.platform === "win32") return;
  const fh = await open(dir, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * A fresh temporary name beside `path`: `<path>.<12 hex>.tmp`. Openers that clean up after a crash
 * (e.g. the bank store) recognise this shape.
 */
export function tempPathFor(path: string): string {
  return `${path}.${randomBytes(6).toString("hex")}.tmp`;
}

/** Writes all of `bytes` at `position` (a single `write` may write fewer bytes than asked). */
export async function writeAll(fh: FileHandle, bytes: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < bytes.byteLength) {
    const { bytesWritten } = await fh.write(bytes, done, bytes.byteLength - done, position + done);
    done += bytesWritten;
  }
}

/**
 * What {@link writeFileDurable} writes: text (UTF-8), bytes, a list of byte chunks written in order,
 * or a function that writes the open temporary file itself (for output made in pieces).
 */
export type DurableContent = string | Uint8Array | readonly Uint8Array[] | ((fh: FileHandle) => Promise<void>);

/** Options of {@link writeFileDurable}. */
export interface DurableWriteOptions {
  /**
   * fsync the file and its directory (default true). Off only for caches, where an entry lost or
   * torn by a power cut is detected and recomputed: the write is still atomic for other readers.
   */
  sync?: boolean;
  /**
   * fsync the directory after the rename (default: as `sync`). A writer of many files in one
   * directory may turn it off and fsync the directory once, with {@link fsyncDir}, before anything
   * that must not outlive them is committed.
   */
  syncDir?: boolean;
  /** Mode of the file when it is created (default 0o666, narrowed by the umask); a bank's are 0o600. */
  mode?: number;
}

/**
 * What {@link writeFileDurable} throws when the rename was done but the directory's fsync failed: the
 * new file is in place (every reader sees it), but the rename may not survive a power cut. `cause` is
 * the fsync's error and `code` its errno, so a caller that reads errnos reads it as it would the fsync's.
 */
export class DirSyncError extends Error {
  /** The file that was written (and renamed into place). */
  readonly path: string;
  /** The errno of the failed fsync, if it had one. */
  readonly code: string | undefined;
  constructor(path: string, cause: unknown) {
    const code = (cause as NodeJS.ErrnoException | null)?.code;
    super(`${path} was written, but its folder could not be synced (${cause instanceof Error ? cause.message : String(cause)})`, { cause });
    this.name = "DirSyncError";
    this.path = path;
    this.code = typeof code === "string" ? code : undefined;
  }
}

/**
 * Replaces `path` with `content`, whole or not at all: temp file, fsync, rename, directory fsync.
 * The temporary file is removed when anything fails before the rename (the old file stands then);
 * a failed directory fsync after it is a {@link DirSyncError} (the new file stands).
 */
export async function writeFileDurable(path: string, content: DurableContent, options: DurableWriteOptions = {}): Promise<void> {
  const sync = options.sync ?? true;
  const tmp = tempPathFor(path);
  try {
    const fh = await open(tmp, "wx", options.mode ?? 0o666);
    try {
      await writeContent(fh, content);
      if (sync) await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  if (!(options.syncDir ?? sync)) return;
  try {
    await fsyncDir(dirname(path));
  } catch (err) {
    throw new DirSyncError(path, err);
  }
}

async function writeContent(fh: FileHandle, content: DurableContent): Promise<void> {
  if (typeof content === "function") return content(fh);
  if (typeof content === "string") return writeAll(fh, Buffer.from(content, "utf8"), 0);
  if (content instanceof Uint8Array) return writeAll(fh, content, 0);
  let at = 0;
  for (const chunk of content) {
    await writeAll(fh, chunk, at);
    at += chunk.byteLength;
  }
}
