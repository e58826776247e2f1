/**
 * Removing a file judged stale (an endpoint record whose process is gone) without removing
 * what another process put in its place meanwhile. Between the read that judged it and a plain
 * unlink, another process may break the same stale file and link its own in; the unlink would then
 * remove that live file. Instead the file is renamed aside (atomic: of two processes breaking it,
 * only one moves it), what moved is read again, and when it is no longer the stale content it is
 * linked back. Uses node:fs's callback form, so that a client that loads it does not load
 * node:fs/promises.
 *
 * The put-back can fail when a third process links its own file into the gap, so this is safe only
 * where one process at a time can write the file (the serve endpoint record: its server holds the
 * bank's lock). A file any process may take, such as the bank lock or `gavel mcp --port`'s record, is
 * removed under a second lock instead (bank/lock.ts `breakStale`).
 *
 * @module
 */
import { link, readFile, rename, unlink } from "node:fs";

/** A file's text, or null when it cannot be read. */
export function readTextOrNull(path: string): Promise<string | null> {
  return new Promise((resolve) => readFile(path, "utf8", (err, t) => resolve(err ? null : t)));
}

/** What {@link removeIfUnchanged} did. */
export type StaleRemoval =
  /** The stale file was removed. */
  | "removed"
  /** No file was there to move (another process removed it first). */
  | "missing"
  /** What was there was no longer the stale content: it was put back (or, when its name was taken again meanwhile, dropped). */
  | "changed";

/**
 * Removes `file` only if it still reads as `stale` (the text its caller read and judged; null for
 * content that `read` cannot give, such as a damaged lock), read by `read` (default: as UTF-8 text).
 *
 * @throws the rename's error, other than ENOENT (the caller types it)
 */
export async function removeIfUnchanged(file: string, stale: string | null, read: (path: string) => Promise<string | null> = readTextOrNull): Promise<StaleRemoval> {
  const aside = `${file}.${process.pid}-${Math.random().toString(36).slice(2, 10)}.stale`;
  try {
    await new Promise<void>((resolve, reject) => rename(file, aside, (err) => (err ? reject(err) : resolve())));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return "missing";
    throw err;
  }
  const moved = await read(aside);
  const done = (call: (cb: (err: Error | null) => void) => void) => new Promise<void>((resolve) => call(() => resolve()));
  if (moved !== stale) await done((cb) => link(aside, file, cb));
  await done((cb) => unlink(aside, cb));
  return moved === stale ? "removed" : "changed";
}
