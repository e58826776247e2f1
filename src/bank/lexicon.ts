/**
 * The bank's lexicon: a BM25 index of the routable skills' texts (name, description, body,
 * as `texts/` keeps them), kept in the bank beside the keys, so the lexical expert B never indexes the
 * library at route time. In memory it is a {@link LiveBm25Index}; on disk, `lexicon.bin`, a log of
 * ADD / REMOVE records (one skill's term counts, or its removal) and COMMIT records (lexicon-log.ts).
 *
 * Incremental: an install stages an ADD (a reinstall replaces, an uninstall or a skill that may not be
 * routed stages a REMOVE), and each bank commit appends the staged records and a COMMIT carrying the
 * manifest generation it lands with, fsynced before the manifest is written (the lexicon is a
 * {@link CommitParticipant} of the store). Appends go where the last COMMIT ended, so a failed or
 * interrupted commit's records are overwritten by the next one.
 *
 * Crash-safe: on open the records are replayed up to the COMMIT whose generation is the manifest's,
 * and nothing after it; a crash before the manifest lands leaves the previous COMMIT (the previous
 * manifest's), one after leaves the new one. When there is no such COMMIT (the file is missing, torn
 * before it, damaged, from another tokenizer, or behind a bank written by a version without a
 * lexicon), or the replayed skills are not the manifest's routable skills with their content hashes,
 * the lexicon is rebuilt from `texts/` and written whole (temp file, fsync, rename), and
 * {@link BankLexicon.rebuilt} says why. When dead records outweigh live ones, a commit rewrites the
 * file whole the same way, as the state of that commit.
 *
 * @module
 */
