/**
 * The installed library as one object: the bank on disk ({@link BankStore}), its keys in native
 * memory ({@link KeyBank}), the skill texts the verdict renders again ({@link TextStore}), the BM25
 * index of those texts that the lexical expert reads ({@link BankLexicon}), and the map between
 * skill ids and the key bank's handles. The router's stages read the library through it; install
 * and uninstall change it through it, so the five never drift apart.
 *
 * Readers are never blocked by another process's writer: {@link Library.openSnapshot} opens the last
 * committed snapshot without the bank's lock (store.ts says why that is safe), and such a library
 * moves to the newest commit by itself at the start of each read ({@link Library.reading}), or when a
 * text it needs was pruned by a writer meanwhile. In one process, routes read inside
 * {@link Library.reading} and the changes that take something away (an uninstall, a reinstall that
 * replaces a skill, a refresh, close) wait for the routes in flight, so a route sees one state from
 * its start to its end; skills added meanwhile are not ranked by it.
 *
 * @module
 */
import type { Projections } from "../projections/projections.js";
import type { RenderableSkill } from "../render/index.js";
import type { Skill } from "../skills/index.js";
import { GavelError } from "../errors.js";
import { SharedWork } from "../util/shared-work.js";
import { throwIfAborted, untilAborted } from "../util/validate.js";
import { findEntry, sameMeta, tokenIdfOf } from "./entries.js";
import { ReadWriteLock } from "./rw-lock.js";
import { KeyBank, type KeyBankOptions } from "./key-bank.js";
import { BankLexicon } from "./lexicon.js";
import { BankStore, SNAPSHOT_ATTEMPTS } from "./store.js";
import { openSnapshotParts, sameKeys } from "./snapshot.js";
import { damagedKeys } from "./keys-file.js";
import { TextStore } from "./texts.js";
import { bankHeaderFor, type BankEntry, type HeaderSource, type SkillKeysRecord } from "./types.js";

/** An opaque state of a {@link Library} (see {@link Library.changedSince}). */
export type LibraryState = { readonly store: BankStore; readonly entries: number; readonly handles: number };

/** Native memory read per batch when a library opens (see {@link Library.open}). */
const LOAD_BATCH_BYTES = 256 * 2 ** 20;

/** Opening options of {@link Library.open}. */
export interface LibraryOpenOptions {
  /** Create the bank if it does not exist. */
  create: boolean;
  /** How the keys are held in memory ({@link KeyBankOptions.keyType}; default "f32"). */
  keyType?: "f32" | "f16";
}

/** A held skill's id and name, see {@link Library.label}. */
export interface SkillLabel {
  readonly id: string;
  readonly name: string;
}

/** The installed library: bank on disk, keys in memory, texts, and the id ↔ handle maps. */
export class Library {
  readonly keys: KeyBank;
  readonly texts: TextStore;
  #store: BankStore;
  #lexicon: BankLexicon;
  #handleOf = new Map<string, number>();
  #idOf = new Map<number, string>();
  /** Skills whose key blocks are damaged on disk: not held, so routes refuse and installs replace them. */
  readonly #damaged = new Set<string>();
  /** Bumped by every track/untrack: with the store and its entriesVersion, the library's {@link state}. */
  #handlesVersion = 0;
  /** routable()'s, tokenIdf()'s and label()'s caches, each valid while the library has not {@link changedSince} its state. */
  #routable: { state: LibraryState; list: Int32Array } | null = null;
  #idf: { state: LibraryState; idf: Float32Array } | null = null;
  #labels: { state: LibraryState; of: SkillLabel[] } | null = null;
  readonly #rw = new ReadWriteLock();

