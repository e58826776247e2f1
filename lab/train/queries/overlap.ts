/**
 * Keeping benchmark tasks out of training: a query is dropped when it equals a task text or shares a
 * long run of words with one. Task texts are indexed as word shingles (lower-cased runs of letters and
 * digits, `window` words each, hashed); a query of at least `window` words is refused when any of its
 * shingles is a task's; a shorter query (of at least `minWords`) when every run of `minWords` of its
 * words occurs in a task. Shingles are held as 53-bit hashes (two FNV-1a variants): a collision can
 * only drop a query, never let one through. Only task TEXTS are screened: skills, gold ones included,
 * stay in the library and may give queries.
 *
 * @module
 */
import { words } from "./text.js";

/** A 53-bit hash of a run of words (FNV-1a 32 and a second FNV variant, 21 bits of it). */
function shingleHash(w: readonly string[], start: number, n: number): number {
  let a = 0x811c9dc5;
  let b = 0x01234567;
  for (let i = start; i < start + n; i++) {
    const t = w[i];
    for (let j = 0; j < t.length; j++) {
      const c = t.charCodeAt(j);
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b ^ c, 0x5bd1e995) ^ (b >>> 13);
    }
    a = Math.imul(a ^ 32, 0x01000193);
    b = Math.imul(b ^ 32, 0x5bd1e995) ^ (b >>> 13);
  }
  return (a >>> 0) * 2 ** 21 + ((b >>> 0) & 0x1fffff);
}

/** A task text index for {@link TaskOverlap.overlaps}. */
export class TaskOverlap {
  readonly window: number;
  readonly minWords: number;
  #shingles = new Set<number>();
  /** Runs of `minWords` words of the tasks, for short queries. */
  #short = new Set<number>();
  #exact = new Set<string>();

  /**
   * @param tasks - the task texts to keep out
   * @param options - `window`: shingle length in words (default 12, as the backbone's data filter);
   *   `minWords`: shorter queries than this are only compared whole (default 6)
   */
  constructor(tasks: Iterable<string>, options: { window?: number; minWords?: number } = {}) {
    this.window = options.window ?? 12;
    this.minWords = Math.min(options.minWords ?? 6, this.window);
    for (const t of tasks) {
      const w = words(t);
      this.#exact.add(w.join(" "));
      for (let i = 0; i + this.window <= w.length; i++) this.#shingles.add(shingleHash(w, i, this.window));
      for (let i = 0; i + this.minWords <= w.length; i++) this.#short.add(shingleHash(w, i, this.minWords));
    }
  }

  /** Whether `query` equals a task text or shares a run of words with one (see the module comment). */
  overlaps(query: string): boolean {
    const w = words(query);
    if (w.length === 0) return false;
    if (this.#exact.has(w.join(" "))) return true;
    if (w.length < this.minWords) return false;
    if (w.length < this.window) {
      for (let i = 0; i + this.minWords <= w.length; i++) if (!this.#short.has(shingleHash(w, i, this.minWords))) return false;
      return true;
    }
    for (let i = 0; i + this.window <= w.length; i++) if (this.#shingles.has(shingleHash(w, i, this.window))) return true;
    return false;
  }
}
