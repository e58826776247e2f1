/**
 * The BM25 core that the immutable index ({@link Bm25Index}, bm25.ts) and the live one
 * ({@link LiveBm25Index}, live-index.ts) share: the tokenizer, the vocabulary, a document's term counts,
 * postings laid out by term (CSR) and the one scoring loop. Both indexes score through
 * {@link accumulateBm25}, so the same documents give the same bits in either.
 *
 * @module
 */
import { invalidArgument } from "../errors.js";
import { checkFinite, optionsObject } from "../util/validate.js";
import { config } from "../config.js";
import { pasteText, pasteWeight, taskPaste, type PasteSplit } from "./paste.js";

/** A document of the index: what BM25 reads of a skill. */
export interface Bm25Doc {
  id: string;
  name: string;
  description: string;
  body?: string;
}

/** Parameters of BM25. */
export interface Bm25Options {
  /** Term-frequency saturation k1, a finite number ≥ 0 (default 1.2, Lucene's). */
  k1?: number;
  /** Length normalisation b, a number in [0, 1] (default 0.75, Lucene's). */
  b?: number;
}

/** {@link Bm25Options} checked by key and value (INVALID_ARGUMENT naming the option), with their defaults. */
export function bm25Params(options: Bm25Options = {}): { k1: number; b: number } {
  const o = optionsObject(options, "bm25 options", { k1: true, b: true });
  const k1 = o.k1 === undefined ? 1.2 : checkFinite(o.k1, "bm25: k1", { min: 0 });
  const b = o.b === undefined ? 0.75 : checkFinite(o.b, "bm25: b", { min: 0 });
  if (b > 1) throw invalidArgument(`bm25: b must be in [0, 1], got ${b}`);
  return { k1, b };
}

/** A word: letters, their combining marks and digits (a mark inside a word does not split it). */
const TOKEN = /[\p{L}\p{M}\p{N}]+/gu;

/**
 * Version of {@link bm25Tokens} and {@link bm25DocTokens}: an index kept on disk (the bank's
 * lexicon) records it and is rebuilt when it changes. Bump it with any change to either.
 * 2: combining marks stay in their word, and the text is NFC-normalised first.
 */
export const TOKENIZER_VERSION = 2;

/**
 * Lower-cased runs of letters (with their combining marks) and digits, of the text in NFC.
 * Underscores, dots and dashes split, so `audit_logs` and `audit-logs.js` share `audit` and `logs`
 * with prose; no stemming and no stop list, since the idf already discounts words every skill uses.
 * Marks keep scripts that write vowels with them (Devanagari, Thai, Arabic's vowel signs) in whole
 * words, and NFC makes a decomposed "café" the precomposed one.
 */
export function bm25Tokens(text: string): string[] {
  return text.normalize("NFC").toLowerCase().match(TOKEN) ?? [];
}

/** The tokens of a document: its name, description and body as one text. */
export function bm25DocTokens(d: Pick<Bm25Doc, "name" | "description" | "body">): string[] {
  return bm25Tokens(`${d.name}\n${d.description}\n${d.body ?? ""}`);
}

