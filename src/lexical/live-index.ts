/**
 * A BM25 index that documents join and leave one at a time, for the bank's lexicon: BM25's
 * N, avgdl and df are kept as counts that an addition adds to and a removal subtracts from, and the
 * scores equal those of a {@link Bm25Index} built afresh over the same documents in the same order,
 * bit for bit (one scoring loop, postings.ts).
 *
 * Layout: every document holds a slot (in order of addition; a replaced document takes a new one at
 * the end) and keeps its own term counts. For scoring, postings are laid out by term in two segments:
 * the base, over the slots that existed at its last layout (it keeps the postings of documents removed
 * since: their slots' sums are dropped, and df does not count them), and the recent additions after
 * it. The additions' segment is laid out again after a change; the base (and the slots, renumbered
 * without holes) once the additions or the removed postings reach a quarter of it, so a query costs
 * what one over a fresh index costs and a change costs in proportion to itself.
 *
 * @module
 */
import { checkBm25Doc } from "./bm25.js";
import { accumulateBm25, bm25Ceiling, bm25DocTokens, bm25Params, postingsByTerm, queryTerms, TermCounter, Vocabulary, type Bm25Doc, type Bm25Options, type DocTerms, type Postings, type QueryText } from "./postings.js";

/** What the base segment tolerates (as a fraction of its postings) before it is laid out again. */
const RELAYOUT_FRACTION = 0.25;

/** A mutable BM25 index over documents keyed by id; see the module comment. */
export class LiveBm25Index {
  readonly k1: number;
  readonly b: number;
  #vocab = new Vocabulary();
  #counter = new TermCounter();
  #slotOf = new Map<string, number>();
  #idAt: (string | undefined)[] = [];
  #docAt: (DocTerms | undefined)[] = [];
  #len: Float64Array = new Float64Array(64);
  #df: Int32Array = new Int32Array(1024);
  #totalLen = 0;
  #postings = 0;
  /** Postings laid out by term over slots [0, #baseEnd), and its count of postings. */
  #base: Postings | undefined;
  #baseEnd = 0;
  #basePostings = 0;
  /** Postings in the base of documents removed since it was laid out. */
  #deadBase = 0;
  /** Postings over slots [#baseEnd, end); undefined when stale. */
  #recent: Postings | undefined;
  #ids: readonly string[] | undefined;
  #version = 0;

  constructor(options: Bm25Options = {}) {
    ({ k1: this.k1, b: this.b } = bm25Params(options));
  }

  /** The terms seen so far (terms of removed documents stay until {@link compact}). */
  get vocabulary(): Vocabulary {
    return this.#vocab;
  }

  /** Number of documents. */
  get size(): number {
    return this.#slotOf.size;
  }

  /** Postings (distinct terms summed over documents). */
  get postings(): number {
    return this.#postings;
  }

  /** Increases with every change, so derived data (a row map of {@link ids}) can be kept until then. */
  get version(): number {
    return this.#version;
  }

  has(id: string): boolean {
    return this.#slotOf.has(id);
  }

  /** A document's term counts (term ids of {@link vocabulary}), or undefined. */
  docTerms(id: string): DocTerms | undefined {
    const s = this.#slotOf.get(id);
    return s === undefined ? undefined : this.#docAt[s];
  }

  /**
   * Tokenizes a document and adds it (replacing one with the same id, which then moves to the end).
   * Returns its term counts; terms with ids from `firstNewTerm` on were new to the vocabulary.
   */
  add(doc: Bm25Doc): { terms: DocTerms; firstNewTerm: number } {
    checkBm25Doc(doc, "LiveBm25Index.add: document");
    this.remove(doc.id);
    const firstNewTerm = this.#vocab.size;
    const terms = this.#counter.count(bm25DocTokens(doc), this.#vocab);
    this.addTerms(doc.id, terms);
    return { terms, firstNewTerm };
  }

