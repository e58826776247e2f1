/**
 * Paths compared as the platform's file system compares them: on Windows and macOS (whose usual file
 * systems ignore case) `C:\Proj` and `c:\proj` are one folder; elsewhere case counts. Each function
 * takes the platform (default: this one's), so a caller on one platform can be tested for another.
 *
 * @module
 */
import path from "node:path";

/** The path module of `platform`: path.win32 on Windows, path.posix elsewhere. */
export function pathsOf(platform: NodeJS.Platform = process.platform): path.PlatformPath {
  return platform === "win32" ? path.win32 : path.posix;
}

/** `p` resolved, lower-cased where the platform's file systems ignore case: the form compared. */
function key(p: string, platform: NodeJS.Platform): string {
  const r = pathsOf(platform).resolve(p);
  return platform === "win32" || platform === "darwin" ? r.toLowerCase() : r;
}

/** Whether `a` and `b` name the same path (each resolved; case folded on Windows and macOS). */
export function samePath(a: string, b: string, platform: NodeJS.Platform = process.platform): boolean {
  return key(a, platform) === key(b, platform);
}

/**
 * `p` relative to `folder` when `p` is inside it (not `folder` itself), with the platform's separator
 * and `p`'s own case (case is folded only to compare); null when it is not (outside, on another
 * drive, or a sibling that merely shares a prefix of its name).
 */
export function pathInside(folder: string, p: string, platform: NodeJS.Platform = process.platform): string | null {
  const paths = pathsOf(platform);
  const rel = paths.relative(key(folder, platform), key(p, platform));
  if (rel === "" || rel === ".." || rel.startsWith(".." + paths.sep) || paths.isAbsolute(rel)) return null;
  // as many of `p`'s last names as `rel` has (folding case changes no separator)
  return paths.resolve(p).split(paths.sep).slice(-rel.split(paths.sep).length).join(paths.sep);
}

/** Whether `p` is inside `folder` (not `folder` itself), as {@link pathInside} says. */
export function isInside(folder: string, p: string, platform: NodeJS.Platform = process.platform): boolean {
  return pathInside(folder, p, platform) !== null;
}

/** A path that starts with `~` and a separator (`~/`, or `~\` on Windows), or is `~`, with `home` for the `~`; others as they are. */
export function expandHome(p: string, home: string, platform: NodeJS.Platform = process.platform): string {
  if (p === "~") return home;
  const paths = pathsOf(platform);
  if (p.startsWith("~/") || (platform === "win32" && p.startsWith("~\\"))) return paths.join(home, p.slice(2));
  return p;
}
