/**
 * The keys file of a bank: float32 rows of `dim` values, little-endian, appended in install order.
 * Reads are done in runs of adjacent rows and in chunks node and V8 accept; compaction copies the
 * live rows into a fresh file.
 */
import { createHash } from "node:crypto";
import { open, rm, type FileHandle } from "node:fs/promises";
import { GavelError, clip, clipMessage } from "../errors.js";
import { writeAll } from "../util/durable-file.js";
import { freezeEntry } from "./entries.js";
import { BANK_FILE_MODE } from "./modes.js";
import type { BankEntry, BankManifest } from "./types.js";

/** Result of {@link BankStore.readAllKeys}: every skill's keys, ready for the glance kernel. */
export interface BankKeys {
  /** All live keys, K × dim row-major; skill i holds rows offsets[i] … offsets[i+1] − 1. */
  keys: Float32Array;
  /** N + 1 row offsets into `keys` (0 first, K last). */
  offsets: Int32Array;
  /** The N entries, in the order of `offsets`. */
  entries: BankEntry[];
  /**
   * Indices of entries whose keys are damaged (rows past the file's end, or not matching their
   * checksum), when the read was asked to tolerate them; their rows here are not their keys.
   */
  damaged?: ReadonlySet<number>;
}

/** A run of entries whose rows are adjacent in the keys file: one read. */
export interface KeyRun {
  /** First row. */
  offset: number;
  rows: number;
  entries: BankEntry[];
}

/**
 * Most bytes one read asks for: node rejects a length of 2 GiB or more (ERR_OUT_OF_RANGE), and a
 * 30K-skill bank at dim 256 holds ~6 GB of keys, read as one run.
 */
export const READ_CHUNK = 1 << 30;

/**
 * Byte views of `length` bytes of `buffer` from `at`, each at most `chunk` long, with their start
 * relative to `at`: node and V8 refuse one Uint8Array of 4 GiB or more (and reads of 2 GiB), and a
 * whole 30K-skill bank is ~6 GB.
 */
export function* byteViews(buffer: ArrayBufferLike, at: number, length: number, chunk = READ_CHUNK): Generator<{ view: Uint8Array; start: number }> {
  for (let start = 0; start < length; start += chunk) yield { view: new Uint8Array(buffer, at + start, Math.min(chunk, length - start)), start };
}

/** Fills `into` from `position` of the file, in reads of at most `chunk` bytes. */
export async function readAll(fh: FileHandle, into: Uint8Array, position: number, path: string, chunk = READ_CHUNK): Promise<void> {
  let done = 0;
  while (done < into.byteLength) {
    let bytesRead: number;
    try {
      ({ bytesRead } = await fh.read(into, done, Math.min(into.byteLength - done, chunk), position + done));
    } catch (err) {
      throw new GavelError(`${clip(path)} cannot be read at byte ${position + done} (${clipMessage(err)})`, "CORRUPT_FILE", { cause: err });
    }
    if (bytesRead === 0) throw new GavelError(`${clip(path)} ended at byte ${position + done}, inside rows the manifest references`, "CORRUPT_FILE");
    done += bytesRead;
  }
}

/**
 * The checksum of one skill's key block as the manifest records it (`keysSha256`): sha256 hex of its
 * rows' bytes (float32, little-endian), computed when the skill is staged and checked on every read.
 */
export function keysChecksum(keys: Float32Array): string {
  return createHash("sha256").update(new Uint8Array(keys.buffer, keys.byteOffset, keys.byteLength)).digest("hex");
}

/**
 * Checks each entry's keys (rows offsets[i] … offsets[i+1] − 1 of `keys`) against its recorded
 * checksum; entries of banks written before checksums were recorded have none and are not checked.
 *
 * @throws GavelError CORRUPT_FILE naming the keys file and the first skill whose block differs
 */
export function verifyEntryKeys(entries: readonly BankEntry[], keys: Float32Array, offsets: Int32Array, dim: number, path: string): void {
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i];
    if (e.keysSha256 === undefined) continue;
    if (keysChecksum(keys.subarray(offsets[i] * dim, offsets[i + 1] * dim)) !== e.keysSha256) throw keysCorrupt(e, path);
  }
}

/** The error for a key block that does not match its checksum. */
export function keysCorrupt(e: BankEntry, path: string): GavelError {
  return new GavelError(
    `${path} is damaged: the keys of skill ${JSON.stringify(e.id)} (rows ${e.offset}–${e.offset + e.nKeys - 1}) do not match their checksum in the manifest; ` +
      "run `gavel check` to list every damaged skill, then reinstall them (or restore the bank from a backup)",
    "CORRUPT_FILE",
  );
}

/** Groups entries (in row order) into runs of adjacent rows, so each run is one read. */
export function contiguousRuns(entries: readonly BankEntry[]): KeyRun[] {
  const runs: KeyRun[] = [];
  for (const e of entries) {
    const last = runs[runs.length - 1];
    if (last && last.offset + last.rows === e.offset) {
      last.rows += e.nKeys;
      last.entries.push(e);
    } else {
      runs.push({ offset: e.offset, rows: e.nKeys, entries: [e] });
    }
  }
  return runs;
}

/**
 * `entries` (those `only` keeps, in order) in batches of whole skills of at most `maxBytes` of keys
 * each (`rowBytes` a row); a larger skill comes alone.
 */
export function* keyBatches(entries: Iterable<BankEntry>, rowBytes: number, maxBytes: number, only?: (e: BankEntry) => boolean): Generator<BankEntry[]> {
  let batch: BankEntry[] = [];
  let bytes = 0;
  for (const e of entries) {
    if (only && !only(e)) continue;
    if (batch.length > 0 && bytes + e.nKeys * rowBytes > maxBytes) {
      yield batch;
      batch = [];
      bytes = 0;
    }
    batch.push(e);
    bytes += e.nKeys * rowBytes;
  }
  if (batch.length > 0) yield batch;
}

