/**
 * Okapi BM25, the lexical baseline of `gavel eval`: every library skill's name, description and body
 * as one document, the whole task text as the query.
 *
 * Written here rather than taken from npm: the general-purpose engines are built for short
 * interactive queries, and MiniSearch (the best maintained) took about 115 s to index the 30.5K-skill
 * benchmark library and about 1.5 s per task-length query. This inverted index over typed arrays
 * does both in a small fraction of that, and its scoring is the textbook formula, tested by hand.
 * The tokenizer, the postings and the scoring loop live in postings.ts, shared with the live index
 * the bank keeps (live-index.ts).
 */
import { accumulateBm25, bm25Ceiling, bm25DocTokens, bm25Params, postingsByTerm, queryTerms, TermCounter, Vocabulary, type Bm25Doc, type Bm25Options, type DocTerms, type Postings } from "./postings.js";
import { clip, invalidArgument } from "../errors.js";
import { checkInt, describeValue, optionsObject } from "../util/validate.js";

export { bm25Tokens, type Bm25Doc, type Bm25Options } from "./postings.js";

/** One ranked document. */
export interface Bm25Hit {
  id: string;
  score: number;
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
  #vocab = new Vocabulary();
  #postings: Postings;
  #len: Float64Array;
  #avgLen: number;

  /**
   * @param docs - the documents, each with a string `id`, `name` and `description` and an optional
   *   string `body`; no two with the same `id` (a library names each skill once, as `loadSkills` and
   *   the bank keep it; an id twice would rank twice, and the index is built whole, so there is no
   *   later document to replace an earlier one with).
   * @throws GavelError `INVALID_ARGUMENT` naming the document and field when `docs` is not an array of
   *   such documents, naming both documents when two share an id, or on a bad option ({@link Bm25Options}).
   */
  constructor(docs: readonly Bm25Doc[], options: Bm25Options = {}) {
    ({ k1: this.k1, b: this.b } = bm25Params(options));
    if (!Array.isArray(docs)) throw invalidArgument(`Bm25Index: documents must be an array, got ${describeValue(docs)}`);
    const first = new Map<string, number>();
    for (let i = 0; i < docs.length; i++) {
      checkBm25Doc(docs[i], `Bm25Index: documents[${i}]`);
      const j = first.get(docs[i].id);
      if (j !== undefined) throw invalidArgument(`Bm25Index: documents[${i}].id ${JSON.stringify(clip(docs[i].id))} repeats documents[${j}].id (each id names one document)`);
      first.set(docs[i].id, i);
    }
    this.ids = docs.map((d) => d.id);
    this.#len = new Float64Array(docs.length);
    const counter = new TermCounter();
    let total = 0;
    const terms: DocTerms[] = docs.map((d, i) => {
      const dt = counter.count(bm25DocTokens(d), this.#vocab);
      this.#len[i] = dt.length;
      total += dt.length;
      return dt;
    });
    this.#postings = postingsByTerm(this.#vocab.size, terms);
    this.#avgLen = docs.length > 0 ? total / docs.length : 0;
  }

  /** Number of documents. */
  get size(): number {
    return this.ids.length;
  }

  /**
   * BM25 of every document for `query` (0 where no query word occurs), in document order. `params`
   * scores with other k1 / b than the index's (they are read at query time, not indexed).
   *
   * @throws GavelError `INVALID_ARGUMENT` when `query` is not a string or `params` not
   *   {@link Bm25Options}
   */
  scores(query: string, params?: Bm25Options): Float64Array {
    checkQuery(query, "Bm25Index.scores");
    const { k1, b } = this.#params(params);
    const out = new Float64Array(this.ids.length);
    const stats = { k1, b, n: this.ids.length, avgLen: this.#avgLen };
    accumulateBm25(out, queryTerms(query, this.#vocab), [this.#postings], undefined, stats, this.#len);
    return out;
  }

  /**
   * The most any document could score for `query` ({@link bm25Ceiling}): the denominator of the
   * lexical coverage. `params.k1` as in {@link scores} (b does not enter it).
   */
  ceiling(query: string, params?: Bm25Options): number {
    checkQuery(query, "Bm25Index.ceiling");
    const { k1 } = this.#params(params);
    const p = this.#postings;
    return bm25Ceiling(query, this.#vocab, (t) => p.start[t + 1] - p.start[t], this.ids.length, k1);
  }

  /** The k1 and b of a query: `params`' where it gives them (checked as {@link Bm25Options}), else the index's. */
  #params(params: Bm25Options | undefined): { k1: number; b: number } {
    if (params === undefined) return this;
    const o = optionsObject(params, "bm25 options", { k1: true, b: true }) as Bm25Options;
    return bm25Params({ k1: o.k1 ?? this.k1, b: o.b ?? this.b });
  }

  /**
   * The `k` best documents for `query`, best first; ties (equal scores) keep library order so runs
   * are reproducible. Documents sharing no word with the query are not returned.
   */
  search(query: string, k = 20, params?: Bm25Options): Bm25Hit[] {
    checkQuery(query, "Bm25Index.search");
    checkInt(k, "k", 0);
    const s = this.scores(query, params);
    const hits: number[] = [];
    for (let i = 0; i < s.length; i++) if (s[i] > 0) hits.push(i);
    hits.sort((x, y) => s[y] - s[x] || x - y);
    return hits.slice(0, k).map((i) => ({ id: this.ids[i], score: s[i] }));
  }
}

/**
 * Checks one document of an index: an object with a string `id`, `name` and `description`, and a
 * `body` that is a string or absent (undefined). `what` names it in the message.
 *
 * @throws GavelError `INVALID_ARGUMENT` naming the document and the field
 */
export function checkBm25Doc(doc: unknown, what: string): asserts doc is Bm25Doc {
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) throw invalidArgument(`${what} must be an object with id, name and description, got ${describeValue(doc)}`);
  const d = doc as Record<string, unknown>;
  for (const field of ["id", "name", "description"] as const) {
    if (typeof d[field] !== "string") throw invalidArgument(`${what}.${field} must be a string, got ${describeValue(d[field])}`);
  }
  if (d.body !== undefined && typeof d.body !== "string") throw invalidArgument(`${what}.body must be a string or absent, got ${describeValue(d.body)}`);
}

function checkQuery(query: unknown, what: string): void {
  if (typeof query !== "string") throw invalidArgument(`${what}: query must be a string, got ${describeValue(query)}`);
}
