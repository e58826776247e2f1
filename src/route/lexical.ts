/**
 * The lexical expert at route time (issue 13): BM25 over the installed, routable skills' text (name,
 * description, body, as the bank keeps them under texts/), read as a log posterior
 * B(s) = log softmax_s(BM25(s) / T) over the library (src/lexical/posterior.ts), for the ruling's
 * S = g + αL + γV + βB.
 *
 * The index is held in memory: built from the bank's texts at the first route that needs it (only
 * when β > 0 or `route(…, { lexical: true })`), and dropped by any install or uninstall, so the next
 * such route rebuilds it. It is not yet kept in the bank.
 *
 * @module
 */
import { Bm25Index } from "../lexical/bm25.js";
import { logPartition } from "../lexical/posterior.js";
import type { Library } from "../bank/library.js";

/** A lazily built BM25 index over a library's routable skills. */
export class LexicalExpert {
  #index: Promise<{ index: Bm25Index; row: Map<string, number> }> | undefined;

  /** Forgets the index (after an install or uninstall): the next use rebuilds it. */
  invalidate(): void {
    this.#index = undefined;
  }

  #build(library: Library): Promise<{ index: Bm25Index; row: Map<string, number> }> {
    if (!this.#index) {
      const p = (async () => {
        const entries = library.store.entries().filter((e) => !e.disableModelInvocation);
        // A text an uninstall running beside this build has just pruned is left out; that uninstall
        // then drops this index, so the next route rebuilds it without the skill anyway.
        const docs = await Promise.all(entries.map(async (e) => library.text(e).then((t) => ({ id: e.id, ...t }), () => undefined)));
        const index = new Bm25Index(docs.filter((d) => d !== undefined));
        return { index, row: new Map(index.ids.map((id, i) => [id, i])) };
      })();
      // A failed build is not kept: the next route tries again.
      p.catch(() => {
        if (this.#index === p) this.#index = undefined;
      });
      this.#index = p;
    }
    return this.#index;
  }

  /**
   * B at temperature T for each of `ids` (−∞ for a skill outside the routable library) given the
   * task text: BM25 / T minus log Σ exp(BM25 / T) over the whole routable library.
   */
  async posterior(library: Library, taskText: string, ids: readonly string[], temperature: number): Promise<number[]> {
    const { index, row } = await this.#build(library);
    const scores = index.scores(taskText);
    const z = logPartition(scores, temperature);
    return ids.map((id) => {
      const i = row.get(id);
      return i === undefined ? -Infinity : scores[i] / temperature - z;
    });
  }
}