/** Appends (or overwrites from `row`) key rows: `keys` is rows × dim float32. */
export async function writeRows(fh: FileHandle, keys: Float32Array, row: number, dim: number): Promise<void> {
  await writeAll(fh, new Uint8Array(keys.buffer, keys.byteOffset, keys.byteLength), row * dim * 4);
}

/**
 * The keys of `entries` (in this order), read run by run from the keys file at `path`. By default a
 * damaged block (rows past the file's end, or a checksum that does not match) fails the read with
 * CORRUPT_FILE; with `tolerate`, the read goes on and lists such entries in `damaged`.
 */
export async function readEntryKeys(fh: FileHandle, entries: BankEntry[], dim: number, path: string, tolerate = false): Promise<BankKeys> {
  const offsets = new Int32Array(entries.length + 1);
  for (let i = 0; i < entries.length; i++) offsets[i + 1] = offsets[i] + entries[i].nKeys;
  const keys = new Float32Array(offsets[entries.length] * dim);
  // Rows the file holds in full: with `tolerate`, a run is read only up to them.
  const rowsOnDisk = tolerate ? Math.floor((await fh.stat()).size / (dim * 4)) : Infinity;
  let row = 0;
  for (const run of contiguousRuns(entries)) {
    const readable = Math.max(0, Math.min(run.rows, rowsOnDisk - run.offset));
    // Views of at most READ_CHUNK bytes: one Uint8Array over a bank of 4 GiB or more is refused.
    for (const part of byteViews(keys.buffer, row * dim * 4, readable * dim * 4)) {
      await readAll(fh, part.view, run.offset * dim * 4 + part.start, path);
    }
    row += run.rows;
  }
  if (!tolerate) {
    verifyEntryKeys(entries, keys, offsets, dim, path);
    return { keys, offsets, entries };
  }
  const damaged = new Set<number>();
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i];
    const short = e.offset + e.nKeys > rowsOnDisk;
    if (short || (e.keysSha256 !== undefined && keysChecksum(keys.subarray(offsets[i] * dim, offsets[i + 1] * dim)) !== e.keysSha256)) damaged.add(i);
  }
  return { keys, offsets, entries, damaged };
}

/**
 * Whether the keys file `fh` (of `size` bytes) is whole for manifest `m`: it holds every committed row,
 * and each entry's block matches its checksum where one is recorded and holds only finite values (what
 * `gavel check` reports no keys problem for). Read in batches of at most `batchBytes`; a file that
 * cannot be read is not whole.
 */
export async function keysFileWhole(fh: FileHandle, size: number, m: BankManifest, path: string, batchBytes: number): Promise<boolean> {
  const rowBytes = m.header.dim * 4;
  if (size < m.rows * rowBytes) return false;
  try {
    for (const batch of keyBatches(m.entries, rowBytes, batchBytes)) {
      const read = await readEntryKeys(fh, batch, m.header.dim, path, true);
      if (read.damaged!.size > 0 || !read.keys.every((v) => Number.isFinite(v))) return false;
    }
  } catch (err) {
    if (err instanceof GavelError) return false;
    throw err;
  }
  return true;
}

/**
 * A new keys file at `toPath` (a compaction's) holding the rows of the `live` entries of `from`,
 * fsynced and left open; removed again when the copy fails.
 *
 * @returns the new file and the entries with their new offsets
 */
export async function writeCompacted(from: FileHandle, fromPath: string, toPath: string, live: readonly BankEntry[], dim: number): Promise<{ fh: FileHandle; moved: BankEntry[] }> {
  const fh = await open(toPath, "w+", BANK_FILE_MODE);
  try {
    return { fh, moved: await copyLiveRows(from, fromPath, fh, live, dim) };
  } catch (err) {
    await fh.close().catch(() => undefined);
    await rm(toPath, { force: true });
    throw err;
  }
}

/**
 * Copies the rows of the `live` entries (in row order) from one keys file to the start of another,
 * packed, in runs of adjacent entries and a bounded buffer at a time, then fsyncs the copy.
 *
 * @returns the entries with their new offsets
 */
async function copyLiveRows(from: FileHandle, fromPath: string, to: FileHandle, live: readonly BankEntry[], dim: number): Promise<BankEntry[]> {
  const moved: BankEntry[] = [];
  let row = 0;
  for (const run of contiguousRuns(live)) {
    const runBytes = run.rows * dim * 4;
    const chunk = Math.min(runBytes, 1 << 24);
    const buf = new Uint8Array(chunk);
    for (let done = 0; done < runBytes; done += chunk) {
      const n = Math.min(chunk, runBytes - done);
      await readAll(from, buf.subarray(0, n), run.offset * dim * 4 + done, fromPath);
      await writeAll(to, buf.subarray(0, n), row * dim * 4 + done);
    }
    for (const e of run.entries) moved.push(freezeEntry({ ...e, offset: row + (e.offset - run.offset) }));
    row += run.rows;
  }
  await to.sync();
  return moved;
}

/** A route over a library whose skills' keys are damaged: CORRUPT_FILE naming them. */
export function damagedKeys(dir: string, ids: string[]): GavelError {
  const named = ids.slice(0, 5).map((id) => JSON.stringify(clip(id))).join(", ") + (ids.length > 5 ? ` and ${ids.length - 5} more` : "");
  return new GavelError(
    `the bank ${clip(dir)} holds damaged keys (they do not match their checksum, or the keys file ends before them) for ${named}; ` +
      "reinstall or uninstall those skills (`gavel check` lists every damaged skill), or restore the bank from a backup",
    "CORRUPT_FILE",
  );
}
