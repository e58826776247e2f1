/**
 * The installed library as one object: the bank on disk ({@link BankStore}), its keys in native
 * memory ({@link KeyBank}), the skill texts the verdict renders again ({@link TextStore}), the BM25
 * index of those texts that the lexical expert reads ({@link BankLexicon}), and the map between
 * skill ids and the key bank's handles. The router's stages read the library through it; install
 * and uninstall change it through it, so the five never drift apart.
 *
 * @module
 */
import type { Projections } from "../projections/projections.js";
import type { RenderableSkill } from "../render/index.js";
import type { Skill } from "../skills/index.js";
import { KeyBank } from "./key-bank.js";
import { BankLexicon } from "./lexicon.js";
import { BankStore } from "./store.js";
import { TextStore } from "./texts.js";
import { bankHeaderFor, type BankEntry, type RenderCut } from "./types.js";

/** Native memory read per batch when a library opens (see {@link Library.open}). */
const LOAD_BATCH_BYTES = 256 * 2 ** 20;

/** What install computed for one skill, as the bank records it beside the keys. */
export interface SkillKeysRecord {
  /** Token id of each key, and its position in r(s). */
  keyTokens: number[];
  keyPositions: number[];
  /** Tokens of r(s). */
  renderTokens: number;
  /** Where r(s) was cut, so the verdict renders the same text. */
  renderCut: RenderCut;
}

/** Opening options of {@link Library.open}. */
export interface LibraryOpenOptions {
  /** Create the bank if it does not exist. */
  create: boolean;
}

/** The installed library: bank on disk, keys in memory, texts, and the id ↔ handle maps. */
export class Library {
  readonly store: BankStore;
  readonly keys: KeyBank;
  readonly texts: TextStore;
  /** The BM25 index of the routable skills' texts, kept in the bank (lexicon.bin). */
  readonly lexicon: BankLexicon;
  #handleOf = new Map<string, number>();
  #idOf = new Map<number, string>();

  private constructor(store: BankStore, keys: KeyBank, texts: TextStore, lexicon: BankLexicon) {
    this.store = store;
    this.keys = keys;
    this.texts = texts;
    this.lexicon = lexicon;
  }

  /**
   * Opens (or creates) the bank in `dir` for these projections and loads every installed skill's
   * keys into native memory, and its lexicon (rebuilt from the texts when it cannot be used: see
   * {@link BankLexicon.rebuilt}). Fails as {@link BankStore.open} does (BANK_MISMATCH, BANK_LOCKED, …).
   */
  static async open(dir: string, projections: Projections, options: LibraryOpenOptions): Promise<Library> {
    const store = await BankStore.open(dir, bankHeaderFor(projections), { create: options.create });
    const keys = new KeyBank(projections.dim);
    try {
      const texts = new TextStore(store.dir);
      const library = new Library(store, keys, texts, await BankLexicon.open(store, texts));
      const dim = projections.dim;
      // In batches of 256 MiB: the native bank copies each skill's keys, so reading the whole bank
      // first would hold it twice.
      await store.forEachKeyBatch(LOAD_BATCH_BYTES, (batch) => {
        for (let s = 0; s < batch.entries.length; s++) {
          library.track(batch.entries[s].id, batch.keys.subarray(batch.offsets[s] * dim, batch.offsets[s + 1] * dim));
        }
      });
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
  }

  /** Drops skill `id`'s keys from memory (nothing when it has none). */
  untrack(id: string): void {
    const h = this.#handleOf.get(id);
    if (h === undefined) return;
    this.keys.remove(h);
    this.#handleOf.delete(id);
    this.#idOf.delete(h);
  }

  /** Whether the bank already holds this very skill (same id, same content, keys in memory). */
  isCurrent(skill: Pick<Skill, "id" | "contentHash">): boolean {
    const existing = this.store.get(skill.id);
    return existing !== undefined && existing.contentHash === skill.contentHash && this.#handleOf.has(skill.id);
  }

  /** Handles of the skills that may be chosen automatically, in bank order. */
  routable(): Int32Array {
    const out: number[] = [];
    for (const e of this.store.entries()) {
      const h = this.#handleOf.get(e.id);
      if (h !== undefined && !e.disableModelInvocation) out.push(h);
    }
    return Int32Array.from(out);
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

  /** The installed skill with this id, else the first one with this name. */
  find(idOrName: string): BankEntry | undefined {
    return this.store.get(idOrName) ?? this.store.entries().find((e) => e.name === idOrName);
  }

  /** The text of an installed skill, as the verdict renders it. */
  text(entry: BankEntry): Promise<RenderableSkill> {
    return this.texts.get(entry.contentHash);
  }

  /**
   * Writes one encoded skill to disk: its text, then its entry and keys, and its terms to the
   * lexicon (staged until the next {@link commit}). The keys are not held in memory until {@link track}.
   */
  async save(skill: Skill, record: SkillKeysRecord, keys: Float32Array): Promise<void> {
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
        ...record,
      },
      keys,
    );
    this.lexicon.put(skill, skill);
  }

  /**
   * Makes the staged changes durable: the texts folder is synced (so the texts the manifest will
   * name survive a power cut), then the manifest is rewritten.
   */
  async commit(): Promise<void> {
    await this.texts.syncDir();
    await this.store.commit();
  }

  /** Removes an installed skill from disk and memory, commits, and deletes texts no entry names. */
  async remove(id: string): Promise<void> {
    await this.store.remove(id);
    this.lexicon.remove(id);
    this.untrack(id);
    await this.store.commit();
    await this.texts.prune(new Set(this.store.entries().map((e) => e.contentHash)));
  }

  /** Frees the keys in memory and closes the bank (committing it). */
  async close(): Promise<void> {
    this.keys.dispose();
    try {
      await this.texts.syncDir();
    } finally {
      // The lock is released whatever the texts folder holds.
      await this.store.close();
    }
  }
}
