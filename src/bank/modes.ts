/**
 * Who may read a bank: its files are created 0600 and its folders 0700 (the owner only; the process
 * umask can only narrow them), since a bank holds the installed skills' texts, sources and front
 * matter. A permission failure on a bank (another user's bank, a read-only folder) is one typed
 * `PERMISSION_DENIED` line naming the path, never a raw EACCES stack.
 */
import { GavelError, clip } from "../errors.js";
import type { DirSyncError } from "../util/durable-file.js";
import { errnoCause, NO_SPACE_ERRNOS, PERMISSION_ERRNOS, unsyncedReason } from "../util/errno.js";

/** Mode of every file a bank writer creates (manifest, keys, texts, lexicon, lock). */
export const BANK_FILE_MODE = 0o600;
/** Mode of the folders a bank writer creates (the bank, texts/). */
export const BANK_DIR_MODE = 0o700;

/** The EACCES / EPERM / EROFS error in `err` or its chain of causes, if any. */
export function permissionCause(err: unknown): NodeJS.ErrnoException | undefined {
  return errnoCause(err, PERMISSION_ERRNOS);
}

/**
 * `err` as PERMISSION_DENIED when a permission failure caused it, NO_SPACE when a full disk did; else
 * `err` itself (as is one typed so already).
 */
export function asPermissionError(err: unknown, dir: string, doing: string): unknown {
  if (err instanceof GavelError && (err.code === "NO_SPACE" || err.code === "PERMISSION_DENIED")) return err;
  const full = errnoCause(err, NO_SPACE_ERRNOS);
  if (full !== undefined) {
    return new GavelError(
      `no space left ${doing} bank ${dir} (${full.code} on ${full.path ?? dir}): free some space and try again; what the bank committed before stands`,
      "NO_SPACE",
      { cause: err },
    );
  }
  const cause = permissionCause(err);
  if (cause === undefined) return err;
  const where = cause.path ?? dir;
  return new GavelError(
    `permission denied ${doing} bank ${dir} (${cause.code} on ${where}); it belongs to another user or its folder is read-only: ` +
      `run as the bank's owner, or point --bank (GAVEL_BANK) at a bank of your own`,
    "PERMISSION_DENIED",
    { cause: err },
  );
}

/** Runs `f`, turning a permission failure into {@link asPermissionError}'s typed error. */
export async function withPermissionErrors<T>(dir: string, doing: string, f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (err) {
    throw asPermissionError(err, dir, doing);
  }
}

/**
 * A commit whose manifest was renamed into place but whose folder could not be synced (`err`, the
 * {@link DirSyncError}): it has landed, and may not survive a power cut. Typed by the fsync's errno
 * (a read-only remount PERMISSION_DENIED, a full disk NO_SPACE, …); an I/O error, or any errno the
 * table does not name, is CORRUPT_FILE: the disk failed under the bank.
 */
export function unsyncedCommit(dir: string, generation: number, err: DirSyncError): GavelError {
  const [code, words] = unsyncedReason(err);
  return new GavelError(
    `bank ${clip(dir)}: generation ${generation} is committed (its manifest is in place and every reader sees it), ` +
      `but the bank's folder could not be synced (${words}), so it may not survive a power cut; ` +
      `check the disk, then run \`gavel check --bank ${clip(dir)}\``,
    code,
    { cause: err },
  );
}