import { open, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { GavelError, clip, clipMessage } from "../errors.js";
import { BANK_FILE_MODE } from "./modes.js";
import { readRegularFile, RegularFileError } from "../gguf/regular-file.js";
import { DirSyncError, writeAll, writeFileDurable } from "../util/durable-file.js";
import { inOrder } from "../util/in-order.js";
import { LiveBm25Index } from "../lexical/live-index.js";
import { TOKENIZER_VERSION, type DocTerms } from "../lexical/postings.js";
import type { RenderableSkill } from "../render/index.js";
import { encodeAdd, encodeCommit, encodeHeader, encodeRemove, HEADER_BYTES, headerProblem, LEXICON_FILE, LEXICON_TMP_RE, readRecords, type AddRecord } from "./lexicon-log.js";
import type { BankStore } from "./store.js";
import type { TextStore } from "./texts.js";
import type { BankEntry, CommitParticipant } from "./types.js";

/** Largest lexicon read (~2 KB a skill; a larger file is rebuilt from the texts). */
export const MAX_LEXICON_BYTES = 1024 * 1024 * 1024;

/** Why and how the lexicon was rebuilt when the bank was opened. */
export interface LexiconRebuild {
  /** What was wrong with `lexicon.bin` (missing, damaged, out of step with the manifest, …). */
  reason: string;
  /** Skills indexed. */
  skills: number;
  /** Routable skills whose text the bank has lost (left out of the index; reinstall them). */
  lost: string[];
  seconds: number;
}

/** Options of {@link BankLexicon.open}. */
export interface LexiconOpenOptions {
  /** A commit rewrites the file whole when it holds more than this many bytes and twice its live records' (default 1 MiB). */
  compactBytes?: number;
}

type SkillRef = Pick<BankEntry, "id" | "contentHash" | "disableModelInvocation">;

/** What of a bank the lexicon is checked against: its manifest's generation and entries. */
export interface LexiconBankView {
  readonly generation: number;
  entries(): BankEntry[];
}

/** What {@link BankLexicon.inspect} read, without changing a byte. */
export interface LexiconInspection {
  /** Why the next open would rebuild the file (undefined when it would be used as is). */
  problem?: string;
  /** The index replayed up to the manifest's COMMIT (when there is no problem). */
  index: LiveBm25Index;
  /** Skills recorded as lost (tracked without terms). */
  lost: string[];
  /** Bytes after that COMMIT (an interrupted commit's records, dropped at the next open). */
  tail: number;
}

const NO_TERMS: DocTerms = { terms: new Int32Array(0), tfs: new Int32Array(0), length: 0 };

/** The lexicon of one open bank; see the module comment. */
export class BankLexicon implements CommitParticipant {
  readonly path: string;
  #index = new LiveBm25Index();
  #rebuilt: LexiconRebuild | undefined;
  /** Every tracked skill (indexed or lost) → its content hash. */
  #hashOf = new Map<string, string>();
  #lost = new Set<string>();
  /** Bytes of each tracked skill's ADD record, and their sum. */
  #recordBytes = new Map<string, number>();
  #liveBytes = 0;
  /** The file's bytes up to the COMMIT of the last generation that landed. */
  #committedEnd = 0;
  /** Records staged since then, in order. */
  #pending: Buffer[] = [];
  /** What the last prepare wrote: the file's new end and how many pending records it took. */
  #written: { end: number; records: number; whole: boolean } | undefined;
  /** The file cannot be appended to (a failed write): the next commit writes it whole. */
  #stale = false;
  readonly #compactBytes: number;

  private constructor(dir: string, options: LexiconOpenOptions) {
    this.path = join(dir, LEXICON_FILE);
    this.#compactBytes = options.compactBytes ?? 1 << 20;
  }

  /**
   * Reads the lexicon of `store`'s bank (rebuilding it from `texts` when it cannot be used) and joins
   * the store's commits. Call it right after opening the store, before anything is staged.
   */
  static async open(store: BankStore, texts: TextStore, options: LexiconOpenOptions = {}): Promise<BankLexicon> {
    const lex = new BankLexicon(store.dir, options);
    // Temp files of interrupted rewrites (we hold the bank's lock, so nobody else writes them).
    for (const name of await readdir(store.dir)) if (LEXICON_TMP_RE.test(name)) await rm(join(store.dir, name), { force: true });
    const problem = await lex.#load(store);
    if (problem !== undefined) await lex.#rebuild(store, texts, problem);
    store.join(lex);
    return lex;
  }

  /**
   * The lexicon of a snapshot (`BankStore.openSnapshot`): replayed up to the COMMIT of the snapshot's
   * generation, writing nothing (a writer may be appending past it). Undefined when it cannot be used
   * because the bank has moved on meanwhile (a writer rewrote the file whole, or pruned a text):
   * read the newer snapshot. Otherwise a file that cannot be used is rebuilt from the texts in memory
   * only ({@link BankLexicon.rebuilt} says why); the writer's next open rewrites it.
   */
  static async openSnapshot(store: BankStore, texts: TextStore): Promise<BankLexicon | undefined> {
    const lex = new BankLexicon(store.dir, {});
    const problem = await lex.#load(store, false);
    if (problem === undefined) return lex;
    if (await store.moved()) return undefined;
    await lex.#rebuild(store, texts, problem, false);
    if (lex.#lost.size > 0 && (await store.moved())) return undefined;
    return lex;
  }

  /**
   * Reads `lexicon.bin` of the bank in `dir` as an open would, up to the COMMIT of `bank`'s
   * generation, and says whether the open would use it or rebuild it; writes nothing (`gavel check`).
   */
  static async inspect(dir: string, bank: LexiconBankView): Promise<LexiconInspection> {
    const lex = new BankLexicon(dir, {});
    const problem = await lex.#load(bank, false);
    return { problem, index: lex.#index, lost: [...lex.#lost], tail: lex.#tail };
  }

  /** The index over the routable skills, in the bank's order. */
  get index(): LiveBm25Index {
    return this.#index;
  }

  /** Set when the open found `lexicon.bin` unusable and rebuilt it (not for a new, empty bank). */
  get rebuilt(): LexiconRebuild | undefined {
    return this.#rebuilt;
  }

  /** Skills whose text was lost at the last rebuild (tracked, not indexed). */
  get lost(): readonly string[] {
    return [...this.#lost];
  }

  /**
   * Stages a skill the bank has just staged (its text as installed; undefined when lost): an ADD, or
   * a REMOVE for a skill that may not be routed. A skill already tracked is replaced and moves to the
   * end, as the bank's entries do.
   */
  put(skill: SkillRef, text: Pick<RenderableSkill, "name" | "description" | "body"> | undefined): void {
    if (skill.disableModelInvocation) {
      this.remove(skill.id);
      return;
    }
    this.#forget(skill.id);
    let rec: Omit<AddRecord, "kind">;
    if (text === undefined) {
      this.#index.remove(skill.id);
      this.#lost.add(skill.id);
      rec = { id: skill.id, contentHash: skill.contentHash, lost: true, firstNewTerm: this.#index.vocabulary.size, newTerms: [], doc: NO_TERMS };
    } else {
      const { terms, firstNewTerm } = this.#index.add({ id: skill.id, name: text.name, description: text.description, body: text.body });
      const newTerms: string[] = [];
      for (let t = firstNewTerm; t < this.#index.vocabulary.size; t++) newTerms.push(this.#index.vocabulary.term(t));
      rec = { id: skill.id, contentHash: skill.contentHash, lost: false, firstNewTerm, newTerms, doc: terms };
    }
    const bytes = encodeAdd(rec);
    this.#track(skill.id, skill.contentHash, bytes.length);
    this.#pending.push(bytes);
  }

  /** Stages the removal of a skill (nothing when it is not tracked). */
  remove(id: string): void {
    if (!this.#hashOf.has(id)) return;
    this.#forget(id);
    this.#index.remove(id);
    this.#pending.push(encodeRemove(id));
  }

  #track(id: string, hash: string, bytes: number): void {
    this.#hashOf.set(id, hash);
    this.#recordBytes.set(id, bytes);
    this.#liveBytes += bytes;
  }

  /** Drops a skill's bookkeeping (not its postings). */
  #forget(id: string): void {
    this.#liveBytes -= this.#recordBytes.get(id) ?? 0;
    this.#recordBytes.delete(id);
    this.#hashOf.delete(id);
    this.#lost.delete(id);
  }

  /** Writes what is staged and a COMMIT of `generation`, durably; never throws (see {@link CommitParticipant}). */
  async prepare(generation: number): Promise<void> {
    this.#written = undefined;
    try {
      if (this.#stale) {
        this.#written = { end: await this.#writeWhole(generation), records: 0, whole: true };
        return;
      }
      const records = this.#pending.length;
      const bytes = Buffer.concat([...this.#pending, encodeCommit(generation, this.#hashOf.size, this.#index.vocabulary.size)]);
      const fh = await open(this.path, "r+");
      try {
        await writeAll(fh, bytes, this.#committedEnd);
        await fh.truncate(this.#committedEnd + bytes.length);
        await fh.sync();
      } finally {
        await fh.close();
      }
      this.#written = { end: this.#committedEnd + bytes.length, records, whole: false };
    } catch {
      // The next open finds no COMMIT of this generation and rebuilds; this process writes it whole.
      this.#stale = true;
    }
  }

  /** The manifest of `generation` landed: what prepare wrote is the committed state now. */
  async committed(generation: number): Promise<void> {
    const w = this.#written;
    this.#written = undefined;
    if (!w) return;
    this.#committedEnd = w.end;
    this.#pending.splice(0, w.records);
    if (w.whole) this.#stale = false;
    if (this.#pending.length === 0 && w.end > this.#compactBytes && w.end > 2 * this.#liveBytes) {
      try {
        this.#committedEnd = await this.#writeWhole(generation);
      } catch {
        // The file as appended is still valid.
      }
    }
  }

  /**
   * Replaces the file with the current state as of `generation` (what a rebuild writes), durably;
   * returns its length. Staged records are part of the state, so they are dropped.
   */
  async #writeWhole(generation: number): Promise<number> {
    const staged = this.#pending.length;
    this.#index.compact();
    const vocab = this.#index.vocabulary;
    const chunks: Buffer[] = [encodeHeader(TOKENIZER_VERSION)];
    this.#recordBytes.clear();
    this.#liveBytes = 0;
    const add = (id: string, rec: Omit<AddRecord, "kind" | "id" | "contentHash">) => {
      const b = encodeAdd({ id, contentHash: this.#hashOf.get(id)!, ...rec });
      this.#recordBytes.set(id, b.length);
      this.#liveBytes += b.length;
      chunks.push(b);
    };
    // After compact() terms are numbered by first appearance, so each skill's new terms are the ids
    // from the vocabulary's size so far up to its largest.
    let seen = 0;
    for (const id of this.#index.ids()) {
      const doc = this.#index.docTerms(id)!;
      let top = seen - 1;
      for (let j = 0; j < doc.terms.length; j++) top = Math.max(top, doc.terms[j]);
      const newTerms: string[] = [];
      for (let t = seen; t <= top; t++) newTerms.push(vocab.term(t));
      add(id, { lost: false, firstNewTerm: seen, newTerms, doc });
      seen = top + 1;
    }
    for (const id of this.#lost) add(id, { lost: true, firstNewTerm: seen, newTerms: [], doc: NO_TERMS });
    chunks.push(encodeCommit(generation, this.#hashOf.size, vocab.size));
    await writeFileDurable(this.path, chunks, { mode: BANK_FILE_MODE }).catch((err: unknown) => {
      // Renamed into place (only the folder's sync failed): this is the file now. The folder is the
      // bank's, synced again by the next manifest written; a power cut before that brings back the
      // file as it was, which an open replays or rebuilds.
      if (!(err instanceof DirSyncError)) throw err;
    });
    this.#pending.splice(0, staged);
    return chunks.reduce((a, c) => a + c.length, 0);
  }

  /** Bytes past the manifest's COMMIT found by the last #load. */
  #tail = 0;

  /**
   * Replays the file up to the manifest's COMMIT; undefined when done, else why it cannot be used.
   * With `truncate`, drops the bytes after that COMMIT.
   */
  // long function: one pass over the records, each case returning why the file cannot be used
  async #load(store: LexiconBankView, truncate = true): Promise<string | undefined> {
    let buf: Buffer;
    try {
      // A regular file (after links) within MAX_LEXICON_BYTES: a FIFO never blocks, a device is never read.
      buf = await readRegularFile(this.path, MAX_LEXICON_BYTES);
    } catch (err) {
      if (err instanceof RegularFileError && err.reason === "missing") return "it is missing";
      return `it cannot be read (${(err as Error).message})`;
    }
    const bad = headerProblem(buf, TOKENIZER_VERSION);
    if (bad) return bad;
    const generation = store.generation;
    const records = readRecords(buf);
    let lastCommit: number | undefined;
    let start = HEADER_BYTES;
    for (;;) {
      const r = records.next();
      if (r.done) {
        const at = lastCommit === undefined ? "it has no commit" : `its last commit is generation ${lastCommit}`;
        return `${r.value.stop ? `it stops at ${r.value.stop} and ` : ""}${at}, the bank's is ${generation}`;
      }
      const { record, end } = r.value;
      const bytes = end - start;
      start = end;
      try {
        if (record.kind === "commit") {
          lastCommit = record.generation;
          this.#checkCommit(record);
          if (record.generation > generation) return `it is ahead of the bank (generation ${record.generation}, the bank's is ${generation})`;
          if (record.generation === generation) {
            this.#committedEnd = end;
            break;
          }
        } else if (record.kind === "remove") this.remove(record.id);
        else this.#replayAdd(record, bytes);
      } catch (err) {
        return `a record ending at byte ${end} does not fit the ones before it (${(err as Error).message})`;
      }
    }
    this.#pending = [];
    const differs = this.#differsFrom(store);
    if (differs) return differs;
    this.#tail = buf.length - this.#committedEnd;
    if (truncate && buf.length > this.#committedEnd) {
      // An interrupted commit's records: drop them now (the next commit would overwrite them anyway).
      const fh = await open(this.path, "r+");
      await fh.truncate(this.#committedEnd).finally(() => fh.close());
    }
    return undefined;
  }

  #replayAdd(rec: AddRecord, bytes: number): void {
    const vocab = this.#index.vocabulary;
    if (rec.firstNewTerm !== vocab.size) throw new Error(`its new terms start at ${rec.firstNewTerm}, the vocabulary has ${vocab.size}`);
    vocab.append(rec.newTerms);
    const { terms, tfs, length } = rec.doc;
    let sum = 0;
    for (let j = 0; j < terms.length; j++) {
      if (!(terms[j] >= 0 && terms[j] < vocab.size) || !(tfs[j] >= 1)) throw new Error("a term id or count out of range");
      sum += tfs[j];
    }
    if (sum !== length) throw new Error(`its counts sum to ${sum}, not its ${length} tokens`);
    this.#forget(rec.id);
    this.#index.remove(rec.id);
    if (rec.lost) this.#lost.add(rec.id);
    else this.#index.addTerms(rec.id, rec.doc);
    this.#track(rec.id, rec.contentHash, bytes);
  }

  #checkCommit(c: { skills: number; vocabulary: number }): void {
    if (c.skills !== this.#hashOf.size || c.vocabulary !== this.#index.vocabulary.size) {
      throw new Error(`its commit counts ${c.skills} skills and ${c.vocabulary} terms, the records ${this.#hashOf.size} and ${this.#index.vocabulary.size}`);
    }
  }

  /** Why the replayed skills are not the bank's routable ones, in its order (undefined when they are). */
  #differsFrom(store: LexiconBankView): string | undefined {
    const routable = store.entries().filter((e) => !e.disableModelInvocation);
    if (routable.length !== this.#hashOf.size) return `it holds ${this.#hashOf.size} skills, the bank ${routable.length} routable ones`;
    for (const e of routable) {
      const h = this.#hashOf.get(e.id);
      if (h !== e.contentHash) return h === undefined ? `it lacks skill ${e.id}` : `it holds another version of skill ${e.id}`;
    }
    const ids = this.#index.ids();
    const order = routable.filter((e) => !this.#lost.has(e.id));
    if (order.some((e, i) => ids[i] !== e.id)) return "its skills are not in the bank's order";
    return undefined;
  }

  /** Indexes the routable skills of `store` from `texts` afresh and (with `write`) writes the file whole. */
  async #rebuild(store: BankStore, texts: TextStore, reason: string, write = true): Promise<void> {
    const t0 = performance.now();
    this.#index = new LiveBm25Index();
    this.#hashOf.clear();
    this.#lost.clear();
    this.#recordBytes.clear();
    this.#liveBytes = 0;
    const routable = store.entries().filter((e) => !e.disableModelInvocation);
    // Texts are read 32 at a time and indexed in the bank's order.
    await inOrder(routable, { width: 32 }, (e) => texts.get(e.contentHash), (e, got) => this.put(e, got.ok ? got.value : undefined));
    try {
      if (write) this.#committedEnd = await this.#writeWhole(store.generation);
    } catch (err) {
      // Something that is not a file holds the name (a directory, say): refuse, typed, naming it.
      throw new GavelError(`${clip(this.path)} cannot be rewritten (${clipMessage(err)}); move it aside and open the bank again`, "CORRUPT_FILE", { cause: err });
    }
    if (routable.length > 0 || reason !== "it is missing") {
      this.#rebuilt = { reason, skills: this.#index.size, lost: [...this.#lost], seconds: (performance.now() - t0) / 1000 };
    }
  }
}
