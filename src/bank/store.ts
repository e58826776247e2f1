/**
 * The bank store: a directory holding the ε-cover keys of every installed skill (paper section 3.3),
 * bound to the model, projections, layer, ε and width that produced them.
 *
 * Layout of a bank directory:
 * - `manifest.json`: the {@link BankManifest}: header, the name of the keys file, the number of rows
 *   it commits, and one {@link BankEntry} per skill. Replaced atomically on every commit.
 * - `keys.bin` (after a compaction `keys.<generation>.bin`): float32 rows of `dim` values,
 *   little-endian, appended in install order. Rows past the manifest's `rows` are an uncommitted
 *   tail (a crash mid-install) and are ignored, then overwritten.
 * - `lock`: present while a process has the bank open.
 *
 * Crash safety rests on one ordering: key rows are written and fsynced before the manifest that
 * references them is renamed into place (and the directory fsynced). The manifest is therefore
 * always the last committed state, and every row it references is on disk. Compaction writes a
 * fresh keys file under a new name, so the old manifest stays valid with the old file until the new
 * manifest lands.
 */
import { randomBytes } from "node:crypto";
import { mkdir, open, readFile, readdir, rename, rm, stat, type FileHandle } from "node:fs/promises";
import { endianness } from "node:os";
import { join } from "node:path";
import { GavelError, invalidArgument } from "../errors.js";
import { describeMismatch, isModelFingerprint } from "../model/fingerprint.js";
import { fsyncDir } from "../util/durable-file.js";
import { DirLock } from "./lock.js";
import { BANK_FORMAT_VERSION, type BankEntry, type BankEntryInput, type BankHeader, type BankManifest, type BankStats } from "./types.js";

/** Options of {@link BankStore.open}. */
export interface BankOpenOptions {
  /** Create the bank (and its directory) when it does not exist. Default false. */
  create?: boolean;
}

/** Result of {@link BankStore.readAllKeys}: every skill's keys, ready for the glance kernel. */
export interface BankKeys {
  /** All live keys, K × dim row-major; skill i holds rows offsets[i] … offsets[i+1] − 1. */
  keys: Float32Array;
  /** N + 1 row offsets into `keys` (0 first, K last). */
  offsets: Int32Array;
  /** The N entries, in the order of `offsets`. */
  entries: BankEntry[];
}

const MANIFEST = "manifest.json";
const LOCK = "lock";
const KEYS_FILE_RE = /^keys(\.\d+)?\.bin$/;
const MANIFEST_TMP_RE = /^manifest\.json\.[0-9a-f]+\.tmp$/;

/**
 * An open bank directory. Writes are staged: {@link BankStore.put} appends a skill's keys to the keys
 * file and {@link BankStore.remove} drops an entry, but only {@link BankStore.commit} (or
 * {@link BankStore.compact}) makes them durable. Reads ({@link BankStore.entries},
 * {@link BankStore.readAllKeys}, …) see staged changes. Closing without committing discards them,
 * exactly as a crash would.
 *
 * One process at a time may have a bank open (a lock file in the directory enforces it). Calls on one
 * store run one at a time, in call order.
 *
 * @example
 * ```ts
 * await using bank = await BankStore.open(dir, bankHeaderFor(projections), { create: true });
 * await bank.put({ id, name, description, contentHash, source, disableModelInvocation: false,
 *   keyTokens, renderTokens }, keys);
 * await bank.commit();
 * const { keys, offsets, entries } = await bank.readAllKeys();
 * ```
 */
export class BankStore {
  /** The bank directory. */
  readonly dir: string;
  /** The header the bank was built with (equal to the one it was opened with). */
  readonly header: BankHeader;
  #lock: DirLock | null;
  #fh: FileHandle | null;
  #keysFile: string;
  /** Rows written to the keys file, committed or staged. */
  #rows: number;
  #generation: number;
  /** Live entries in row-offset order (a replaced id is deleted and re-added to keep that order). */
  #entries: Map<string, BankEntry>;
  #dirty = false;
  /** Set when close() starts: new calls are refused, calls already queued still run. */
  #closing = false;
  #queue: Promise<unknown> = Promise.resolve();

