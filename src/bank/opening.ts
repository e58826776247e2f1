/**
 * What opening a bank does on disk, for its two kinds of opener: a writer (under the bank's lock:
 * it removes the leftovers of interrupted commits and the keys' uncommitted tail) and a reader of the
 * last committed snapshot (no lock; it changes nothing and starts again when a writer renamed a file
 * away meanwhile). {@link BankStore} builds itself from what these return.
 *
 * @module
 */
import { mkdir, open, readdir, rm, rmdir, stat, type FileHandle } from "node:fs/promises";
import { endianness } from "node:os";
import { join } from "node:path";
import { GavelError, invalidArgument, clip } from "../errors.js";
import { BANK_DIR_MODE, BANK_FILE_MODE } from "./modes.js";
import { errnoError } from "../util/errno.js";
import { openRegularFile, RegularFileError } from "../gguf/regular-file.js";
import { keysFileWhole } from "./keys-file.js";
import { DirLock } from "./lock.js";
import { checkHeader, emptyManifest, KEYS_FILE_RE, MANIFEST, MANIFEST_TMP_RE, readManifest, refuseBankWithoutManifest, verifyHeader } from "./manifest.js";
import type { BankEntry, BankHeader, BankManifest } from "./types.js";

/** The lock file's name in a bank directory. */
export const LOCK = "lock";

/** Attempts of a snapshot read when a writer renames files away while it reads. */
export const SNAPSHOT_ATTEMPTS = 8;

/**
 * A manifest file's identity (device, inode, size, times): a commit renames a new file into place,
 * so every commit changes it; undefined when there is no manifest.
 */
export async function manifestIdentity(dir: string): Promise<string | undefined> {
  try {
    const st = await stat(join(dir, MANIFEST), { bigint: true });
    return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
  } catch {
    return undefined;
  }
}

/**
 * A typed error for a bank folder the file system refuses (util/errno.ts, errnoError): a path through
 * a file, too long or a link loop "no bank at …" (FILE_NOT_FOUND); not permitted (PERMISSION_DENIED),
 * a full disk (NO_SPACE) or anything else the table names "cannot open or create a bank at …"; any
 * other error as it is.
 */
function bankDirError(dir: string, err: unknown): unknown {
  return errnoError(err, (code) => (code === "FILE_NOT_FOUND" ? `no bank at ${clip(dir)}` : `cannot open or create a bank at ${clip(dir)}`));
}

/** A bank folder's name: a non-empty string without NUL (which no file system path holds). */
function checkDirName(dir: unknown, what: string): asserts dir is string {
  if (typeof dir !== "string" || dir.length === 0) throw invalidArgument(`${what}dir must be a non-empty string`);
  if (dir.includes("\0")) throw invalidArgument(`${what}dir holds a NUL character`);
}

