/**
 * The lexical expert at route time: BM25 over the installed, routable skills' text (name,
 * description, body, as the bank keeps them under texts/), read as a log posterior
 * B(s) = log softmax_s(BM25(s) / T) over the library (src/lexical/posterior.ts), for the ruling's
 * S = g + αL + γV + βB.
 *
 * The index is the bank's lexicon ({@link Library.lexicon}, src/bank/lexicon.ts): read at open, kept
 * up to date by install and uninstall as they change the bank, committed with it. Nothing is built
 * here.
 *
 * @module
 */
import { logPartition } from "../lexical/posterior.js";
import { lexicalCoverage, lexicalReach, type Bm25Options, type QueryText } from "../lexical/postings.js";
import type { Library } from "../bank/library.js";

/** BM25 of every routable skill for one task. */
export interface LexicalScores {
  /** The routable skills, in the bank's order (the same array until the library changes). */
  ids: readonly string[];
  /** BM25 of each, in the order of `ids` (0 where the task shares no word with the skill). */
  scores: Float64Array;
}

/** B and the raw BM25 of a library, read from the bank's lexicon. */
export class LexicalExpert {
  /** Row of each id in the last {@link LexicalScores.ids} seen. */
  #rows: { ids: readonly string[]; row: Map<string, number> } | undefined;

  /** Kept for callers of the in-memory index it replaced: the bank's lexicon is always current. */
  invalidate(): void {
    this.#rows = undefined;
  }

  /**
   * BM25 of the whole routable library for the task (its text, or a route's `Bm25Query` with its paste
   * reading, src/lexical/postings.ts), with the ids in the bank's order.
   */
  async scoresAll(library: Library, task: QueryText, params?: Bm25Options): Promise<LexicalScores> {
    const index = library.lexicon.index;
    const scores = index.scores(task, params);
    return { ids: index.ids(), scores };
  }

  /**
   * B at temperature T for each of `ids` (−∞ for a skill outside the routable library) given the
   * task text: BM25 / T minus log Σ exp(BM25 / T) over the whole routable library.
   */
  async posterior(library: Library, task: QueryText, ids: readonly string[], temperature: number, params?: Bm25Options): Promise<number[]> {
    const all = await this.scoresAll(library, task, params);
    const z = logPartition(all.scores, temperature);
    const row = this.#rowsOf(all.ids);
    return ids.map((id) => {
      const i = row.get(id);
      return i === undefined ? -Infinity : all.scores[i] / temperature - z;
    });
  }

  /** The lexicon row of each glance column, for the last (ids, handles) seen. */
  #columns: { ids: readonly string[]; handles: Int32Array; row: Int32Array } | undefined;

  /**
   * B at temperature T of every column of a glance (`handles`: the glance's skills, in its column
   * order), the best B over the library (maxB), the library's size, and the task's lexical coverage
   * and reach (src/lexical/postings.ts). The column → lexicon row map is
   * kept until the library changes, so a route pays no per-skill lookup: the first stage over 30K
   * skills stays within a few milliseconds.
   */
  async posteriorByColumn(library: Library, task: QueryText, temperature: number, handles: Int32Array, params?: Bm25Options): Promise<{ B: Float64Array; raw: Float64Array; maxB: number; size: number; coverage: number; reach: number }> {
    const all = await this.scoresAll(library, task, params);
    const row = this.#columnRows(library, all.ids, handles);
    // A glance restricted to fewer skills (excludeFlagged, excludeSources) normalises B over
    // those skills only: an excluded skill that echoes the task takes no posterior mass from them.
    const scores = handles.length === all.scores.length ? all.scores : Float64Array.from(row.filter((r) => r >= 0), (r) => all.scores[r]);
    const z = logPartition(scores, temperature);
    let top = 0;
    for (let i = 0; i < scores.length; i++) if (scores[i] > top) top = scores[i];
    const B = new Float64Array(handles.length);
    const raw = new Float64Array(handles.length);
    for (let c = 0; c < handles.length; c++) {
      B[c] = row[c] < 0 ? -Infinity : all.scores[row[c]] / temperature - z;
      raw[c] = row[c] < 0 ? 0 : all.scores[row[c]];
    }
    const index = library.lexicon.index;
    const coverage = lexicalCoverage(top, index.ceiling(task, params));
    return { B, raw, maxB: top / temperature - z, size: scores.length, coverage, reach: lexicalReach(top, index.size) };
  }

  /** Raw BM25 under `params` of every column of a glance (0 for a skill outside the routable library). */
  async scoresByColumn(library: Library, task: QueryText, handles: Int32Array, params?: Bm25Options): Promise<Float64Array> {
    const all = await this.scoresAll(library, task, params);
    const row = this.#columnRows(library, all.ids, handles);
    return Float64Array.from(row, (r) => (r < 0 ? 0 : all.scores[r]));
  }

  #columnRows(library: Library, ids: readonly string[], handles: Int32Array): Int32Array {
    const k = this.#columns;
    if (k && k.ids === ids && k.handles.length === handles.length && k.handles.every((h, i) => h === handles[i])) return k.row;
    const rowOf = this.#rowsOf(ids);
    const row = Int32Array.from(handles, (h) => rowOf.get(library.idOf(h)) ?? -1);
    this.#columns = { ids, handles: handles.slice(), row };
    return row;
  }

  #rowsOf(ids: readonly string[]): Map<string, number> {
    if (this.#rows?.ids !== ids) this.#rows = { ids, row: new Map(ids.map((id, i) => [id, i])) };
    return this.#rows.row;
  }
}