/** FNV-1a over a string's UTF-16 code units (an unsigned 32-bit integer). */
export function termHash(term: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < term.length; i++) h = Math.imul(h ^ term.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/**
 * The position of `word`'s {@link termHash} in `hashes` (strictly ascending, as a word table stores
 * them: the reference idf's, the domain score's), or −1 when the table does not hold it.
 */
export function hashIndex(hashes: Uint32Array, word: string): number {
  const h = termHash(word);
  let lo = 0, hi = hashes.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const x = hashes[mid];
    if (x === h) return mid;
    if (x < h) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/**
 * Terms ↔ dense ids, in order of first use. Lookups go through an open-addressing table of ids over
 * typed arrays (a Map of the benchmark library's 1.5M terms took ~0.8 s to fill; this, ~0.15 s).
 * Terms added by {@link Vocabulary.append} (a record read back) join the table at the next lookup,
 * so a vocabulary read from disk costs nothing until a query or a new document needs it.
 */
export class Vocabulary {
  #terms: string[] = [];
  #hashes = new Int32Array(1024);
  /** Term ids by hash slot (−1: empty); at most half full. */
  #table = new Int32Array(2048).fill(-1);
  /** Terms [0, #indexed) are in the table. */
  #indexed = 0;

  /** Number of terms. */
  get size(): number {
    return this.#terms.length;
  }

  /** The term of id `t`. */
  term(t: number): string {
    return this.#terms[t];
  }

  /** The id of `term`, or undefined when it was never seen. */
  id(term: string): number | undefined {
    this.#index();
    const h = termHash(term);
    const mask = this.#table.length - 1;
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const t = this.#table[i];
      if (t < 0) return undefined;
      if (this.#terms[t] === term) return t;
    }
  }

  /** The id of `term`, given the next id when it is new. */
  intern(term: string): number {
    this.#index();
    const h = termHash(term);
    const mask = this.#table.length - 1;
    let i = h & mask;
    for (let t = this.#table[i]; t >= 0; i = (i + 1) & mask, t = this.#table[i]) if (this.#terms[t] === term) return t;
    const t = this.#terms.length;
    this.#terms.push(term);
    if (t >= this.#hashes.length) this.#grow();
    this.#hashes[t] = h;
    this.#table[i] = t;
    this.#indexed = t + 1;
    if (2 * this.#indexed > this.#table.length) this.#index();
    return t;
  }

  /** Appends terms the caller knows to be new (a record read back), with the next ids. */
  append(terms: readonly string[]): void {
    for (const term of terms) this.#terms.push(term);
  }

  #grow(): void {
    const h = new Int32Array(Math.max(this.#hashes.length * 2, this.#terms.length));
    h.set(this.#hashes);
    this.#hashes = h;
  }

  /** Puts every term in the table, growing it to stay at most half full. */
  #index(): void {
    const n = this.#terms.length;
    if (this.#indexed === n && 2 * n <= this.#table.length) return;
    if (n > this.#hashes.length) this.#grow();
    for (let t = this.#indexed; t < n; t++) this.#hashes[t] = termHash(this.#terms[t]);
    let from = this.#indexed;
    if (2 * n > this.#table.length) {
      let cap = this.#table.length;
      while (2 * n > cap) cap *= 2;
      this.#table = new Int32Array(cap).fill(-1);
      from = 0;
    }
    const mask = this.#table.length - 1;
    for (let t = from; t < n; t++) {
      let i = this.#hashes[t] & mask;
      while (this.#table[i] >= 0) i = (i + 1) & mask;
      this.#table[i] = t;
    }
    this.#indexed = n;
  }
}

/** A document as term ids: its distinct terms (in order of first appearance), their counts, its length. */
export interface DocTerms {
  readonly terms: Int32Array;
  readonly tfs: Int32Array;
  /** Tokens of the document (Σ tfs). */
  readonly length: number;
}

/** Counts a document's terms, interning new ones (a scratch array reused from document to document). */
export class TermCounter {
  #counts = new Int32Array(1024);
  #touched: number[] = [];

  count(tokens: readonly string[], vocab: Vocabulary): DocTerms {
    const touched = this.#touched;
    for (const tok of tokens) {
      const t = vocab.intern(tok);
      if (t >= this.#counts.length) {
        const grown = new Int32Array(Math.max(this.#counts.length * 2, t + 1));
        grown.set(this.#counts);
        this.#counts = grown;
      }
      if (this.#counts[t]++ === 0) touched.push(t);
    }
    const terms = Int32Array.from(touched);
    const tfs = new Int32Array(terms.length);
    for (let j = 0; j < terms.length; j++) {
      tfs[j] = this.#counts[terms[j]];
      this.#counts[terms[j]] = 0;
    }
    touched.length = 0;
    return { terms, tfs, length: tokens.length };
  }
}

/** Postings in CSR form: term t's documents (ascending) and counts are at [start[t], start[t+1]). */
export interface Postings {
  readonly start: Int32Array;
  readonly doc: Int32Array;
  readonly tf: Int32Array;
}

/**
 * Lays out `docs[from..to)` by term, for terms [0, nTerms); a document's number in the postings is
 * its index in `docs`. Undefined documents (removed) are skipped.
 */
export function postingsByTerm(nTerms: number, docs: readonly (DocTerms | undefined)[], from = 0, to = docs.length): Postings {
  const start = new Int32Array(nTerms + 1);
  for (let i = from; i < to; i++) {
    const terms = docs[i]?.terms;
    if (terms) for (let j = 0; j < terms.length; j++) start[terms[j] + 1]++;
  }
  for (let t = 0; t < nTerms; t++) start[t + 1] += start[t];
  const fill = start.slice(0, nTerms);
  const doc = new Int32Array(start[nTerms]);
  const tf = new Int32Array(start[nTerms]);
  // Documents are visited in order, so each term's documents come out ascending.
  for (let i = from; i < to; i++) {
    const d = docs[i];
    if (!d) continue;
    for (let j = 0; j < d.terms.length; j++) {
      const at = fill[d.terms[j]]++;
      doc[at] = i;
      tf[at] = d.tfs[j];
    }
  }
  return { start, doc, tf };
}

/**
 * A query as BM25 reads it: its text, and how its paste is read ({@link QueryPaste}), read at the first
 * ask and kept with the query. A route makes one per task ({@link bm25Query} with the split it made
 * for the glance) and hands it to every BM25 read of the task (B, the ceiling, the re-ranker's
 * BM25, the result's word weight), so each reads the same weights and the task is split and tokenized
 * once, whatever its size; the reading lives as long as the query, nothing is kept beside it.
 */
export interface Bm25Query {
  readonly text: string;
  /** The query's paste reading: undefined when every word counts at 1. */
  paste(): QueryPaste | undefined;
}

/** A query's text, or the text with its paste reading ({@link Bm25Query}); a text is read anew at each call. */
export type QueryText = string | Bm25Query;

/**
 * {@link Bm25Query} of `text`. `made.split`: the paste split the caller already made of the text
 * ({@link taskPaste}; undefined: nothing pasted); without `made`, the query splits its text at the first
 * ask.
 */
export function bm25Query(text: string, made?: { split: PasteSplit | undefined }): Bm25Query {
  let read: { paste: QueryPaste | undefined } | undefined;
  return {
    text,
    paste: () => (read ??= { paste: readQueryPaste(text, made) }).paste,
  };
}

/**
 * The query's words ({@link bm25Tokens}) with the weight each counts at: 1, except a pasted word
 * (src/lexical/paste.ts) of a query whose paste outweighs its request, which counts at
 * request words / paste words ({@link pasteWeight}; GAVEL_PASTE_WEIGHT=off reads every word at 1).
 * Calls `f` for each word in order.
 */
export function forEachQueryToken(query: QueryText, f: (tok: string, weight: number) => void): void {
  const read = typeof query === "string" ? queryPaste(query) : query.paste();
  if (!read) {
    for (const tok of bm25Tokens(typeof query === "string" ? query : query.text)) f(tok, 1);
    return;
  }
  read.words.forEach((toks, i) => {
    const wi = read.paste[i] ? read.weight : 1;
    for (const tok of toks) f(tok, wi);
  });
}

/**
 * How a query's paste is read, when it has one that outweighs its request ({@link forEachQueryToken}):
 * the pasted lines, the weight a pasted word counts at, and each line's words and class; undefined
 * when every word counts at 1 (no paste, a paste no heavier than the request, a request of fewer than
 * three words, or GAVEL_PASTE_WEIGHT=off). Read anew at each call: a reader that reads one query
 * several times holds a {@link Bm25Query}.
 */
export function queryPaste(query: string): QueryPaste | undefined {
  return readQueryPaste(query, undefined);
}

/** How a query's paste is read ({@link queryPaste}). */
export interface QueryPaste {
  lines: number;
  weight: number;
  paste: readonly boolean[];
  words: string[][];
}

/** {@link queryPaste} of `query`, with the split the caller made (`made`) or its own. */
function readQueryPaste(query: string, made: { split: PasteSplit | undefined } | undefined): QueryPaste | undefined {
  if (!/[\n\r]/.test(query) || config().pasteWeight !== "on") return undefined;
  return readPaste(query, made ? made.split : taskPaste(query));
}

function readPaste(query: string, split: PasteSplit | undefined): QueryPaste | undefined {
  if (!split) return undefined;
  const words = pasteText(query).split("\n").map(bm25Tokens);
  let request = 0, paste = 0;
  words.forEach((toks, i) => (split.paste[i] ? (paste += toks.length) : (request += toks.length)));
  const weight = pasteWeight(request, paste);
  return weight < 1 ? { lines: split.pasteLines, weight, paste: split.paste, words } : undefined;
}

/**
 * The query's words that the vocabulary knows, as term id → count, in order of first appearance. A
 * word repeated in the query counts each time (as Lucene and rank_bm25 do): its postings are walked
 * once, times its count, which is what keeps a task-length query cheap. A pasted word may count
 * less than 1 ({@link forEachQueryToken}).
 */
export function queryTerms(query: QueryText, vocab: Vocabulary): Map<number, number> {
  const counts = new Map<number, number>();
  forEachQueryToken(query, (tok, w) => {
    const t = vocab.id(tok);
    if (t !== undefined) counts.set(t, (counts.get(t) ?? 0) + w);
  });
  return counts;
}

/** What BM25 reads of the whole collection. */
export interface Bm25Stats {
  readonly k1: number;
  readonly b: number;
  /** Documents N. */
  readonly n: number;
  /** Mean document length in tokens (0 for no documents). */
  readonly avgLen: number;
}

/**
 * Adds BM25 of every query term to `out[d]`:
 * Σ_t q(t) · idf(t) · f(t,d)(k1+1) / (f(t,d) + k1(1 − b + b·|d|/avgdl)), with Lucene's non-negative
 * idf(t) = ln(1 + (N − n(t) + 0.5)/(n(t) + 0.5)). The postings may come in several segments (the live
 * index's base and recent additions; a document is in one of them); `df` gives n(t) when the segments
 * hold postings of removed documents too, else n(t) is the postings' own count. `len[d]` is |d|.
 * Terms are taken in the query map's order, so a document's sum is made in the same order by any index.
 */
export function accumulateBm25(
  out: Float64Array,
  query: ReadonlyMap<number, number>,
  segments: readonly Postings[],
  df: Int32Array | undefined,
  s: Bm25Stats,
  len: Float64Array,
): void {
  const { k1, b, n } = s;
  const avg = s.avgLen || 1;
  const norm = (k1 * b) / avg;
  const base = k1 * (1 - b);
  for (const [t, q] of query) {
    let nt = 0;
    if (df) nt = df[t];
    else for (const p of segments) if (t + 1 < p.start.length) nt += p.start[t + 1] - p.start[t];
    const w = q * Math.log(1 + (n - nt + 0.5) / (nt + 0.5)) * (k1 + 1);
    for (const p of segments) {
      if (t + 1 >= p.start.length) continue; // a term newer than this segment
      const to = p.start[t + 1];
      const docs = p.doc;
      const tfs = p.tf;
      for (let j = p.start[t]; j < to; j++) {
        const f = tfs[j];
        const d = docs[j];
        out[d] += (w * f) / (f + base + norm * len[d]);
      }
    }
  }
}

/**
 * The most BM25 any document could score for `query`: Σ_t q(t) · idf(t) · (k1+1), the limit of each
 * term's saturation f(k1+1)/(f + k1(1 − b + b·|d|/avgdl)) as f → ∞ (or |d| → 0 with b = 1). Every
 * word of the query counts, as in {@link accumulateBm25}, each time it occurs, at its weight
 * ({@link forEachQueryToken}); a word the library
 * lacks (unknown to the vocabulary, or held by no document: `df` 0) counts at n(t) = 0, the rarest a
 * word can be, so a task made of words no skill has gets a large ceiling that no skill approaches.
 * `df(t)` is n(t) of a known term; 0 for an empty query.
 */
export function bm25Ceiling(query: QueryText, vocab: Vocabulary, df: (t: number) => number, n: number, k1: number): number {
  let total = 0;
  forEachQueryToken(query, (tok, w) => {
    const t = vocab.id(tok);
    const nt = t === undefined ? 0 : df(t);
    total += w * Math.log(1 + (n - nt + 0.5) / (nt + 0.5));
  });
  return total * (k1 + 1);
}

/**
 * The lexical coverage of a task: the best document's BM25 over {@link bm25Ceiling}, in [0, 1].
 * 1 would mean the best document holds every word of the task, each saturated; 0 that none holds
 * any. A ratio of two sums over the same query words, each weighted by its count and idf, so it does
 * not grow with the task's length (a task said twice scores the same) nor, much, with the library's
 * size (idf grows with N in numerator and denominator alike), where the raw top score does both.
 * 0 when the ceiling is 0 (an empty task).
 */
export function lexicalCoverage(top: number, ceiling: number): number {
  return ceiling > 0 ? Math.min(1, Math.max(0, top / ceiling)) : 0;
}

/**
 * The lexical reach of a task: ln(1 + r), r the best document's BM25 in units of the idf of a word no
 * document holds, ln(1 + (N + 0.5)/0.5) for N documents (the most one word of the task can weigh).
 * r is roughly how many of the library's rarest words the best document matches, saturated by k1 + 1
 * each: idf grows as ln N in the score and in the unit alike, so the same match reads about the same
 * over 24 skills and over 30K, where the raw score nearly triples. r grows with what the task shares
 * with the best document, so a long task that matches many words reaches far; the logarithm keeps
 * those from swamping a linear model's scale. 0 for an empty library or no match.
 */
export function lexicalReach(top: number, n: number): number {
  return n > 0 ? Math.log1p(Math.max(0, top) / Math.log(1 + (n + 0.5) / 0.5)) : 0;
}
