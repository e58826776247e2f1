/**
 * A domain score: how much a task reads like an agent's kind of work (code, data, files, tools)
 * rather than an everyday assistant query (a joke, a recipe, a flight), from its words alone, whatever
 * library a router holds. Over a library of thousands of public skills an off-domain prompt shares a
 * word or two with some skill as easily as a short request does (`reach` alone cannot tell them apart
 * there); this score reads what kind of words the task uses instead.
 *
 * A linear model over word indicators: score = bias + Σ w(word) / √n over the task's n distinct known
 * words (words are runs of ASCII letters and digits of the lower-cased text, one-letter words and a
 * short stop list out). Positive reads in-domain. Trained offline on public texts
 * (scripts/lexical/domain-train.py: commit subjects and skill descriptions against CLINC150's
 * assistant queries); it travels in the projections file (src/projections/file.ts) as a sorted list of
 * word hashes (FNV-1a, {@link termHash}) and their weights.
 *
 * @module
 */
import { invalidArgument, clip } from "../errors.js";
import { hashIndex, termHash } from "./postings.js";
import { describeValue, valueText } from "../util/validate.js";

/** Words the domain score never reads (they carry the style of a question, not its subject). */
export const DOMAIN_STOP_WORDS: ReadonlySet<string> = new Set(
  "a an the of to in for on and or is are be with by it this that i my me you your we our can how what do does from as at".split(" "),
);

/** Largest table accepted. */
export const MAX_DOMAIN_WORDS = 1 << 20;

const WORD = /[a-z0-9]+/g;

/**
 * The distinct words the domain score reads of `text`, in order of first appearance.
 * @throws GavelError `INVALID_ARGUMENT` when `text` is not a string
 */
export function domainWords(text: string): string[] {
  if (typeof text !== "string") throw invalidArgument(`domainWords: text must be a string, got ${describeValue(text)}`);
  const out = new Set<string>();
  for (const w of text.toLowerCase().match(WORD) ?? []) {
    if (w.length > 1 && !DOMAIN_STOP_WORDS.has(w)) out.add(w);
  }
  return [...out];
}

/** What a {@link DomainModel} is made of. */
export interface DomainModelInit {
  /** The known words' hashes ({@link termHash}), strictly ascending. */
  readonly hashes: Uint32Array;
  /** Each known word's weight, in the order of `hashes`. */
  readonly weights: Float32Array;
  /** The score's constant term. */
  readonly bias: number;
}

/**
 * The domain score's word table: the projections' `domain`, which abstention's `domain` feature reads.
 * Immutable; build one from words with {@link DomainModel.fromWords}.
 */
export class DomainModel implements DomainModelInit {
  readonly hashes: Uint32Array;
  readonly weights: Float32Array;
  readonly bias: number;

  /** @throws GavelError `INVALID_ARGUMENT` when the arrays differ in length, a hash is out of order, or a number is not finite */
  constructor(init: DomainModelInit) {
    if (typeof init !== "object" || init === null) throw invalidArgument("DomainModel: expected an object");
    const { hashes, weights, bias } = init;
    if (!(hashes instanceof Uint32Array) || !(weights instanceof Float32Array)) throw invalidArgument("DomainModel: hashes must be a Uint32Array and weights a Float32Array");
    if (hashes.length !== weights.length) throw invalidArgument(`DomainModel: ${hashes.length} hashes but ${weights.length} weights`);
    if (hashes.length === 0) throw invalidArgument("DomainModel: the table is empty");
    if (hashes.length > MAX_DOMAIN_WORDS) throw invalidArgument(`DomainModel: ${hashes.length} words, more than ${MAX_DOMAIN_WORDS}`);
    if (typeof bias !== "number" || !Number.isFinite(bias)) throw invalidArgument(`DomainModel: bias must be a finite number, got ${valueText(bias)}`);
    for (let i = 0; i < hashes.length; i++) {
      if (i > 0 && hashes[i] <= hashes[i - 1]) throw invalidArgument(`DomainModel: hashes must be strictly ascending (at ${i})`);
      if (!Number.isFinite(weights[i])) throw invalidArgument(`DomainModel: weights[${i}] is ${weights[i]}, not a finite number`);
    }
    this.hashes = hashes;
    this.weights = weights;
    this.bias = bias;
  }

  /**
   * A table from words and their weights (any order).
   * @throws GavelError `INVALID_ARGUMENT` when the lists differ in length, a word repeats, or two words share a hash
   */
  static fromWords(words: readonly string[], weights: readonly number[], bias: number): DomainModel {
    if (!Array.isArray(words) || !Array.isArray(weights) || words.length !== weights.length) throw invalidArgument("DomainModel.fromWords: words and weights must be arrays of one length");
    const rows = words.map((w, i) => {
      if (typeof w !== "string" || w.length === 0) throw invalidArgument(`DomainModel.fromWords: words[${i}] must be a non-empty string`);
      return { h: termHash(w), w: weights[i], word: w };
    });
    rows.sort((a, b) => a.h - b.h);
    for (let i = 1; i < rows.length; i++) {
      if (rows[i].h === rows[i - 1].h) throw invalidArgument(`DomainModel.fromWords: ${JSON.stringify(clip(rows[i - 1].word))} and ${JSON.stringify(clip(rows[i].word))} share a hash`);
    }
    return new DomainModel({ hashes: Uint32Array.from(rows, (r) => r.h), weights: Float32Array.from(rows, (r) => r.w), bias });
  }

  /** Words in the table. */
  get words(): number {
    return this.hashes.length;
  }

  /**
   * The weight of `word`, or undefined when the table does not hold it.
   * @throws GavelError `INVALID_ARGUMENT` when `word` is not a string
   */
  weightOf(word: string): number | undefined {
    if (typeof word !== "string") throw invalidArgument(`DomainModel.weightOf: word must be a string, got ${describeValue(word)}`);
    const i = hashIndex(this.hashes, word);
    return i >= 0 ? this.weights[i] : undefined;
  }

  /**
   * The domain score of `text`: bias + the sum of its known words' weights over √(their number);
   * undefined when the text holds no word of the table (nothing to read either way).
   * @throws GavelError `INVALID_ARGUMENT` when `text` is not a string
   */
  score(text: string): number | undefined {
    if (typeof text !== "string") throw invalidArgument(`DomainModel.score: text must be a string, got ${describeValue(text)}`);
    let sum = 0, n = 0;
    for (const w of domainWords(text)) {
      const x = this.weightOf(w);
      if (x === undefined) continue;
      sum += x;
      n++;
    }
    return n === 0 ? undefined : this.bias + sum / Math.sqrt(n);
  }
}