  /** Each entry's manifest JSON, made at its first commit (see #commit). */
  readonly #entryJson = new WeakMap<BankEntry, string>();

  private constructor(dir: string, lock: DirLock, fh: FileHandle, m: BankManifest) {
    this.dir = dir;
    this.header = m.header;
    this.#lock = lock;
    this.#fh = fh;
    this.#keysFile = m.keysFile;
    this.#rows = m.rows;
    this.#generation = m.generation;
    this.#entries = new Map(m.entries.map((e) => [e.id, e]));
  }

  /**
   * Open the bank in `dir`, verifying that it was built with `expected`; with `create`, make a new
   * empty bank when there is none.
   *
   * @throws GavelError `BANK_MISMATCH` when the bank was built with another model, projections,
   *   layer, ε or width, or by another format version (the message says what differs and how to
   *   rebuild); `CORRUPT_FILE` when the manifest is unreadable or inconsistent, or the keys file is
   *   shorter than the manifest says; `FILE_NOT_FOUND` when there is no bank and `create` is off;
   *   `INVALID_ARGUMENT` when another process (or this one) has the bank open, or `expected` is
   *   malformed
   */
  static async open(dir: string, expected: BankHeader, options: BankOpenOptions = {}): Promise<BankStore> {
    if (typeof dir !== "string" || dir.length === 0) throw invalidArgument("BankStore.open: dir must be a non-empty string");
    checkHeader(expected, "BankStore.open: expected");
    // Rows are stored as the host's float32 bytes; the format says little-endian.
    if (endianness() !== "LE") throw invalidArgument("banks need a little-endian host");
    const create = options.create ?? false;
    try {
      const st = await stat(dir);
      if (!st.isDirectory()) throw invalidArgument(`${dir} exists and is not a directory`);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      if (!create) throw new GavelError(`no bank at ${dir} (the directory does not exist); run \`gavel install\` to build one`, "FILE_NOT_FOUND");
      await mkdir(dir, { recursive: true });
    }

    const lock = await DirLock.acquire(join(dir, LOCK), `bank ${dir}`);
    let fh: FileHandle | null = null;
    try {
      let manifest = await readManifest(dir);
      const fresh = manifest === undefined;
      if (manifest === undefined) {
        if (!create) throw new GavelError(`no bank at ${dir} (no ${MANIFEST}); run \`gavel install\` to build one`, "FILE_NOT_FOUND");
        manifest = {
          format: "gavel-bank",
          formatVersion: BANK_FORMAT_VERSION,
          header: normalizeHeader(expected),
          keysFile: "keys.bin",
          rows: 0,
          generation: 0,
          entries: [],
        };
      } else {
        verifyHeader(dir, manifest, expected);
      }
      // Leftovers of interrupted commits and compactions: torn temp manifests and keys files the
      // manifest does not name. We hold the lock, so nobody else is writing them.
      for (const name of await readdir(dir)) {
        if (MANIFEST_TMP_RE.test(name) || (KEYS_FILE_RE.test(name) && name !== manifest.keysFile)) {
          await rm(join(dir, name), { force: true });
        }
      }
      const keysPath = join(dir, manifest.keysFile);
      const committedBytes = manifest.rows * manifest.header.dim * 4;
      try {
        fh = await open(keysPath, "r+");
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
        if (manifest.rows > 0) throw new GavelError(`${keysPath} is missing but ${dir}/${MANIFEST} references ${manifest.rows} key rows`, "CORRUPT_FILE");
        fh = await open(keysPath, "w+");
      }
      const size = (await fh.stat()).size;
      if (size < committedBytes) {
        throw new GavelError(`${keysPath} holds ${size} bytes but ${dir}/${MANIFEST} references ${committedBytes} (${manifest.rows} rows)`, "CORRUPT_FILE");
      }
      // Drop the uncommitted tail now, so the file never holds bytes the manifest disowns for long.
      if (size > committedBytes) await fh.truncate(committedBytes);
      const store = new BankStore(dir, lock, fh, manifest);
      if (fresh) {
        // A new bank is bound to its header from the start: write the empty manifest now.
        store.#dirty = true;
        await store.#commit();
      }
      return store;
    } catch (err) {
      await fh?.close().catch(() => undefined);
      await lock.release();
      throw err;
    }
  }

