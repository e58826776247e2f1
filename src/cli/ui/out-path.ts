/**
 * An output path of a `gavel` command, checked before any work: a bad `--out` fails at once, in one
 * line, not after minutes of loading and scanning.
 */
import { stat } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { GavelError, invalidArgument, clip } from "../../errors.js";

/** Options of {@link checkOutPath}. */
export interface OutPathOptions {
  /** The flag that gave the path (default "--out"). */
  flag?: string;
  /** The writer makes the path's folder when it is missing: only a folder in the path's own place is refused. */
  makesFolder?: boolean;
}

/**
 * Refuses an output path that is a folder (INVALID_ARGUMENT), or whose folder does not exist
 * (FILE_NOT_FOUND) or is not a folder (INVALID_ARGUMENT); `what` names the file ("the gate file").
 */
export async function checkOutPath(out: string, what: string, options: OutPathOptions = {}): Promise<void> {
  const flag = options.flag ?? "--out";
  if ((await stat(out).catch(() => null))?.isDirectory()) throw invalidArgument(`${flag} ${clip(out)} is a folder: give ${what} to write`);
  if (options.makesFolder) return;
  const folder = dirname(resolve(out));
  const st = await stat(folder).catch(() => null);
  if (!st) throw new GavelError(`${flag} ${clip(out)}: its folder ${clip(folder)} does not exist`, "FILE_NOT_FOUND");
  if (!st.isDirectory()) throw invalidArgument(`${flag} ${clip(out)}: ${clip(folder)} is not a folder`);
}
