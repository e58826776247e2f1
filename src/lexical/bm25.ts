/**
 * Okapi BM25, the lexical baseline of `gavel eval`: every library skill's name, description and body
 * as one document, the whole task text as the query.
 *
 * Written here rather than taken from npm: the general-purpose engines are built for short
 * interactive queries, and MiniSearch (the best maintained) took about 115 s to index the 30.5K-skill
 * benchmark library and about 1.5 s per task-length query. This inverted index over typed arrays
 * does both in a small fraction of that, and its scoring is the textbook formula, tested by hand.
 */
import { invalidArgument } from "../errors.js";

/** A document of the index: what BM25 reads of a skill. */
export interface Bm25Doc {
  id: string;
  name: string;
  description: string;
  body?: string;
}

/** Parameters of BM25. */
export interface Bm25Options {
  /** Term-frequency saturation k1 (default 1.2, Lucene's). */
  k1?: number;
  /** Length normalisation b (default 0.75, Lucene's). */
  b?: number;
}

/** One ranked document. */
export interface Bm25Hit {
  id: string;
  score: number;
}

const TOKEN = /[\p{L}\p{N}]+/gu;

/**
 * Lower-cased runs of letters and digits. Underscores, dots and dashes split, so `audit_logs` and
 * `audit-logs.js` share `audit` and `logs` with prose; no stemming and no stop list, since the idf
 * already discounts words every skill uses.
 */
export function bm25Tokens(text: string): string[] {
  return text.toLowerCase().match(TOKEN) ?? [];
}

/**
 * An immutable BM25 index. Scores are
 * Σ_{t ∈ query} idf(t) · f(t,d)(k1+1) / (f(t,d) + k1(1 − b + b·|d|/avgdl)), with Lucene's
 * non-negative idf(t) = ln(1 + (N − n(t) + 0.5)/(n(t) + 0.5)). A word repeated in the query counts
 * each time (as Lucene and rank_bm25 do), so what a long task dwells on weighs more.
 */
export class Bm25Index {
  readonly k1: number;
  readonly b: number;
  readonly ids: readonly string[];
  #termOf = new Map<string, number>();
  /** Postings in CSR form: term t's documents (ascending) and counts are [#start[t], #start[t+1]). */
  #start: Int32Array;
  #doc: Int32Array;
  #tf: Int32Array;
  #len: Float64Array;
  #avgLen: number;

  constructor(docs: readonly Bm25Doc[], options: Bm25Options = {}) {
    this.k1 = options.k1 ?? 1.2;
    this.b = options.b ?? 0.75;
    if (!(this.k1 >= 0) || !(this.b >= 0 && this.b <= 1)) throw invalidArgument("bm25: k1 must be ≥ 0 and b in [0, 1]");
    this.ids = docs.map((d) => d.id);
    this.#len = new Float64Array(docs.length);
    // Postings are gathered as (term, doc, count) triples in growable typed arrays and laid out by
    // term at the end: the benchmark library has ~10M of them, which number[] lists per term or a
    // Map per document would hold in several times the memory and time.
    const triples = new Triples();
    let counts = new Int32Array(1024);
    const touched: number[] = [];
    let total = 0;
    docs.forEach((d, i) => {
      const tokens = bm25Tokens(`${d.name}\n${d.description}\n${d.body ?? ""}`);
      this.#len[i] = tokens.length;
      total += tokens.length;
      for (const tok of tokens) {
        let t = this.#termOf.get(tok);
        if (t === undefined) {
          t = this.#termOf.size;
          this.#termOf.set(tok, t);
          if (t >= counts.length) {
            const grown = new Int32Array(counts.length * 2);
            grown.set(counts);
            counts = grown;
          }
        }
        if (counts[t]++ === 0) touched.push(t);
      }
      for (const t of touched) {
        triples.push(t, i, counts[t]);
        counts[t] = 0;
      }
      touched.length = 0;
    });
    const nTerms = this.#termOf.size;
    this.#start = new Int32Array(nTerms + 1);
    for (let j = 0; j < triples.length; j++) this.#start[triples.term[j] + 1]++;
    for (let t = 0; t < nTerms; t++) this.#start[t + 1] += this.#start[t];
    const fill = this.#start.slice(0, nTerms);
    this.#doc = new Int32Array(triples.length);
    this.#tf = new Int32Array(triples.length);
    // Triples come in document order, so each term's documents stay ascending.
    for (let j = 0; j < triples.length; j++) {
      const at = fill[triples.term[j]]++;
      this.#doc[at] = triples.doc[j];
      this.#tf[at] = triples.tf[j];
    }
    this.#avgLen = docs.length > 0 ? total / docs.length : 0;
  }

  /** Number of documents. */
  get size(): number {
    return this.ids.length;
  }

  /** BM25 of every document for `query` (0 where no query word occurs), in document order. */
  scores(query: string): Float64Array {
    const n = this.ids.length;
    const out = new Float64Array(n);
    const { k1, b } = this;
    const avg = this.#avgLen || 1;
    // A word repeated in the query counts each time: its postings are walked once, times its count
    // (a task of a few hundred words repeats most of them; this is what keeps a route's B cheap).
    const queryCount = new Map<number, number>();
    for (const tok of bm25Tokens(query)) {
      const t = this.#termOf.get(tok);
      if (t !== undefined) queryCount.set(t, (queryCount.get(t) ?? 0) + 1);
    }
    for (const [t, q] of queryCount) {
      const from = this.#start[t];
      const to = this.#start[t + 1];
      const df = to - from;
      const w = q * Math.log(1 + (n - df + 0.5) / (df + 0.5)) * (k1 + 1);
      const norm = (k1 * b) / avg;
      const base = k1 * (1 - b);
      for (let j = from; j < to; j++) {
        const f = this.#tf[j];
        const d = this.#doc[j];
        out[d] += (w * f) / (f + base + norm * this.#len[d]);
      }
    }
    return out;
  }

  /**
   * The `k` best documents for `query`, best first; ties (equal scores) keep library order so runs
   * are reproducible. Documents sharing no word with the query are not returned.
   */
  search(query: string, k = 20): Bm25Hit[] {
    const s = this.scores(query);
    const hits: number[] = [];
    for (let i = 0; i < s.length; i++) if (s[i] > 0) hits.push(i);
    hits.sort((x, y) => s[y] - s[x] || x - y);
    return hits.slice(0, k).map((i) => ({ id: this.ids[i], score: s[i] }));
  }
}

/** Growable parallel Int32Arrays of (term, doc, count). */
class Triples {
  term = new Int32Array(1 << 16);
  doc = new Int32Array(1 << 16);
  tf = new Int32Array(1 << 16);
  length = 0;

  push(term: number, doc: number, tf: number): void {
    if (this.length === this.term.length) {
      const grow = (a: Int32Array) => {
        const g = new Int32Array(a.length * 2);
        g.set(a);
        return g;
      };
      this.term = grow(this.term);
      this.doc = grow(this.doc);
      this.tf = grow(this.tf);
    }
    this.term[this.length] = term;
    this.doc[this.length] = doc;
    this.tf[this.length] = tf;
    this.length++;
  }
}
