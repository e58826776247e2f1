/**
 * A reference idf: how rare each word is over a large public library, read whatever library a router
 * holds. Over a few installed skills a word's idf there says nothing of its rarity (every word is in
 * one skill of three, or in none), so a feature read against the installed library alone cannot tell
 * an off-domain prompt that shares a few common words with a skill from a request that names its
 * subject. {@link ReferenceIdf.coverage} weighs the task's words by this table instead: the share of the
 * task's reference-weighted words a skill holds, which does not move with the library's size.
 *
 * The table is a sorted list of word hashes (FNV-1a over the word, as the BM25 index hashes terms)
 * and each word's document frequency; words under `minDf` documents are left out and read as df
 * (minDf − 1) / 2. It travels in the projections file (src/projections/file.ts), built by
 * scripts/lexical/reference-idf.ts.
 *
 * @module
 */
import { invalidArgument } from "../errors.js";
import { bm25Tokens, hashIndex, termHash, type DocTerms, type Vocabulary } from "./postings.js";
import type { LiveBm25Index } from "./live-index.js";
import { describeValue, valueText } from "../util/validate.js";

/** What a {@link ReferenceIdf} is made of. */
export interface ReferenceIdfInit {
  /** Documents counted (N). */
  readonly documents: number;
  /** The least df a word kept in the table has; a word not in it reads as df (minDf − 1) / 2. */
  readonly minDf: number;
  /** The kept words' hashes ({@link termHash}), strictly ascending. */
  readonly hashes: Uint32Array;
  /** Each kept word's df, in [minDf, documents], in the order of `hashes`. */
  readonly df: Uint32Array;
}

/** Largest table accepted: more words than any reference library of this kind holds is damage. */
export const MAX_REFERENCE_WORDS = 1 << 22;

/**
 * Each word's document frequency over a large public library, and the idf and coverage read from
 * it: the projections' `referenceIdf`, which abstention's `gcov` reads whatever library a router
 * holds. Immutable; build one with {@link ReferenceIdf.build}.
 */
export class ReferenceIdf implements ReferenceIdfInit {
  readonly documents: number;
  readonly minDf: number;
  readonly hashes: Uint32Array;
  readonly df: Uint32Array;
  /** The df a word missing from the table reads as. */
  readonly #missingDf: number;

  /** @throws GavelError `INVALID_ARGUMENT` when a field is out of range or the hashes are not strictly ascending */
  constructor(init: ReferenceIdfInit) {
    if (typeof init !== "object" || init === null) throw invalidArgument("ReferenceIdf: expected an object");
    const { documents, minDf, hashes, df } = init;
    if (!Number.isInteger(documents) || documents < 1 || documents > 0xffffffff) throw invalidArgument(`ReferenceIdf: documents must be an integer in [1, 2^32 − 1], got ${valueText(documents)}`);
    if (!Number.isInteger(minDf) || minDf < 1 || minDf > documents) throw invalidArgument(`ReferenceIdf: minDf must be an integer in [1, documents], got ${valueText(minDf)}`);
    if (!(hashes instanceof Uint32Array) || !(df instanceof Uint32Array)) throw invalidArgument("ReferenceIdf: hashes and df must be Uint32Arrays");
    if (hashes.length !== df.length) throw invalidArgument(`ReferenceIdf: ${hashes.length} hashes but ${df.length} document frequencies`);
    if (hashes.length > MAX_REFERENCE_WORDS) throw invalidArgument(`ReferenceIdf: ${hashes.length} words, more than ${MAX_REFERENCE_WORDS}`);
    for (let i = 0; i < hashes.length; i++) {
      if (i > 0 && hashes[i] <= hashes[i - 1]) throw invalidArgument(`ReferenceIdf: hashes must be strictly ascending (at ${i})`);
      if (df[i] < minDf || df[i] > documents) throw invalidArgument(`ReferenceIdf: df[${i}] is ${df[i]}, outside [${minDf}, ${documents}]`);
    }
    this.documents = documents;
    this.minDf = minDf;
    this.hashes = hashes;
    this.df = df;
    this.#missingDf = (minDf - 1) / 2;
  }