/** Checks the arguments and the directory; creates it with `create`. */
async function checkBankDir(dir: string, expected: BankHeader, what: string, create: boolean): Promise<void> {
  checkDirName(dir, `${what}: `);
  checkHeader(expected, `${what}: expected`);
  // Rows are stored as the host's float32 bytes; the format says little-endian.
  if (endianness() !== "LE") throw invalidArgument("banks need a little-endian host");
  try {
    const st = await stat(dir);
    if (!st.isDirectory()) throw invalidArgument(`${clip(dir)} exists and is not a directory`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw bankDirError(dir, err);
    if (!create) throw new GavelError(`no bank at ${clip(dir)} (the directory does not exist); run \`gavel install\` to build one`, "FILE_NOT_FOUND");
    await mkdir(dir, { recursive: true, mode: BANK_DIR_MODE }).catch((e: unknown) => {
      throw bankDirError(dir, e);
    });
  }
}

const noBank = (dir: string) => new GavelError(`no bank at ${clip(dir)} (no ${MANIFEST}); run \`gavel install\` to build one`, "FILE_NOT_FOUND");
const missingKeys = (path: string, dir: string, m: BankManifest) =>
  new GavelError(`${clip(path)} is missing but ${clip(dir)}/${MANIFEST} references ${m.rows} key rows`, "CORRUPT_FILE");
const shortKeys = (path: string, size: number, dir: string, m: BankManifest) =>
  new GavelError(
    `${path} holds ${size} bytes but ${dir}/${MANIFEST} references ${m.rows * m.header.dim * 4} (${m.rows} rows); ` +
      "reinstall or uninstall the skills whose keys lay past its end (`gavel check` names them), or restore the bank from a backup",
    "CORRUPT_FILE",
  );

/** What a writer's open found: the lock it holds, the keys file open for writing, the manifest. */
export interface WriterFiles {
  lock: DirLock;
  fh: FileHandle;
  manifest: BankManifest;
  /** No manifest was there: the bank is new and its empty manifest must be committed now. */
  fresh: boolean;
}

/** A writer's open (see `BankStore.open`): takes the lock, then tidies what interrupted commits left. */
export async function openForWriting(dir: string, expected: BankHeader, create: boolean): Promise<WriterFiles> {
  await checkBankDir(dir, expected, "BankStore.open", create);
  const lock = await DirLock.acquire(join(dir, LOCK), `bank ${dir}`);
  let fh: FileHandle | null = null;
  try {
    let manifest = await readManifest(dir);
    const fresh = manifest === undefined;
    if (manifest === undefined) {
      // Never re-initialise a bank whose manifest is gone: that would truncate its keys file.
      await refuseBankWithoutManifest(dir);
      if (!create) throw noBank(dir);
      manifest = emptyManifest(expected);
    } else {
      verifyHeader(dir, manifest, expected);
    }
    // Leftovers of interrupted commits: torn temp manifests. We hold the lock, so no other writer is
    // writing them (readers only read).
    await removeLeftovers(dir, (name) => MANIFEST_TMP_RE.test(name));
    const keysPath = join(dir, manifest.keysFile);
    const committedBytes = manifest.rows * manifest.header.dim * 4;
    let size: number;
    try {
      // A keys file that is a FIFO, a device or a directory is refused, never opened blocking.
      ({ fh, size } = await openRegularFile(keysPath, { writable: true }));
    } catch (err) {
      if (!(err instanceof RegularFileError)) throw err;
      if (err.reason !== "missing") throw new GavelError(err.message, "CORRUPT_FILE", { cause: err });
      if (manifest.rows > 0) throw missingKeys(keysPath, dir, manifest);
      fh = await open(keysPath, "w+", BANK_FILE_MODE);
      size = 0;
    }
    // Keys files the manifest does not name (an interrupted compaction's), once the one it names is
    // whole: while that one is missing or damaged, an older file may be all that is left of the keys.
    await removeOlderKeys(dir, manifest, fh, size);
    // A short file (damage: committed rows are never truncated) is opened all the same, so that the
    // skills whose keys lay past its end can be reinstalled or uninstalled: the library loads them as
    // damaged and routes refuse until then. New rows are written past the manifest's last row.
    // Drop the uncommitted tail now, so the file never holds bytes the manifest disowns for long.
    // Committed rows (all a reader's snapshot can name) are never touched.
    if (size > committedBytes) await fh.truncate(committedBytes);
    return { lock, fh, manifest, fresh };
  } catch (err) {
    await (fh as FileHandle | null)?.close().catch(() => undefined);
    await lock.release();
    throw err;
  }
}

/** Keys files read at a time when the named one is verified before older ones are removed. */
const VERIFY_BATCH_BYTES = 64 * 1024 * 1024;

/**
 * Removes the keys files the manifest does not name, when there are any and the one it names (`fh`,
 * of `size` bytes) is whole: every committed row there, every block matching its checksum.
 */
async function removeOlderKeys(dir: string, m: BankManifest, fh: FileHandle, size: number): Promise<void> {
  const older = (await readdir(dir)).filter((name) => KEYS_FILE_RE.test(name) && name !== m.keysFile);
  if (older.length === 0 || !(await keysFileWhole(fh, size, m, join(dir, m.keysFile), VERIFY_BATCH_BYTES))) return;
  for (const name of older) await rm(join(dir, name), { force: true });
}

/** Removes the files of `dir` that `leftover` names. */
async function removeLeftovers(dir: string, leftover: (name: string) => boolean): Promise<void> {
  for (const name of await readdir(dir)) if (leftover(name)) await rm(join(dir, name), { force: true });
}

/** What a snapshot read found: the committed manifest, its keys file open for reading, its identity. */
export interface SnapshotFiles {
  manifest: BankManifest;
  /** Null only for a bank without rows and without a keys file. */
  fh: FileHandle | null;
  /** The manifest file's identity when it was read ({@link manifestIdentity}). */
  id: string | undefined;
}

/**
 * A reader's open (see `BankStore.openSnapshot`): no lock, nothing written. The manifest is read from
 * one open file, so it is whole (a commit replaces it by rename); its keys file is opened next, and a
 * keys file renamed away meanwhile (a compaction) means a newer manifest: read again.
 */
export async function readSnapshot(dir: string, expected: BankHeader): Promise<SnapshotFiles> {
  await checkBankDir(dir, expected, "BankStore.openSnapshot", false);
  for (let attempt = 1; ; attempt++) {
    const before = await manifestIdentity(dir);
    const manifest = await readManifest(dir);
    if (manifest === undefined) {
      await refuseBankWithoutManifest(dir);
      throw noBank(dir);
    }
    const id = await manifestIdentity(dir);
    // Replaced while it was read: what was read is whole, but read again so the identity kept is its own.
    if (id !== before && attempt < SNAPSHOT_ATTEMPTS) continue;
    verifyHeader(dir, manifest, expected);
    const keysPath = join(dir, manifest.keysFile);
    let fh: FileHandle | null = null;
    let size = 0;
    try {
      ({ fh, size } = await openRegularFile(keysPath));
    } catch (err) {
      if (!(err instanceof RegularFileError)) throw err;
      if (err.reason !== "missing") throw new GavelError(err.message, "CORRUPT_FILE", { cause: err });
      // A compaction committed a newer keys file and removed this one after the manifest was read.
      if (manifest.rows > 0 && (await manifestIdentity(dir)) !== id && attempt < SNAPSHOT_ATTEMPTS) continue;
      if (manifest.rows > 0) throw missingKeys(keysPath, dir, manifest);
    }
    if (size < manifest.rows * manifest.header.dim * 4) {
      await fh?.close().catch(() => undefined);
      // Committed rows are never truncated: a short file is damage, not a race.
      throw shortKeys(keysPath, size, dir, manifest);
    }
    return { manifest, fh, id };
  }
}

/**
 * The skills of the bank's last committed manifest, read without its lock and without a model or
 * projections (`gavel list`). FILE_NOT_FOUND when `dir` holds no bank; CORRUPT_FILE for a damaged
 * manifest, or bank files without one (nothing is changed either way).
 */
export async function committedEntries(dir: string): Promise<readonly BankEntry[]> {
  return (await committedManifest(dir)).entries;
}

/**
 * The bank's last committed manifest (its header: the model and projections it was built with; its
 * skills), read as {@link committedEntries} reads it (`gavel info <bank>`).
 */
export async function committedManifest(dir: string): Promise<BankManifest> {
  checkDirName(dir, "");
  const st = await stat(dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return undefined;
    throw bankDirError(dir, err);
  });
  if (st === undefined) throw new GavelError(`no bank at ${clip(dir)} (the directory does not exist); run \`gavel install\` to build one`, "FILE_NOT_FOUND");
  if (!st.isDirectory()) throw invalidArgument(`${clip(dir)} exists and is not a directory`);
  const manifest = await readManifest(dir);
  if (manifest === undefined) {
    await refuseBankWithoutManifest(dir);
    throw noBank(dir);
  }
  return manifest;
}

/**
 * Removes the bank at `dir` when it holds no skill (a first install that failed), under its lock: a
 * bank another process holds (a writer that created it a moment ago) is kept, as is one whose
 * manifest cannot be read or names a skill. True when the folder is gone (what it held with it: the
 * caller made the folder, so nothing in it predates this run).
 */
export async function removeBankIfEmpty(dir: string): Promise<boolean> {
  let lock: DirLock;
  try {
    lock = await DirLock.acquire(join(dir, LOCK), `bank ${dir}`);
  } catch {
    return false; // held by a live writer, or unreadable: not ours to remove
  }
  try {
    const manifest = await readManifest(dir).catch(() => null);
    if (manifest === null || (manifest !== undefined && manifest.entries.length > 0)) return false;
    // the lock last: while it stands, no other writer opens the bank
    for (const name of await readdir(dir)) if (name !== LOCK && !name.startsWith(`${LOCK}.`)) await rm(join(dir, name), { recursive: true, force: true });
  } finally {
    await lock.release();
  }
  return rmdir(dir).then(
    () => true,
    () => false,
  );
}