  /** Calls waiting for the library's lock now: reads, and the writes that take something away (for tests and diagnostics). */
  get waiting(): number { return this.#rw.waiting; }

  private constructor(store: BankStore, keys: KeyBank, texts: TextStore, lexicon: BankLexicon) {
    this.#store = store;
    this.keys = keys;
    this.texts = texts;
    this.#lexicon = lexicon;
  }

  /** The bank on disk (a snapshot's is replaced by a newer one when the library refreshes). */
  get store(): BankStore {
    return this.#store;
  }

  /** The BM25 index of the routable skills' texts, kept in the bank (lexicon.bin). */
  get lexicon(): BankLexicon {
    return this.#lexicon;
  }

  /** Opened by {@link Library.openSnapshot}: reads the last committed state, never writes. */
  get readOnly(): boolean {
    return this.#store.readOnly;
  }

  /** Loads the keys of `store`'s entries that `only` accepts (all by default); a damaged key block's skill goes to `damaged`. */
  async #loadKeys(store: BankStore, damaged: Set<string>, only?: (e: BankEntry) => boolean): Promise<[string, Float32Array][]> {
    const dim = store.dim;
    const out: [string, Float32Array][] = [];
    // in batches of 256 MiB: the native bank copies each skill's keys (the whole bank would be held twice)
    await store.forEachKeyBatch(LOAD_BATCH_BYTES, (batch) => {
      for (let s = 0; s < batch.entries.length; s++) {
        const keys = batch.keys.subarray(batch.offsets[s] * dim, batch.offsets[s + 1] * dim);
        if (batch.damaged?.has(s)) damaged.add(batch.entries[s].id);
        else if (only) out.push([batch.entries[s].id, keys]);
        else this.track(batch.entries[s].id, keys);
      }
    }, only, true);
    return out;
  }

