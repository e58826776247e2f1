/**
 * The project's one reading of the file system's errno codes: which {@link GavelErrorCode} each
 * stands for and the words a message gives it, and {@link errnoError}, the one function that types a
 * failed file operation by it. The server's start (serve/listen.ts), the hook installer, the bank's
 * folder, permission and full-disk errors (bank/opening.ts, bank/modes.ts), the glance index's
 * in-memory fallback, the gate file's reader and writer, the CLI's output files and its last-resort
 * report all read it here.
 *
 * @module
 */
import { GavelError, clip, clipMessage, type GavelErrorCode } from "../errors.js";
import { DirSyncError } from "./durable-file.js";

/** Each errno the project names, as [its code, the words a message gives it]. */
export const ERRNO_REASONS: Readonly<Record<string, readonly [GavelErrorCode, string]>> = {
  EACCES: ["PERMISSION_DENIED", "permission denied"],
  EPERM: ["PERMISSION_DENIED", "permission denied"],
  EROFS: ["PERMISSION_DENIED", "a read-only file system"],
  ENOSPC: ["NO_SPACE", "no space left on the device"],
  EDQUOT: ["NO_SPACE", "the disk quota is used up"],
  ENOENT: ["FILE_NOT_FOUND", "no such file or folder"],
  ENOTDIR: ["FILE_NOT_FOUND", "a part of the path is not a folder"],
  ENAMETOOLONG: ["FILE_NOT_FOUND", "the path is too long"],
  ELOOP: ["FILE_NOT_FOUND", "too many levels of symbolic links"],
  EISDIR: ["INVALID_ARGUMENT", "a folder is in the way (remove it)"],
  ERR_FS_EISDIR: ["INVALID_ARGUMENT", "a folder is in the way (remove it)"],
  EEXIST: ["INVALID_ARGUMENT", "a file is in the way (remove it)"],
};

/** The errnos that mean the file system refuses the process (PERMISSION_DENIED): EACCES, EPERM, EROFS. */
export const PERMISSION_ERRNOS: readonly string[] = errnosOf("PERMISSION_DENIED");
/** The errnos that mean the disk is full (NO_SPACE): ENOSPC, EDQUOT. */
export const NO_SPACE_ERRNOS: readonly string[] = errnosOf("NO_SPACE");

function errnosOf(code: GavelErrorCode): string[] {
  return Object.keys(ERRNO_REASONS).filter((k) => ERRNO_REASONS[k]![0] === code);
}

/** `err`'s own errno code (`err.code` when it is a string), if any. */
export function errnoOf(err: unknown): string | undefined {
  const code = (err as NodeJS.ErrnoException | null | undefined)?.code;
  return typeof code === "string" ? code : undefined;
}

/** The [code, words] the project gives `errno`, if it names it. */
export function errnoReason(errno: string | undefined): readonly [GavelErrorCode, string] | undefined {
  return errno !== undefined && Object.hasOwn(ERRNO_REASONS, errno) ? ERRNO_REASONS[errno] : undefined;
}

/** The first error in `err`'s chain of causes (8 deep at most) whose errno is one of `codes`, if any. */
export function errnoCause(err: unknown, codes: readonly string[]): NodeJS.ErrnoException | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const code = errnoOf(e);
    if (code !== undefined && codes.includes(code)) return e as NodeJS.ErrnoException;
  }
  return undefined;
}

/** What {@link errnoError} makes of an error of no errno the project names. */
export interface ErrnoErrorOptions {
  /**
   * `"as-is"` (the default): the error itself; `"internal"`: a GavelError INTERNAL of `doing` and the
   * error's message (for a place that must always answer with a GavelError).
   */
  fallback?: "as-is" | "internal";
}

/**
 * `err` as the typed error of a failed file operation, one reading for every place that reports one
 * (the server's start, the hook installer, the bank's folder, the gate file, the CLI's output files):
 * - a GavelError: as it is;
 * - a {@link DirSyncError} in its chain of causes (the file was renamed into place, only its folder's
 *   fsync failed): the file was written, and the message says so, typed as {@link unsyncedReason} types it;
 * - an errno the project names in its chain of causes: `doing` (e.g. "cannot write the gate file
 *   x.json", or a function of the code it gets), the errno's words and the errno, with its code
 *   ({@link ERRNO_REASONS});
 * - anything else: as it is, or INTERNAL with `fallback: "internal"`.
 */
export function errnoError(err: unknown, doing: string | ((code: GavelErrorCode) => string), options: ErrnoErrorOptions & { fallback: "internal" }): GavelError;
export function errnoError(err: unknown, doing: string | ((code: GavelErrorCode) => string), options?: ErrnoErrorOptions): unknown;
export function errnoError(err: unknown, doing: string | ((code: GavelErrorCode) => string), options: ErrnoErrorOptions = {}): unknown {
  if (err instanceof GavelError) return err;
  const what = (code: GavelErrorCode) => (typeof doing === "string" ? doing : doing(code));
  const unsynced = dirSyncCause(err);
  if (unsynced !== undefined) {
    const [code, words] = unsyncedReason(unsynced);
    return new GavelError(`${clip(unsynced.path)} was written, but its folder could not be synced (${words}), so it may not survive a power cut; check the disk`, code, { cause: err });
  }
  const io = errnoCause(err, Object.keys(ERRNO_REASONS));
  if (io !== undefined) {
    const [code, words] = ERRNO_REASONS[io.code!]!;
    return new GavelError(`${what(code)}: ${words} (${io.code})`, code, { cause: err });
  }
  if (options.fallback !== "internal") return err;
  return new GavelError(`${what("INTERNAL")}: ${clipMessage(err)}`, "INTERNAL", { cause: err });
}

/** The first {@link DirSyncError} in `err`'s chain of causes (8 deep at most), if any. */
function dirSyncCause(err: unknown): DirSyncError | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof DirSyncError) return e;
  }
  return undefined;
}

/**
 * The code and words for a file renamed into place whose folder's fsync then failed (`err`): typed by
 * the fsync's errno (a read-only remount PERMISSION_DENIED, a full disk NO_SPACE, …); an I/O error, or
 * an errno the table does not name, is CORRUPT_FILE (the disk failed under it). The words end with the
 * errno when there is one ("a read-only file system, EROFS").
 */
export function unsyncedReason(err: DirSyncError): [GavelErrorCode, string] {
  const errno = errnoOf(err);
  const [code, words] = errnoReason(errno) ?? ["CORRUPT_FILE", errno === "EIO" ? "an I/O error; the disk may be failing" : clipMessage(err.cause)];
  return [code, `${words}${errno === undefined ? "" : `, ${errno}`}`];
}