  /**
   * Counts each word's documents over `docs` (each a document's words; repeats count once) and keeps
   * those in at least `minDf` of them.
   *
   * @throws GavelError `INVALID_ARGUMENT` when `docs` is not an iterable of arrays of strings, or on a
   *   bad `minDf`
   */
  static build(docs: Iterable<readonly string[]>, minDf: number): ReferenceIdf {
    if (!isIterable(docs) || typeof docs === "string") throw invalidArgument(`ReferenceIdf.build: docs must be an iterable of word arrays, got ${describeValue(docs)}`);
    const counts = new Map<number, number>();
    let n = 0;
    for (const words of docs) {
      if (!Array.isArray(words)) throw invalidArgument(`ReferenceIdf.build: document ${n} must be an array of words, got ${describeValue(words)}`);
      for (let i = 0; i < words.length; i++) {
        if (typeof words[i] !== "string") throw invalidArgument(`ReferenceIdf.build: document ${n}, word ${i} must be a string, got ${describeValue(words[i])}`);
      }
      n++;
      for (const h of new Set(words.map(termHash))) counts.set(h, (counts.get(h) ?? 0) + 1);
    }
    const kept = [...counts].filter(([, d]) => d >= minDf).sort((a, b) => a[0] - b[0]);
    return new ReferenceIdf({ documents: n, minDf, hashes: Uint32Array.from(kept, (x) => x[0]), df: Uint32Array.from(kept, (x) => x[1]) });
  }

  /** Words kept in the table. */
  get words(): number {
    return this.hashes.length;
  }

  /** The df of `word` in the reference (a word not kept reads as (minDf − 1) / 2). */
  dfOf(word: string): number {
    const i = hashIndex(this.hashes, word);
    return i >= 0 ? this.df[i] : this.#missingDf;
  }

  /** ln(1 + (N − df + 0.5) / (df + 0.5)): BM25's idf of `word` over the reference. */
  idf(word: string): number {
    const d = this.dfOf(word);
    return Math.log(1 + (this.documents - d + 0.5) / (d + 0.5));
  }

  /**
   * The share of the task's distinct words, each weighed by its {@link idf} to the power `power`
   * (1: abstention's `gcov`; 2: `gcov2`), that `holds` accepts (the words a skill's text contains):
   * in [0, 1]; 0 for a task without words.
   *
   * @throws GavelError `INVALID_ARGUMENT` when `taskWords` is not an iterable of strings (a string
   *   itself is refused: its characters are not its words), `holds` is not a function, or `power` is
   *   not a finite number > 0
   */
  coverage(taskWords: Iterable<string>, holds: (word: string) => boolean, power = 1): number {
    if (typeof taskWords === "string" || !isIterable(taskWords)) throw invalidArgument(`ReferenceIdf.coverage: taskWords must be an iterable of words (not a string), got ${describeValue(taskWords)}`);
    if (typeof holds !== "function") throw invalidArgument(`ReferenceIdf.coverage: holds must be a function, got ${describeValue(holds)}`);
    if (typeof power !== "number" || !Number.isFinite(power) || power <= 0) throw invalidArgument(`ReferenceIdf.coverage: power must be a finite number > 0, got ${valueText(power)}`);
    let all = 0, held = 0;
    for (const w of new Set(taskWords)) {
      if (typeof w !== "string") throw invalidArgument(`ReferenceIdf.coverage: taskWords must hold strings, got ${describeValue(w)}`);
      const x = this.idf(w) ** power;
      all += x;
      if (holds(w)) held += x;
    }
    return all > 0 ? held / all : 0;
  }
}

/**
 * The reference coverage of document `id` of `index` for `taskText`: {@link ReferenceIdf.coverage} of
 * the task's words (as BM25 splits them) over the words the indexed document holds. Undefined when
 * the index lacks the document.
 */
export function referenceCoverage(ref: ReferenceIdf, index: LiveBm25Index, taskText: string, id: string, power = 1): number | undefined {
  const doc = index.docTerms(id);
  return doc ? termsCoverage(ref, index.vocabulary, doc, taskText, power) : undefined;
}

/** {@link referenceCoverage} of a document's terms as the index counted them against `vocab`. */
export function termsCoverage(ref: ReferenceIdf, vocab: Vocabulary, doc: DocTerms, taskText: string, power = 1): number {
  const held = new Set(doc.terms);
  return ref.coverage(
    bm25Tokens(taskText),
    (w) => {
      const t = vocab.id(w);
      return t !== undefined && held.has(t);
    },
    power,
  );
}

function isIterable(value: unknown): value is Iterable<unknown> {
  return value !== null && value !== undefined && typeof (value as { [Symbol.iterator]?: unknown })[Symbol.iterator] === "function";
}
