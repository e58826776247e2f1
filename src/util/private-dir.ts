/**
 * Private per-user folders for sockets: a server's socket that cannot live in its bank (the path is
 * too long for a Unix socket) and has no `$XDG_RUNTIME_DIR` goes in `<tmpdir>/gavel-<uid>/`, never
 * under a predictable name in the shared temp folder itself, where another local user could squat it.
 * The folder is created 0700 and used only while it is a real directory (not a symlink) owned by this
 * user that no one else may enter; anything else is refused with a typed `PERMISSION_DENIED` that
 * says how to get past it. (`$XDG_RUNTIME_DIR` is the user's own 0700 folder by its specification.)
 */
import { lstatSync, mkdirSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { GavelError, clip } from "../errors.js";

/** This user's id, or undefined where there are none (Windows). */
function myUid(): number | undefined {
  return typeof process.getuid === "function" ? process.getuid() : undefined;
}

const refuse = (dir: string, why: string) =>
  new GavelError(
    `${clip(dir)} ${why}, so it cannot hold this user's socket safely; remove it (if it is yours) or set XDG_RUNTIME_DIR, or pass --socket PATH`,
    "PERMISSION_DENIED",
  );

/**
 * Creates `dir` (mode 0700) unless it exists, then checks it is private: a directory, not a symlink,
 * owned by this user, with no permission bits for the group or others.
 *
 * @throws GavelError `PERMISSION_DENIED` naming the folder and what is wrong with it
 */
export function ensurePrivateDir(dir: string): string {
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "EEXIST") throw refuse(dir, `cannot be created (${code ?? (err as Error).message})`);
  }
  const st = lstatSync(dir);
  if (st.isSymbolicLink()) throw refuse(dir, "is a symbolic link");
  if (!st.isDirectory()) throw refuse(dir, "is not a directory");
  const uid = myUid();
  if (uid !== undefined && st.uid !== uid) throw refuse(dir, `belongs to another user (uid ${st.uid})`);
  if (uid !== undefined && (st.mode & 0o077) !== 0) throw refuse(dir, `has mode ${(st.mode & 0o777).toString(8).padStart(4, "0")}, open to other users (it must be 0700)`);
  return dir;
}

/** This user's private folder in the temp folder: `<tmpdir>/gavel-<uid>`, created and checked by {@link ensurePrivateDir}. */
export function privateTempDir(base: string = tmpdir()): string {
  const uid = myUid();
  return ensurePrivateDir(join(base, `gavel-${uid ?? userInfo().username.replace(/[^\w.-]/g, "_")}`));
}

/**
 * Where a socket named `name` goes when it cannot live in its bank: `$XDG_RUNTIME_DIR/gavel-<name>`
 * when `runtimeDir` is set, else `<tmpdir>/gavel-<uid>/<name>` ({@link privateTempDir}).
 */
export function fallbackSocketPath(name: string, runtimeDir: string | undefined): string {
  return runtimeDir ? join(runtimeDir, `gavel-${name}`) : join(privateTempDir(), name);
}
