/**
 * The project's one reading of the file system's errno codes: which {@link GavelErrorCode} each
 * stands for and the words a message gives it. The server's start (serve/listen.ts), the bank's
 * permission and full-disk errors (bank/modes.ts, bank/opening.ts), the glance index's in-memory
 * fallback, the gate file's reader and writer, the CLI's output files and its last-resort report
 * all read it here.
 *
 * @module
 */
import { GavelError, type GavelErrorCode } from "../errors.js";

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

/**
 * `err` as the typed error of a failed file operation when an errno the project names is in its
 * chain of causes: `doing` (e.g. "cannot write the gate file x.json"), the errno's words and the
 * errno, with its code ({@link ERRNO_REASONS}); a GavelError, or an error of another errno, as it is.
 */
export function errnoError(err: unknown, doing: string): unknown {
  if (err instanceof GavelError) return err;
  const io = errnoCause(err, Object.keys(ERRNO_REASONS));
  if (io === undefined) return err;
  const [code, words] = ERRNO_REASONS[io.code!]!;
  return new GavelError(`${doing}: ${words} (${io.code})`, code, { cause: err });
}