  /** The skills whose keys are damaged on disk (reinstall or uninstall them: `gavel check` says more). */
  damaged(): string[] {
    return [...this.#damaged];
  }

  /**
   * Opens the last committed state of the bank in `dir` without its lock, for routes and lists while
   * another process may install or uninstall (see the module comment). Never creates, truncates or
   * rewrites a file; `save`, `remove` and `commit` are refused. Fails as {@link Library.open} does,
   * except never with BANK_LOCKED.
   */
  static async openSnapshot(dir: string, projections: Projections, options: Pick<LibraryOpenOptions, "keyType"> = {}): Promise<Library> {
    const texts = new TextStore(dir);
    const { store, lexicon } = await openSnapshotParts(dir, bankHeaderFor(projections), texts);
    return Library.#assemble(store, texts, async () => lexicon, projections.dim, options.keyType);
  }

  /**
   * For a snapshot: when a newer commit has landed, moves to it (the keys of the skills it added or
   * changed are read, those of the skills it removed dropped, its lexicon read). The new snapshot is
   * read while routes go on; only the swap waits for the routes in flight. Resolves to whether it
   * moved. A writer's library is always current: false. A call while a refresh runs waits for that
   * one; `signal` aborting while it waits: `verb`'s ABORTED at once. Once every call waiting for the
   * refresh has aborted (none waits without a signal), the refresh stops waiting for the swap, closes
   * what it opened and leaves the library as it was (the next read refreshes anew); a swap under way finishes.
   */
  async refresh(signal?: AbortSignal, verb = "Library.refresh"): Promise<boolean> {
    if (!this.readOnly || !(await untilAborted(this.#store.moved(), verb, signal))) return false;
    return this.#refreshes.join((s) => this.#refreshOnce(s), signal, verb);
  }

  readonly #refreshes = new SharedWork<boolean>();

  /** One refresh (see {@link refresh}); `signal` aborts once no call waits for it. */
  async #refreshOnce(signal: AbortSignal): Promise<boolean> {
    const { store, lexicon } = await openSnapshotParts(this.dir, this.#store.header, this.texts);
    // A skill whose keys are the same (by checksum) keeps them; the others are read. Only a refresh
    // changes a snapshot library, and only one not abandoned swaps, so this holds until the swap.
    const same = sameKeys(this.#store.entries(), (id) => this.#handleOf.has(id));
    // A damaged skill holds no keys, so it is never `same`: each is read again here.
    const damaged = new Set<string>();
    let swapping = false;
    try {
      throwIfAborted(signal, "Library.refresh"); // no call waits for it any more: its keys go unread
      const loaded = await this.#loadKeys(store, damaged, (e) => !same(e));
      return await this.#rw.write(async () => {
        swapping = true;
        for (const id of [...this.#handleOf.keys()]) {
          const e = store.get(id);
          if (e === undefined || !same(e)) this.untrack(id);
        }
        for (const [id, keys] of loaded) this.track(id, keys);
        this.#damaged.clear();
        for (const id of damaged) this.#damaged.add(id);
        const old = this.#store;
        this.#store = store;
        this.#lexicon = lexicon;
        await old.close();
        return true;
      }, signal, "Library.refresh");
    } catch (err) {
      if (!swapping) await store.close();
      throw err;
    }
  }

  /**
   * Runs a read of the library (a route, a glance, a lookup): beside other reads, never while an
   * uninstall, a replacing reinstall or a refresh changes what it reads (`signal` aborting while it
   * waits, the wait for a snapshot's refresh included: ABORTED, `f` never run). A snapshot moves to the
   * newest commit first, and when a text it needs was pruned by another process's uninstall meanwhile
   * (CORRUPT_FILE), it moves and reruns `f`.
   */
  async reading<T>(f: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const refresh = () => this.refresh(signal, "Library.reading");
    if (this.readOnly) await refresh();
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#rw.read(f, signal, "Library.reading");
      } catch (err) {
        const retry = this.readOnly && attempt < SNAPSHOT_ATTEMPTS && err instanceof GavelError && err.code === "CORRUPT_FILE";
        if (!retry || !(await refresh())) throw err;
      }
    }
  }

  /**
   * Opens (or creates) the bank in `dir` for these projections and loads every installed skill's
   * keys into native memory, and its lexicon (rebuilt from the texts when it cannot be used: see
   * {@link BankLexicon.rebuilt}). Fails as {@link BankStore.open} does (BANK_MISMATCH, BANK_LOCKED, …).
   */
  static async open(dir: string, projections: HeaderSource, options: LibraryOpenOptions): Promise<Library> {
    const store = await BankStore.open(dir, bankHeaderFor(projections), { create: options.create });
    const texts = new TextStore(store.dir);
    return Library.#assemble(store, texts, () => BankLexicon.open(store, texts), projections.dim, options.keyType);
  }

  /** A Library over an opened store, its keys loaded; on failure the keys are freed and the store closed. */
  static async #assemble(store: BankStore, texts: TextStore, lexicon: () => Promise<BankLexicon>, dim: number, keyType: "f32" | "f16" = "f32"): Promise<Library> {
    const keys = new KeyBank(dim, { keyType });
    try {
      const library = new Library(store, keys, texts, await lexicon());
      await library.#loadKeys(store, library.#damaged);
      return library;
    } catch (err) {
      keys.dispose();
      await store.close();
      throw err;
    }
  }

  /** The bank's directory. */
  get dir(): string {
    return this.store.dir;
  }

  /** Holds `keys` in memory as skill `id`'s (replacing any it had). */
  track(id: string, keys: Float32Array): void {
    this.untrack(id);
    const handle = this.keys.add(keys);
    this.#handleOf.set(id, handle);
    this.#idOf.set(handle, id);
    this.#handlesVersion++;
  }

  /** Drops skill `id`'s keys from memory (nothing when it has none). */
  untrack(id: string): void {
    this.#damaged.delete(id);
    const h = this.#handleOf.get(id);
    if (h === undefined) return;
    this.keys.remove(h);
    this.#handleOf.delete(id);
    this.#idOf.delete(h);
    this.#handlesVersion++;
  }

  /** Whether the bank already holds this very skill (same id, same content, keys in memory). */
  isCurrent(skill: Pick<Skill, "id" | "contentHash">): boolean {
    const existing = this.store.get(skill.id);
    return existing !== undefined && existing.contentHash === skill.contentHash && this.#handleOf.has(skill.id);
  }

  /** Whether what routes read may have changed since {@link state} gave `since` (entries or held keys): for caches. */
  changedSince(s: LibraryState | undefined): boolean { return s === undefined || s.store !== this.store || s.entries !== this.store.entriesVersion || s.handles !== this.#handlesVersion; }

  /** The library's state now, for {@link changedSince}. */
  state(): LibraryState { return { store: this.store, entries: this.store.entriesVersion, handles: this.#handlesVersion }; }

  /** Handles of the skills that may be chosen automatically, in bank order. */
  routable(): Int32Array {
    if (this.#damaged.size > 0) throw damagedKeys(this.dir, [...this.#damaged]);
    // Kept while neither the entries nor the held keys change: a live context asks on every token,
    // and rebuilding it walked every entry (24 ms a call at 30K skills on the dev CPU: bench/routable.bench.ts).
    const c = this.#routable;
    if (c && !this.changedSince(c.state)) return c.list.slice();
    const out: number[] = [];
    for (const e of this.store.entries()) {
      const h = this.#handleOf.get(e.id);
      if (h !== undefined && !e.disableModelInvocation) out.push(h);
    }
    const list = Int32Array.from(out);
    this.#routable = { state: this.state(), list };
    return list.slice();
  }

  /**
   * The weight of each token id as a glance row (the projections' `glanceRowWeights: "idf"`): ln((N + 1) / (df +
   * 0.5)) with df the number of the N routable skills whose kept keys include the token (every weight
   * > 0). Indexed by token id (ids past the array's end: df 0). Kept while neither the entries nor the
   * held keys change (shared: read, never write).
   */
  tokenIdf(): Float32Array {
    const c = this.#idf;
    if (c && !this.changedSince(c.state)) return c.idf;
    const idf = tokenIdfOf(this.store.entries(), this.#handleOf, new Set(this.routable()));
    this.#idf = { state: this.state(), idf };
    return idf;
  }

  /**
   * The id and name of the skill that key-bank handle `handle` holds (shared: read, never write). A
   * route labels every column of its glance, so the labels are kept while neither the entries nor the
   * held keys change: labelling and sorting 30K columns took 22–25 ms through the entries, 3.3–3.6 ms
   * from the cache (~30 ms for the first route after a change; bench/ranked.bench.ts).
   */
  label(handle: number): SkillLabel {
    let c = this.#labels;
    if (!c || this.changedSince(c.state)) c = this.#labels = { state: this.state(), of: [] };
    // by handle in an array (handles are the bank's small dense integers): a route labels every skill
    let l = Number.isInteger(handle) && handle >= 0 ? c.of[handle] : undefined;
    if (l === undefined) {
      const id = this.idOf(handle);
      l = { id, name: this.entry(id).name };
      if (Number.isInteger(handle) && handle >= 0) c.of[handle] = l;
    }
    return l;
  }

  /** The skill id that key-bank handle `handle` holds. */
  idOf(handle: number): string {
    const id = this.#idOf.get(handle);
    if (id === undefined) throw new Error(`no skill holds handle ${handle}`);
    return id;
  }

  /** The bank entry of an installed skill id (the caller knows it is installed). */
  entry(id: string): BankEntry {
    const e = this.store.get(id);
    if (!e) throw new Error(`no installed skill ${id}`);
    return e;
  }

  /**
   * The installed skill with this id, else the one with this name (both compared in NFC too).
   * @throws GavelError `INVALID_ARGUMENT` when no id matches and several skills have the name
   */
  find(idOrName: string): BankEntry | undefined {
    return findEntry(this.store, idOrName);
  }

  /** The text of an installed skill, as the verdict renders it. */
  text(entry: BankEntry): Promise<RenderableSkill> {
    return this.texts.get(entry.contentHash);
  }

  /**
   * Replaces an installed skill's warnings (the breadth probes' `hub:` flag), its keys, text and place
   * in the bank unchanged (no row is written, and the lexicon, which follows the bank's order, stays
   * in step). Durable at the next commit. False when `id` is not installed.
   */
  setWarnings(id: string, warnings: readonly string[]): Promise<boolean> {
    return this.store.setWarnings(id, warnings);
  }

  /**
   * Records an installed skill's front matter as `skill.meta` and its source as `skill.source` when the
   * entry's differ (an edit of the front matter alone, or the same skill installed from another file,
   * leaves the content hash, and so the keys, as they are; an entry of an older bank has no meta).
   * Durable at the next commit. False when nothing changed.
   */
  async refreshMeta(skill: Pick<Skill, "id" | "meta" | "source">): Promise<boolean> {
    const e = this.store.get(skill.id);
    if (!e || (sameMeta(e, skill.meta) && e.source === skill.source)) return false;
    return this.store.setMeta(skill.id, skill.meta, skill.source);
  }

  /**
   * Writes one encoded skill to disk: its text, then its entry and keys, and its terms to the
   * lexicon (staged until the next {@link commit}). The keys are not held in memory until {@link track}.
   * A replacement waits for the reads in flight; `signal` aborting meanwhile: ABORTED, nothing written.
   */
  async save(skill: Skill, record: SkillKeysRecord, keys: Float32Array, signal?: AbortSignal): Promise<void> {
    // Replacing a skill takes its old keys away (until track): not while a route reads them.
    if (this.store.has(skill.id)) return this.#rw.write(() => this.#save(skill, record, keys), signal, "Library.save");
    return this.#save(skill, record, keys);
  }

  async #save(skill: Skill, record: SkillKeysRecord, keys: Float32Array): Promise<void> {
    await this.texts.put(skill.contentHash, skill);
    await this.store.put(
      {
        id: skill.id,
        name: skill.name,
        description: skill.description,
        contentHash: skill.contentHash,
        source: skill.source,
        disableModelInvocation: skill.disableModelInvocation,
        ...(skill.warnings.length > 0 ? { warnings: skill.warnings } : {}),
        meta: skill.meta,
        ...record,
      },
      keys,
    );
    this.lexicon.put(skill, skill);
    // The replaced version's keys leave now; the caller tracks the new ones.
    this.untrack(skill.id);
  }

  /**
   * Makes the staged changes durable: the texts folder is synced (so the texts the manifest will
   * name survive a power cut), then the manifest is rewritten.
   */
  async commit(): Promise<void> {
    await this.texts.syncDir();
    await this.store.commit();
  }

  /**
   * After an install (an uninstall does it itself): rewrites the keys file without dead rows (of removed or replaced skills) once
   * they are at least as many as the live ones, so a bank edited over and over stays within about
   * twice its live size, and deletes texts no entry names. Not while damaged keys remain (their rows
   * cannot be copied) or for a snapshot. Resolves to whether the keys file was rewritten. `signal`
   * aborting while it waits for the reads in flight: ABORTED, nothing done.
   */
  async tidy(signal?: AbortSignal): Promise<boolean> {
    return this.readOnly ? false : this.#rw.write(() => this.#tidy(), signal, "Library.tidy");
  }

  async #tidy(): Promise<boolean> {
    const s = this.store.stats();
    const compact = this.#damaged.size === 0 && s.deadKeys > 0 && s.deadKeys >= s.keys;
    if (compact) await this.store.compact();
    await this.texts.prune(new Set(this.store.entries().map((e) => e.contentHash)));
    return compact;
  }

  /**
   * Removes an installed skill from disk and memory, commits, then tidies as {@link tidy} does; once
   * the routes in flight are done (they may need its keys, entry and text). `signal` aborting while
   * it waits for them: ABORTED, nothing removed.
   */
  async remove(id: string, signal?: AbortSignal): Promise<void> {
    return this.#rw.write(async () => {
      await this.store.remove(id);
      this.lexicon.remove(id);
      this.untrack(id);
      await this.store.commit();
      await this.#tidy();
    }, signal, "Library.remove");
  }

  /** Frees the keys in memory and closes the bank (committing it), once the reads in flight are done. */
  async close(): Promise<void> {
    return this.#rw.write(async () => {
      this.keys.dispose();
      try {
        // what a list showed is what the bank keeps: staged changes (a commit that failed) commit now
        if (!this.readOnly) await (this.store.dirty ? this.commit() : this.texts.syncDir());
      } finally {
        // The lock is released whatever the texts folder holds.
        await this.store.close();
      }
    });
  }
}