  /** Width of each key row. */
  get dim(): number {
    return this.header.dim;
  }

  /** Whether there are staged changes that {@link BankStore.commit} has not persisted yet. */
  get dirty(): boolean {
    return this.#dirty;
  }

  /** Number of the last commit (0 for a bank that was just created). */
  get generation(): number {
    return this.#generation;
  }

  /** Every installed skill (staged changes included), in keys-file order. */
  entries(): BankEntry[] {
    this.#open();
    return [...this.#entries.values()];
  }

  /** The entry of skill `id`, or `undefined`. */
  get(id: string): BankEntry | undefined {
    this.#open();
    return this.#entries.get(id);
  }

  /** Whether skill `id` is installed (staged changes included). */
  has(id: string): boolean {
    this.#open();
    return this.#entries.has(id);
  }

  /** Counts of skills, keys and bytes (staged changes included). */
  stats(): BankStats {
    this.#open();
    let keys = 0;
    for (const e of this.#entries.values()) keys += e.nKeys;
    return { skills: this.#entries.size, keys, deadKeys: this.#rows - keys, bytes: this.#rows * this.dim * 4 };
  }

  /**
   * Stage a skill: its keys (nKeys × dim row-major, one row per `keyTokens` item) are appended to the
   * keys file now, and the entry becomes durable at the next {@link BankStore.commit}. A skill with
   * the same id is replaced (its old rows become dead until {@link BankStore.compact}).
   *
   * @returns the entry as recorded (with `nKeys` and `offset`)
   * @throws GavelError `INVALID_ARGUMENT` for malformed input (no keys, a length that is not a
   *   multiple of dim, non-finite values, keyTokens/keyPositions of the wrong length, …)
   */
  put(input: BankEntryInput, keys: Float32Array): Promise<BankEntry> {
    return this.#run(async () => {
      const entry = checkEntryInput(input, keys, this.dim);
      const fh = this.#fh!;
      const bytes = new Uint8Array(keys.buffer, keys.byteOffset, keys.byteLength);
      await writeAll(fh, bytes, this.#rows * this.dim * 4);
      // Advance only once every byte is written: a failed write leaves rows to be overwritten.
      const recorded: BankEntry = freezeEntry({ ...entry, nKeys: keys.length / this.dim, offset: this.#rows });
      this.#rows += recorded.nKeys;
      this.#entries.delete(recorded.id);
      this.#entries.set(recorded.id, recorded);
      this.#dirty = true;
      return recorded;
    });
  }

  /**
   * Stage the removal of skill `id` (durable at the next commit; its rows stay in the keys file until
   * {@link BankStore.compact}).
   *
   * @returns whether the skill was installed
   */
  remove(id: string): Promise<boolean> {
    return this.#run(async () => {
      if (!this.#entries.delete(id)) return false;
      this.#dirty = true;
      return true;
    });
  }

  /**
   * Persist staged changes: fsync the keys file, write the manifest to a temporary file, fsync it,
   * rename it over manifest.json and fsync the directory. A no-op when nothing is staged.
   */
  commit(): Promise<void> {
    return this.#run(() => this.#commit());
  }

  /**
   * Rewrite the keys without dead rows (of removed or replaced skills) into a new keys file, then
   * commit a manifest pointing at it and delete the old file. Commits staged changes too. Atomic: a
   * crash leaves either the old manifest with the old file or the new manifest with the new one.
   */
  compact(): Promise<void> {
    return this.#run(async () => {
      const live = [...this.#entries.values()];
      const liveRows = live.reduce((a, e) => a + e.nKeys, 0);
      if (liveRows === this.#rows) return this.#commit();
      const newName = `keys.${this.#generation + 1}.bin`;
      const newPath = join(this.dir, newName);
      const oldFh = this.#fh!;
      const newFh = await open(newPath, "w+");
      const moved: BankEntry[] = [];
      try {
        let row = 0;
        // Copy in runs of adjacent live entries, a bounded buffer at a time.
        for (const run of contiguousRuns(live)) {
          const runBytes = run.rows * this.dim * 4;
          const chunk = Math.min(runBytes, 1 << 24);
          const buf = new Uint8Array(chunk);
          for (let done = 0; done < runBytes; done += chunk) {
            const n = Math.min(chunk, runBytes - done);
            await readAll(oldFh, buf.subarray(0, n), run.offset * this.dim * 4 + done, this.#keysPath());
            await writeAll(newFh, buf.subarray(0, n), row * this.dim * 4 + done);
          }
          for (const e of run.entries) {
            moved.push(freezeEntry({ ...e, offset: row + (e.offset - run.offset) }));
          }
          row += run.rows;
        }
        await newFh.sync();
      } catch (err) {
        await newFh.close().catch(() => undefined);
        await rm(newPath, { force: true });
        throw err;
      }
      const oldPath = this.#keysPath();
      const prev = { fh: oldFh, keysFile: this.#keysFile, rows: this.#rows, entries: this.#entries, dirty: this.#dirty };
      this.#fh = newFh;
      this.#keysFile = newName;
      this.#rows = liveRows;
      this.#entries = new Map(moved.map((e) => [e.id, e]));
      this.#dirty = true;
      try {
        await this.#commit();
      } catch (err) {
        // The old manifest still names the old file: go back to it.
        this.#fh = prev.fh;
        this.#keysFile = prev.keysFile;
        this.#rows = prev.rows;
        this.#entries = prev.entries;
        this.#dirty = prev.dirty;
        await newFh.close().catch(() => undefined);
        await rm(newPath, { force: true });
        throw err;
      }
      await oldFh.close();
      // If this unlink is lost to a crash, the next open removes the unreferenced file.
      await rm(oldPath, { force: true });
    });
  }

  /** The keys of one skill (by entry or id): nKeys × dim row-major. */
  readKeys(entry: BankEntry | string): Promise<Float32Array> {
    return this.#run(async () => {
      const id = typeof entry === "string" ? entry : entry?.id;
      // Look the id up again: a caller's entry object may predate a replacement or a compaction.
      const e = this.#entries.get(id);
      if (!e) throw new GavelError(`skill ${JSON.stringify(id)} is not in bank ${this.dir}`, "SKILL_NOT_FOUND");
      const out = new Float32Array(e.nKeys * this.dim);
      await readAll(this.#fh!, new Uint8Array(out.buffer), e.offset * this.dim * 4, this.#keysPath());
      return out;
    });
  }

  /**
   * Every live key in one pass over the keys file (adjacent skills are read as one range; dead rows
   * are skipped), laid out for the glance kernel. Holds the whole bank in one array: to load it into
   * something else, {@link forEachKeyBatch} needs only a batch's worth of memory beside it.
   */
  readAllKeys(): Promise<BankKeys> {
    return this.#run(async () => {
      const entries = [...this.#entries.values()];
      return entries.length === 0 ? { keys: new Float32Array(0), offsets: new Int32Array(1), entries } : this.#readBatch(entries);
    });
  }

  /**
   * Every live key, in entry order, handed to `onBatch` in batches of whole skills of at most
   * `maxBytes` of keys each (a larger skill comes alone). Reopening a 30K-skill bank (~6 GB) this way
   * costs the bank plus one batch, not twice the bank. The store is not changed meanwhile.
   */
  forEachKeyBatch(maxBytes: number, onBatch: (batch: BankKeys) => void | Promise<void>): Promise<void> {
    if (!(maxBytes > 0)) return Promise.reject(invalidArgument("maxBytes must be positive"));
    return this.#run(async () => {
      const rowBytes = this.dim * 4;
      let batch: BankEntry[] = [];
      let bytes = 0;
      for (const e of this.#entries.values()) {
        if (batch.length > 0 && bytes + e.nKeys * rowBytes > maxBytes) {
          await onBatch(await this.#readBatch(batch));
          batch = [];
          bytes = 0;
        }
        batch.push(e);
        bytes += e.nKeys * rowBytes;
      }
      if (batch.length > 0) await onBatch(await this.#readBatch(batch));
    });
  }

  /** The keys of `entries` (in this order), read run by run. */
  async #readBatch(entries: BankEntry[]): Promise<BankKeys> {
    const offsets = new Int32Array(entries.length + 1);
    for (let i = 0; i < entries.length; i++) offsets[i + 1] = offsets[i] + entries[i].nKeys;
    const keys = new Float32Array(offsets[entries.length] * this.dim);
    let row = 0;
    for (const run of contiguousRuns(entries)) {
      // Views of at most READ_CHUNK bytes: one Uint8Array over a bank of 4 GiB or more is refused.
      for (const part of byteViews(keys.buffer, row * this.dim * 4, run.rows * this.dim * 4)) {
        await readAll(this.#fh!, part.view, run.offset * this.dim * 4 + part.start, this.#keysPath());
      }
      row += run.rows;
    }
    return { keys, offsets, entries };
  }

  /**
   * Close the keys file and release the lock. Staged changes that were not committed are discarded
   * (the next open truncates their rows), as a crash would discard them. Idempotent.
   */
  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    await this.#queue;
    const lock = this.#lock;
    this.#lock = null;
    const fh = this.#fh;
    this.#fh = null;
    try {
      await fh?.close();
    } finally {
      await lock?.release();
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  #keysPath(): string {
    return join(this.dir, this.#keysFile);
  }

  #open(): void {
    if (this.#closing) throw new GavelError(`bank ${this.dir} is closed`, "DISPOSED");
  }

  /** Run `f` after every earlier call on this store. */
  #run<T>(f: () => Promise<T>): Promise<T> {
    try {
      this.#open();
    } catch (err) {
      return Promise.reject(err);
    }
    // Calls queued before close() still run: close() waits for them.
    const p = this.#queue.then(f, f);
    this.#queue = p.catch(() => undefined);
    return p;
  }

  async #commit(): Promise<void> {
    if (!this.#dirty) return;
    // Rows first: the manifest must never reference rows that are not on disk.
    await this.#fh!.sync();
    const generation = this.#generation + 1;
    const manifest: Omit<BankManifest, "entries"> = {
      format: "gavel-bank",
      formatVersion: BANK_FORMAT_VERSION,
      header: this.header,
      keysFile: this.#keysFile,
      rows: this.#rows,
      generation,
    };
    const tmp = join(this.dir, `${MANIFEST}.${randomBytes(6).toString("hex")}.tmp`);
    const fh = await open(tmp, "wx");
    try {
      try {
        // The text of JSON.stringify({ ...manifest, entries }), written in pieces: an entry's JSON is
        // made once per entry object (entries are frozen; a changed skill is a new object), so a
        // commit at 30K skills rewrites 80 MB without formatting 15M key tokens again, and no single
        // string approaches V8's length limit.
        const head = JSON.stringify(manifest);
        let piece = head.slice(0, -1) + ',"entries":[';
        let at = 0;
        const flush = async (text: string) => {
          const bytes = Buffer.from(text, "utf8");
          await writeAll(fh, bytes, at);
          at += bytes.byteLength;
        };
        let first = true;
        for (const e of this.#entries.values()) {
          let json = this.#entryJson.get(e);
          if (json === undefined) this.#entryJson.set(e, (json = JSON.stringify(e)));
          piece += first ? json : "," + json;
          first = false;
          if (piece.length >= 1 << 23) {
            await flush(piece);
            piece = "";
          }
        }
        await flush(piece + "]}\n");
        await fh.sync();
      } finally {
        await fh.close();
      }
      await rename(tmp, join(this.dir, MANIFEST));
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    await fsyncDir(this.dir);
    this.#generation = generation;
    this.#dirty = false;
  }
}

// ---------------------------------------------------------------------------------------------
// Manifest parsing and checks

async function readManifest(dir: string): Promise<BankManifest | undefined> {
  const path = join(dir, MANIFEST);
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new GavelError(`${path} is not valid JSON (${(err as Error).message}); delete ${dir} and run \`gavel install\` again`, "CORRUPT_FILE", { cause: err });
  }
  return parseManifest(raw, path, dir);
}

function parseManifest(raw: unknown, path: string, dir: string): BankManifest {
  const bad = (why: string) =>
    new GavelError(`${path} is corrupt: ${why}; delete ${dir} and run \`gavel install\` again`, "CORRUPT_FILE");
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw bad("not a JSON object");
  const m = raw as Record<string, unknown>;
  if (m.format !== "gavel-bank") throw bad(`format is ${JSON.stringify(m.format)}, expected "gavel-bank"`);
  if (!isUint(m.formatVersion)) throw bad("formatVersion is not a non-negative integer");
  if (m.formatVersion !== BANK_FORMAT_VERSION) {
    // Readable enough to report the mismatch; the rest may follow another layout, so stop here.
    return { ...(m as unknown as BankManifest), entries: [] };
  }
  try {
    checkHeader(m.header as BankHeader, "header");
  } catch (err) {
    throw bad((err as Error).message);
  }
  const header = m.header as BankHeader;
  if (typeof m.keysFile !== "string" || !KEYS_FILE_RE.test(m.keysFile)) throw bad(`keysFile ${JSON.stringify(m.keysFile)} is not a keys file name`);
  if (!isUint(m.rows)) throw bad("rows is not a non-negative integer");
  if (!isUint(m.generation)) throw bad("generation is not a non-negative integer");
  if (!Array.isArray(m.entries)) throw bad("entries is not an array");
  const rows = m.rows;
  const ids = new Set<string>();
  let end = 0;
  const entries: BankEntry[] = m.entries.map((e: unknown, i: number) => {
    let entry: BankEntry;
    try {
      const x = e as Record<string, unknown>;
      if (typeof e !== "object" || e === null) throw new Error("not an object");
      if (!isUint(x.nKeys) || x.nKeys === 0) throw new Error("nKeys is not a positive integer");
      if (!isUint(x.offset)) throw new Error("offset is not a non-negative integer");
      const nKeys = x.nKeys as number;
      const offset = x.offset as number;
      entry = { ...checkEntryFields(x as unknown as BankEntryInput, nKeys), nKeys, offset };
    } catch (err) {
      throw bad(`entry ${i}: ${(err as Error).message}`);
    }
    if (ids.has(entry.id)) throw bad(`entry ${i}: duplicate id ${JSON.stringify(entry.id)}`);
    ids.add(entry.id);
    // Entries are written in row order and never share rows; anything else was not written by us.
    if (entry.offset < end) throw bad(`entry ${i} (${entry.id}) overlaps or precedes the previous entry's rows`);
    end = entry.offset + entry.nKeys;
    if (end > rows) throw bad(`entry ${i} (${entry.id}) ends at row ${end}, past the ${rows} committed rows`);
    return freezeEntry(entry);
  });
  return {
    format: "gavel-bank",
    formatVersion: m.formatVersion,
    header: normalizeHeader(header),
    keysFile: m.keysFile,
    rows,
    generation: m.generation,
    entries,
  };
}

const short = (h: string) => `${h.slice(0, 12)}…`;

/** Throws BANK_MISMATCH naming every difference between the bank's header and `expected`. */
function verifyHeader(dir: string, m: BankManifest, expected: BankHeader): void {
  const rebuild = `delete ${dir} and run \`gavel install\` again to rebuild it`;
  if (m.formatVersion !== BANK_FORMAT_VERSION) {
    const newer = m.formatVersion > BANK_FORMAT_VERSION;
    throw new GavelError(
      `bank ${dir} uses bank format ${m.formatVersion}, ${newer ? "newer than" : "older than"} the format ${BANK_FORMAT_VERSION} this gavel-router reads; ` +
        (newer ? `upgrade gavel-router, or ${rebuild}` : rebuild) +
        ".",
      "BANK_MISMATCH",
    );
  }
  const h = m.header;
  const diffs: string[] = [];
  const modelDiff = describeMismatch(h.model, expected.model);
  if (modelDiff !== undefined) diffs.push(`it was built with another model (${modelDiff}; bank vs now)`);
  if (h.projectionsHash !== expected.projectionsHash) {
    diffs.push(`it was built with projections ${short(h.projectionsHash)}, the projections in use are ${short(expected.projectionsHash)}`);
  }
  if (h.layer !== expected.layer) diffs.push(`its keys read layer ${h.layer}, the projections read layer ${expected.layer}`);
  if (h.eps !== expected.eps) diffs.push(`it was compressed with ε = ${h.eps}, the projections use ε = ${expected.eps}`);
  if (h.dim !== expected.dim) diffs.push(`its keys have ${h.dim} dimensions, the projections produce ${expected.dim}`);
  if (diffs.length === 0) return;
  throw new GavelError(
    `bank ${dir} does not match this setup: ${diffs.join("; ")}. ` +
      `Open it with the model and projections ${short(h.projectionsHash)} it was built with, or ${rebuild}.`,
    "BANK_MISMATCH",
  );
}

function checkHeader(h: BankHeader, what: string): void {
  if (typeof h !== "object" || h === null) throw invalidArgument(`${what} must be a BankHeader object`);
  if (!isModelFingerprint(h.model)) throw invalidArgument(`${what}.model is not a model fingerprint`);
  if (typeof h.projectionsHash !== "string" || !/^[0-9a-f]{64}$/.test(h.projectionsHash)) {
    throw invalidArgument(`${what}.projectionsHash must be a sha256 hex string`);
  }
  if (!isUint(h.layer) || h.layer >= h.model.nLayer) throw invalidArgument(`${what}.layer must be in [0, ${h.model.nLayer})`);
  if (typeof h.eps !== "number" || !(h.eps > 0 && h.eps <= 2)) throw invalidArgument(`${what}.eps must be in (0, 2]`);
  if (!isUint(h.dim) || h.dim === 0) throw invalidArgument(`${what}.dim must be a positive integer`);
}

/** A plain copy holding only the header's fields (no extra properties leak into the manifest). */
function normalizeHeader(h: BankHeader): BankHeader {
  const { architecture, nLayer, nEmbd, nVocab, vocabHash } = h.model;
  return Object.freeze({
    model: Object.freeze({ architecture, nLayer, nEmbd, nVocab, vocabHash }),
    projectionsHash: h.projectionsHash,
    layer: h.layer,
    eps: h.eps,
    dim: h.dim,
  });
}

// ---------------------------------------------------------------------------------------------
// Entries

function checkEntryInput(input: BankEntryInput, keys: Float32Array, dim: number): BankEntryInput {
  if (!(keys instanceof Float32Array)) throw invalidArgument("put: keys must be a Float32Array");
  if (keys.length === 0 || keys.length % dim !== 0) {
    throw invalidArgument(`put: keys must hold a positive multiple of dim = ${dim} values, got ${keys.length}`);
  }
  for (let i = 0; i < keys.length; i++) {
    if (!Number.isFinite(keys[i])) throw invalidArgument(`put: keys[${i}] is ${keys[i]}`);
  }
  try {
    return checkEntryFields(input, keys.length / dim);
  } catch (err) {
    throw invalidArgument(`put: ${(err as Error).message}`);
  }
}

/** Validates and copies the caller-supplied fields of an entry (plain Error on failure). */
function checkEntryFields(input: BankEntryInput, nKeys: number): BankEntryInput {
  if (typeof input !== "object" || input === null) throw new Error("entry must be an object");
  for (const k of ["id", "name", "description", "contentHash", "source"] as const) {
    if (typeof input[k] !== "string") throw new Error(`${k} must be a string`);
  }
  if (input.id.length === 0) throw new Error("id must not be empty");
  if (typeof input.disableModelInvocation !== "boolean") throw new Error("disableModelInvocation must be a boolean");
  if (!isUint(input.renderTokens)) throw new Error("renderTokens must be a non-negative integer");
  const ints = (a: unknown, name: string): number[] => {
    if (!Array.isArray(a) || a.length !== nKeys) throw new Error(`${name} must be an array of ${nKeys} integers (one per key)`);
    for (const v of a) if (!isUint(v)) throw new Error(`${name} holds ${JSON.stringify(v)}, not a non-negative integer`);
    return [...(a as number[])];
  };
  return {
    id: input.id,
    name: input.name,
    description: input.description,
    contentHash: input.contentHash,
    source: input.source,
    disableModelInvocation: input.disableModelInvocation,
    keyTokens: ints(input.keyTokens, "keyTokens"),
    ...(input.keyPositions !== undefined ? { keyPositions: ints(input.keyPositions, "keyPositions") } : {}),
    renderTokens: input.renderTokens,
    ...(input.renderCut !== undefined ? { renderCut: checkRenderCut(input.renderCut) } : {}),
  };
}

function checkRenderCut(c: unknown): { descriptionChars: number; bodyChars: number } {
  if (typeof c !== "object" || c === null) throw new Error("renderCut must be an object");
  const { descriptionChars, bodyChars } = c as Record<string, unknown>;
  if (!isUint(descriptionChars) || !isUint(bodyChars)) throw new Error("renderCut must hold descriptionChars and bodyChars, non-negative integers");
  return { descriptionChars, bodyChars };
}

function freezeEntry(e: BankEntry): BankEntry {
  Object.freeze(e.keyTokens);
  if (e.keyPositions) Object.freeze(e.keyPositions);
  if (e.renderCut) Object.freeze(e.renderCut);
  return Object.freeze(e);
}

function isUint(v: unknown): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
}

/** Groups entries (in row order) into runs of adjacent rows, so each run is one read. */
function contiguousRuns(entries: readonly BankEntry[]): { offset: number; rows: number; entries: BankEntry[] }[] {
  const runs: { offset: number; rows: number; entries: BankEntry[] }[] = [];
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

// ---------------------------------------------------------------------------------------------
// I/O

async function writeAll(fh: FileHandle, bytes: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < bytes.byteLength) {
    const { bytesWritten } = await fh.write(bytes, done, bytes.byteLength - done, position + done);
    done += bytesWritten;
  }
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
    const { bytesRead } = await fh.read(into, done, Math.min(into.byteLength - done, chunk), position + done);
    if (bytesRead === 0) throw new GavelError(`${path} ended at byte ${position + done}, inside rows the manifest references`, "CORRUPT_FILE");
    done += bytesRead;
  }
}
