/**
 * The bank store: a directory holding the ε-cover keys of every installed skill (paper section 3.3),
 * bound to the model, projections, layer, ε and width that produced them.
 *
 * The directory's layout (manifest.json with its {@link BankManifest}, keys files, texts/,
 * lexicon.bin, lock) is docs/bank-format.md's.
 *
 * Readers ({@link BankStore.openSnapshot}) take no lock: they read the last committed snapshot, which
 * writers never change in place. Committed key rows are immutable (a writer only appends past them,
 * truncates past them, or compacts into a file under a new name); the manifest is replaced by rename;
 * texts are written under new names; the lexicon's records up to the COMMIT of a generation are never
 * rewritten in place (a whole rewrite is a rename). A reader validates what it read against the
 * manifest's generation and checksums and starts again on the newer manifest when a writer renamed
 * something away meanwhile (as SQLite's WAL readers restart on a changed snapshot).
 *
 * Crash safety rests on one ordering: key rows are written and fsynced before the manifest that
 * references them is renamed into place (and the directory fsynced). The manifest is therefore
 * always the last committed state, and every row it references is on disk. Compaction writes a
 * fresh keys file under a new name, so the old manifest stays valid with the old file until the new
 * manifest lands. The lexicon's records and its COMMIT of the new generation are fsynced in the same
 * window (after the rows, before the manifest), so it always holds the COMMIT of the manifest on disk.
 */