  /** Adds a document already counted against {@link vocabulary} (replacing one with the same id). */
  addTerms(id: string, doc: DocTerms): void {
    this.remove(id);
    const slot = this.#idAt.length;
    if (slot >= this.#len.length) this.#len = grow(this.#len, slot + 1);
    if (this.#vocab.size > this.#df.length) this.#df = grow(this.#df, this.#vocab.size);
    this.#idAt.push(id);
    this.#docAt.push(doc);
    this.#slotOf.set(id, slot);
    this.#len[slot] = doc.length;
    for (let j = 0; j < doc.terms.length; j++) this.#df[doc.terms[j]]++;
    this.#totalLen += doc.length;
    this.#postings += doc.terms.length;
    this.#recent = undefined;
    this.#changed();
  }

  /** Removes a document; false when there is none with this id. */
  remove(id: string): boolean {
    const slot = this.#slotOf.get(id);
    if (slot === undefined) return false;
    const doc = this.#docAt[slot]!;
    for (let j = 0; j < doc.terms.length; j++) this.#df[doc.terms[j]]--;
    this.#totalLen -= doc.length;
    this.#postings -= doc.terms.length;
    this.#slotOf.delete(id);
    this.#idAt[slot] = undefined;
    this.#docAt[slot] = undefined;
    if (slot < this.#baseEnd) this.#deadBase += doc.terms.length;
    else this.#recent = undefined;
    this.#changed();
    return true;
  }

  #changed(): void {
    this.#ids = undefined;
    this.#version++;
  }

  /** The documents' ids in slot order (order of addition): the order of {@link scores}. */
  ids(): readonly string[] {
    if (!this.#ids) this.#ids = Object.freeze(this.#idAt.filter((id): id is string => id !== undefined));
    return this.#ids;
  }

  /**
   * BM25 of every document for `query` (0 where no query word occurs), in the order of {@link ids}.
   * `params` scores with other k1 / b than the index's (they are read at query time, not indexed).
   */
  scores(query: QueryText, params?: Bm25Options): Float64Array {
    const { k1, b } = params ? bm25Params({ k1: params.k1 ?? this.k1, b: params.b ?? this.b }) : this;
    const segments = this.#layout();
    const slots = this.#idAt.length;
    const out = new Float64Array(slots);
    const n = this.size;
    const stats = { k1, b, n, avgLen: n > 0 ? this.#totalLen / n : 0 };
    accumulateBm25(out, queryTerms(query, this.#vocab), segments, this.#df, stats, this.#len);
    if (n === slots) return out;
    const packed = new Float64Array(n);
    for (let s = 0, i = 0; s < slots; s++) if (this.#idAt[s] !== undefined) packed[i++] = out[s];
    return packed;
  }

  /**
   * The most any document could score for `query` ({@link bm25Ceiling}), with the same n(t) and N as
   * {@link scores}: the denominator of the lexical coverage. `params.k1` as in {@link scores}.
   */
  ceiling(query: QueryText, params?: Bm25Options): number {
    const { k1 } = params ? bm25Params({ k1: params.k1 ?? this.k1, b: params.b ?? this.b }) : this;
    const df = this.#df;
    return bm25Ceiling(query, this.#vocab, (t) => (t < df.length ? df[t] : 0), this.size, k1);
  }

  /** The segments to score, laid out again where stale (see the module comment). */
  #layout(): Postings[] {
    const recentPostings = this.#postings - (this.#basePostings - this.#deadBase);
    const limit = RELAYOUT_FRACTION * this.#basePostings;
    if (!this.#base || this.#deadBase > limit || recentPostings > limit) {
      this.#packSlots();
      this.#base = postingsByTerm(this.#vocab.size, this.#docAt);
      this.#baseEnd = this.#idAt.length;
      this.#basePostings = this.#postings;
      this.#deadBase = 0;
      this.#recent = undefined;
    }
    if (this.#baseEnd === this.#idAt.length) return [this.#base];
    this.#recent ??= postingsByTerm(this.#vocab.size, this.#docAt, this.#baseEnd, this.#idAt.length);
    return [this.#base, this.#recent];
  }

  /** Renumbers the slots without holes, in their order. */
  #packSlots(): void {
    if (this.#idAt.length === this.size) return;
    const ids: string[] = [];
    const docs: DocTerms[] = [];
    for (let s = 0; s < this.#idAt.length; s++) {
      const id = this.#idAt[s];
      if (id === undefined) continue;
      this.#slotOf.set(id, ids.length);
      this.#len[ids.length] = this.#docAt[s]!.length;
      ids.push(id);
      docs.push(this.#docAt[s]!);
    }
    this.#idAt = ids;
    this.#docAt = docs;
  }

  /**
   * Renumbers terms by first appearance over the documents in order, dropping terms no document
   * holds, and the slots without holes: the index is then laid out exactly as one built afresh by
   * adding its documents in order. Term ids change (their strings do not).
   */
  compact(): void {
    this.#packSlots();
    const old = this.#vocab;
    const vocab = new Vocabulary();
    const map = new Int32Array(old.size).fill(-1);
    this.#docAt = this.#docAt.map((d) => {
      const terms = new Int32Array(d!.terms.length);
      for (let j = 0; j < terms.length; j++) {
        const t = d!.terms[j];
        if (map[t] < 0) map[t] = vocab.intern(old.term(t));
        terms[j] = map[t];
      }
      // (counts copied too: a document read back holds views of the whole file's bytes)
      return { terms, tfs: d!.tfs.slice(), length: d!.length };
    });
    const df = new Int32Array(Math.max(1024, vocab.size));
    for (let t = 0; t < old.size; t++) if (map[t] >= 0) df[map[t]] = this.#df[t];
    this.#vocab = vocab;
    this.#df = df;
    this.#base = undefined;
    this.#baseEnd = this.#basePostings = this.#deadBase = 0;
    this.#recent = undefined;
    this.#changed();
  }
}

function grow<T extends Int32Array | Float64Array>(a: T, atLeast: number): T {
  const g = new (a.constructor as new (n: number) => T)(Math.max(a.length * 2, atLeast));
  g.set(a as ArrayLike<number>);
  return g;
}
