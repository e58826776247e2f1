/**
 * What the skill watcher (watch.ts) reads of the file system to choose its folders: which folder a
 * path is (device and inode, to see one replaced), the nearest folder that exists, and the folders in a
 * root. Each read has a form for the thread and one off it: a sync's end reads every watched folder's
 * identity and every root's folders ahead ({@link readAhead}), so that the rearm that follows (one
 * `stat` per watched folder, up to the cap, and one listing per root) does not hold the event loop.
 *
 * @module
 */
import { readdirSync, statSync, type Dirent, type Stats } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { SKIP_DIRS } from "../skills/load.js";
import { inOrder } from "../util/in-order.js";

const identityOf = (st: Stats): string | null => (st.isDirectory() ? `${st.dev}:${st.ino}` : null);

/** Device and inode of a folder; null when it is not one now. */
export function folderIdentity(dir: string): string | null {
  try {
    return identityOf(statSync(dir));
  } catch {
    return null;
  }
}

/** {@link folderIdentity}, read off the thread. */
export async function folderIdentityAsync(dir: string): Promise<string | null> {
  try {
    return identityOf(await stat(dir));
  } catch {
    return null;
  }
}

/** The folder itself when it exists, else its nearest folder that does (null when none does). */
export function nearestFolder(dir: string): string | null {
  for (let p = dir; ; p = dirname(p)) {
    if (folderIdentity(p) !== null) return p;
    if (dirname(p) === p) return null;
  }
}

/** An entry of a root that may be a folder to watch: a folder, or a link (a folder only when it leads to one). */
const mayWatch = (e: Dirent): boolean => !SKIP_DIRS.has(e.name) && (e.isDirectory() || e.isSymbolicLink());

/**
 * The folders in `root` that may be (or become) skill folders: all but `.git` and `node_modules`; a
 * symbolic link only when it leads to a folder (one to a file, as dotfile managers make, is no folder).
 */
export function foldersIn(root: string): string[] {
  try {
    return readdirSync(root, { withFileTypes: true })
      .filter((e) => mayWatch(e) && (e.isDirectory() || folderIdentity(join(root, e.name)) !== null))
      .map((e) => join(root, e.name));
  } catch {
    return []; // gone, or unreadable
  }
}

/** {@link foldersIn}, read off the thread. */
export async function foldersInAsync(root: string): Promise<string[]> {
  let entries: Dirent[];
  try {
    entries = (await readdir(root, { withFileTypes: true })).filter(mayWatch);
  } catch {
    return []; // gone, or unreadable
  }
  const links = await Promise.all(entries.map((e) => (e.isDirectory() ? true : folderIdentityAsync(join(root, e.name)).then((id) => id !== null))));
  return entries.filter((_, i) => links[i]).map((e) => join(root, e.name));
}

/** What a rearm reads, read ahead: identities of folders, and the folders in roots. */
export interface ReadAhead {
  identity: Map<string, string | null>;
  folders: Map<string, string[]>;
}

/** Reads at a time off the thread (libuv's pool runs four; more queued gain nothing). */
const READ_AHEAD_AT_ONCE = 32;

/**
 * The folders in each of `roots` and the identity of each of `dirs`, read off the thread,
 * {@link READ_AHEAD_AT_ONCE} at a time (both iterables are taken as they are now).
 */
export async function readAhead(dirs: Iterable<string>, roots: Iterable<string>): Promise<ReadAhead> {
  const out: ReadAhead = { identity: new Map(), folders: new Map() };
  const window = { width: READ_AHEAD_AT_ONCE };
  // neither read rejects (a path gone or unreadable reads as no folder); one missing here is read on the thread
  await inOrder([...roots], window, foldersInAsync, (root, got) => void (got.ok && out.folders.set(root, got.value)));
  await inOrder([...dirs], window, folderIdentityAsync, (dir, got) => void (got.ok && out.identity.set(dir, got.value)));
  return out;
}