import { rm, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { GavelError, invalidArgument, clip } from "../errors.js";
import { unsyncedCommit, withPermissionErrors } from "./modes.js";
import { DirSyncError } from "../util/durable-file.js";
import { checkEntryInput, freezeEntry, withMeta, withWarnings } from "./entries.js";
import { keyBatches, keysChecksum, keysCorrupt, readAll, readEntryKeys, writeCompacted, writeRows, type BankKeys } from "./keys-file.js";
import type { DirLock } from "./lock.js";
import { manifestIdentity, openForWriting, readSnapshot } from "./opening.js";
import { writeManifest } from "./manifest.js";
import { BANK_FORMAT_VERSION, type BankEntry, type BankEntryInput, type BankHeader, type BankManifest, type BankStats, type BankOpenOptions, type CommitParticipant } from "./types.js";

export type { BankKeys } from "./keys-file.js";
export { SNAPSHOT_ATTEMPTS } from "./opening.js";

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
  /** Opened by {@link BankStore.openSnapshot}: no lock, no writes. */
  readonly #readOnly: boolean;
  /** For a snapshot: the identity of the manifest file it read (see `manifestIdentity`). */
  readonly #manifestId: string | undefined;
  #fh: FileHandle | null;
  #keysFile: string;
  /** Rows written to the keys file, committed or staged. */
  #rows: number;
  #generation: number;
  #entriesVersion = 0;
  /** Live entries in row-offset order (a replaced id is deleted and re-added to keep that order). */
  #entries: Map<string, BankEntry>;
  #dirty = false;
  /** Set when close() starts: new calls are refused, calls already queued still run. */
  #closing = false;
  #queue: Promise<unknown> = Promise.resolve();
  readonly #participants: CommitParticipant[] = [];

  /** Each entry's manifest JSON, made at its first commit (see #commit). */
  readonly #entryJson = new WeakMap<BankEntry, string>();

  private constructor(dir: string, lock: DirLock | null, fh: FileHandle | null, m: BankManifest, manifestId?: string) {
    this.dir = dir;
    this.header = m.header;
    this.#lock = lock;
    this.#readOnly = lock === null;
    this.#manifestId = manifestId;
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
   * @throws GavelError `BANK_MISMATCH` when the bank was built with another model, projections, layer, ε
   *   or width, or by another format version (the message says what differs and how to rebuild);
   *   `CORRUPT_FILE` when the manifest is unreadable or inconsistent, or the keys file is shorter than the
   *   manifest says, or the directory holds a bank's files (keys, lexicon, texts) but no manifest (nothing
   *   is changed then, even with `create`); `FILE_NOT_FOUND` when there is no bank and `create` is off;
   *   `INVALID_ARGUMENT` when another process (or this one) has the bank open, or `expected` is malformed;
   *   `PERMISSION_DENIED` when the bank's files may not be read or written (another user's bank)
   */
  static async open(dir: string, expected: BankHeader, options: BankOpenOptions = {}): Promise<BankStore> {
    const { lock, fh, manifest, fresh } = await withPermissionErrors(dir, "opening", () => openForWriting(dir, expected, options.create ?? false));
    const store = new BankStore(dir, lock, fh, manifest);
    if (fresh) {
      // A new bank is bound to its header from the start: write the empty manifest now.
      store.#dirty = true;
      try {
        await store.#commit();
      } catch (err) {
        await store.close();
        throw err;
      }
    }
    return store;
  }

  /**
   * Opens the last committed state of the bank in `dir` for reading, without the lock: a reader is
   * never refused because another process installs or uninstalls, and sees either the manifest before
   * that process's commit or the one after, never a mix. Nothing is created, truncated or removed;
   * `put`, `remove`, `commit` and `compact` are refused. When a writer renames a file away while the
   * snapshot is read (a compaction's old keys file), it starts again on the newer manifest, up to
   * {@link SNAPSHOT_ATTEMPTS} times. {@link BankStore.moved} says when a newer commit has landed.
   *
   * @throws GavelError as {@link BankStore.open} without `create` (`FILE_NOT_FOUND`, `CORRUPT_FILE`, `BANK_MISMATCH`, `PERMISSION_DENIED`), never `BANK_LOCKED`
   */
  static async openSnapshot(dir: string, expected: BankHeader): Promise<BankStore> {
    const { manifest, fh, id } = await withPermissionErrors(dir, "reading", () => readSnapshot(dir, expected));
    return new BankStore(dir, null, fh, manifest, id);
  }

  /** Whether this store was opened by {@link BankStore.openSnapshot} (no lock, no writes). */
  get readOnly(): boolean {
    return this.#readOnly;
  }

  /** For a snapshot: whether a commit has landed since it was read (one `stat`). Always false for a writer. */
  async moved(): Promise<boolean> {
    if (!this.#readOnly) return false;
    return (await manifestIdentity(this.dir)) !== this.#manifestId;
  }

  /** Width of each key row. */
  get dim(): number {
    return this.header.dim;
  }

  /** Whether there are staged changes that {@link BankStore.commit} has not persisted yet. */
  get dirty(): boolean {
    return this.#dirty;
  }

  /** Changes with the entries, at once (put, remove, warnings, compaction): what caches of them key on. */
  get entriesVersion(): number {
    return this.#entriesVersion;
  }

  /** Number of the last commit (0 for a bank that was just created). */
  get generation(): number {
    return this.#generation;
  }

  /** @internal Joins `p` to every later commit (a compaction's too); see `CommitParticipant`. */
  join(p: CommitParticipant): void {
    this.#participants.push(p);
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
    return this.#write(async () => {
      const entry = checkEntryInput(input, keys, this.dim);
      await writeRows(this.#fh!, keys, this.#rows, this.dim);
      // Advance only once every byte is written: a failed write leaves rows to be overwritten.
      const recorded: BankEntry = freezeEntry({ ...entry, nKeys: keys.length / this.dim, offset: this.#rows, keysSha256: keysChecksum(keys) });
      this.#rows += recorded.nKeys;
      this.#entries.delete(recorded.id);
      this.#entries.set(recorded.id, recorded);
      this.#entriesVersion++;
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
    return this.#write(async () => {
      if (!this.#entries.delete(id)) return false;
      this.#entriesVersion++;
      this.#dirty = true;
      return true;
    });
  }

  /**
   * Stage new warnings for skill `id` (durable at the next commit; false when it is not installed). No row
   * is written and the entry keeps its place, so the bank's order, which the lexicon follows, is unchanged.
   */
  setWarnings(id: string, warnings: readonly string[]): Promise<boolean> {
    return this.#replace(id, (e) => withWarnings(e, warnings));
  }

  /** Stage new front matter (and source, given one) for skill `id`, as {@link setWarnings} (an edit of the front matter alone, or a move). */
  setMeta(id: string, meta: Readonly<Record<string, unknown>>, source?: string): Promise<boolean> {
    return this.#replace(id, (e) => withMeta(e, meta, source));
  }

  #replace(id: string, change: (e: BankEntry) => BankEntry): Promise<boolean> {
    return this.#write(async () => {
      const e = this.#entries.get(id);
      if (!e) return false;
      this.#entries.set(id, change(e)); // Map.set on a present key keeps its place
      this.#entriesVersion++;
      this.#dirty = true;
      return true;
    });
  }

  /**
   * Persist staged changes: fsync the keys file, write the manifest to a temporary file, fsync it,
   * rename it over manifest.json and fsync the directory. A no-op when nothing is staged. When only
   * the directory's fsync fails, the commit has landed (readers see it; the store moves on to it) and
   * the error, typed by its errno (CORRUPT_FILE for an I/O error), says it may not survive a power cut.
   */
  commit(): Promise<void> {
    return this.#write(() => withPermissionErrors(this.dir, "writing", () => this.#commit()));
  }

  /**
   * Rewrite the keys without dead rows (of removed or replaced skills) into a new keys file, then
   * commit a manifest pointing at it and delete the old file. Commits staged changes too. Atomic: a
   * crash leaves either the old manifest with the old file or the new manifest with the new one.
   * A failed fsync of the directory after the manifest's rename fails it as {@link BankStore.commit}
   * says, with the new file kept and the old one left for the next open to remove.
   */
  compact(): Promise<void> {
    return this.#write(async () => {
      const live = [...this.#entries.values()];
      const liveRows = live.reduce((a, e) => a + e.nKeys, 0);
      if (liveRows === this.#rows) return this.#commit();
      const newName = `keys.${this.#generation + 1}.bin`;
      const newPath = join(this.dir, newName);
      const oldFh = this.#fh!;
      const { fh: newFh, moved } = await writeCompacted(oldFh, this.#keysPath(), newPath, live, this.dim);
      const oldPath = this.#keysPath();
      const prev = { fh: oldFh, keysFile: this.#keysFile, rows: this.#rows, entries: this.#entries, dirty: this.#dirty, generation: this.#generation };
      this.#fh = newFh;
      this.#keysFile = newName;
      this.#rows = liveRows;
      this.#entries = new Map(moved.map((e) => [e.id, e]));
      this.#entriesVersion++;
      this.#dirty = true;
      try {
        await this.#commit();
      } catch (err) {
        // Landed (the manifest names the new file, only its folder's sync failed): nothing goes back,
        // and the old file stays until the next open, should a power cut bring the old manifest back.
        if (this.#generation !== prev.generation) {
          await oldFh.close().catch(() => undefined);
          throw err;
        }
        // The old manifest still names the old file: go back to it.
        this.#fh = prev.fh;
        this.#keysFile = prev.keysFile;
        this.#rows = prev.rows;
        this.#entries = prev.entries;
        this.#entriesVersion++;
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
      if (!e) throw new GavelError(`skill ${JSON.stringify(clip(id))} is not in bank ${clip(this.dir)}`, "SKILL_NOT_FOUND");
      const out = new Float32Array(e.nKeys * this.dim);
      await readAll(this.#fh!, new Uint8Array(out.buffer), e.offset * this.dim * 4, this.#keysPath());
      if (e.keysSha256 !== undefined && keysChecksum(out) !== e.keysSha256) throw keysCorrupt(e, this.#keysPath());
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
   * costs the bank plus one batch, not twice the bank. The store is not changed meanwhile. A damaged
   * key block fails it with CORRUPT_FILE, or with `tolerate` is listed in its batch's `damaged`.
   */
  forEachKeyBatch(maxBytes: number, onBatch: (batch: BankKeys) => void | Promise<void>, only?: (e: BankEntry) => boolean, tolerate = false): Promise<void> {
    if (!(maxBytes > 0)) return Promise.reject(invalidArgument("maxBytes must be positive"));
    return this.#run(async () => {
      for (const batch of keyBatches(this.#entries.values(), this.dim * 4, maxBytes, only)) await onBatch(await this.#readBatch(batch, tolerate));
    });
  }

  /** The keys of `entries` (in this order), read run by run. */
  #readBatch(entries: BankEntry[], tolerate = false): Promise<BankKeys> {
    return readEntryKeys(this.#fh!, entries, this.dim, this.#keysPath(), tolerate);
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

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #keysPath(): string {
    return join(this.dir, this.#keysFile);
  }

  #open(): void {
    if (this.#closing) throw new GavelError(`bank ${clip(this.dir)} is closed`, "DISPOSED");
  }

  /** {@link BankStore.#run} for a call that writes: refused on a snapshot. */
  #write<T>(f: () => Promise<T>): Promise<T> {
    if (!this.#readOnly) return this.#run(f);
    return Promise.reject(invalidArgument(`bank ${clip(this.dir)} was opened read-only (a snapshot, without the lock); open it for writing to change it`));
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
    for (const p of this.#participants) await p.prepare(generation);
    let unsynced: DirSyncError | undefined;
    try {
      await writeManifest(this.dir, manifest, this.#entries.values(), this.#entryJson);
    } catch (err) {
      // Renamed into place, only the folder's sync failed: the commit has landed (readers see it).
      if (!(err instanceof DirSyncError)) throw err;
      unsynced = err;
    }
    this.#generation = generation;
    this.#dirty = false;
    for (const p of this.#participants) await p.committed(generation).catch(() => undefined);
    if (unsynced) throw unsyncedCommit(this.dir, generation, unsynced);
  }
}

