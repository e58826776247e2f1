/**
 * The learned re-ranking of the first stage's leaders, when the projections carry one
 * (src/projections/rerank-model.ts): the pool is the glance's best and the lexical expert's best; a
 * cheap stage orders it on lexical and name features; the verdict reads the cheap stage's best few;
 * a full stage, which also reads the verdict's L and V, picks the winner among them.
 *
 * Everything here is computed from what a route already holds: the glance's g, the bank's lexicon
 * (BM25 under the lexical expert's constants and under the re-ranker's), the skills' names and the
 * task text. Abstention is not decided here: the route decides it on the first stage, as without a
 * re-ranker (whether any installed skill serves the task does not depend on which leader wins).
 *
 * @module
 */
import { nameBigramShare, nameTokens, nameVerbatim, share, taskText as readTask } from "../lexical/name-features.js";
import { stageScore, type RerankFeature, type RerankModel } from "../projections/rerank-model.js";
import type { Ranked } from "./glance.js";
import { topIndices } from "./ruling.js";

/** A pool candidate with the features the stages read. */
export interface RerankCandidate {
  column: number;
  skill: string;
  name: string;
  g: number;
  /** BM25 under the lexical expert's constants (raw, not over T). */
  bm25: number;
  x: Record<RerankFeature, number>;
  /** The cheap stage's score. */
  cheap: number;
}

/**
 * Indices of the k largest values of `v` (ties: the lower index first), best first: the first k of
 * `sort((a, b) => v(b) - v(a) || a - b)`, by the first stage's one-pass selection ({@link topIndices};
 * the pool's lexical leaders are 20 of the whole library: a sort of every skill cost milliseconds a
 * route at 30K). A non-finite value, which a selection cannot place as the comparator does, falls back
 * to that sort.
 */
export function topK(n: number, k: number, v: (i: number) => number): number[] {
  if (k <= 0) return [];
  // one pass over the library: the selection notes a non-finite value as it reads it
  let finite = true;
  const best = topIndices(n, k, (i) => {
    const x = v(i);
    if (!Number.isFinite(x)) finite = false;
    return x;
  });
  return finite ? best : sortedTopK(n, k, v);
}

function sortedTopK(n: number, k: number, v: (i: number) => number): number[] {
  const idx: number[] = [];
  for (let i = 0; i < n; i++) idx.push(i);
  idx.sort((a, b) => v(b) - v(a) || a - b);
  return idx.slice(0, k);
}

/** ln(1 + the rank of each value, best first; ties: the earlier one ranks first). */
function logRanks(values: readonly number[]): number[] {
  const order = values.map((_, i) => i).sort((a, b) => values[b] - values[a] || a - b);
  const r = new Array<number>(values.length);
  order.forEach((i, n) => (r[i] = Math.log1p(n)));
  return r;
}

/**
 * The pool in its order (the glance's best by g, then the lexical expert's best by BM25 not already
 * in), each with the cheap features and the cheap stage's score. `ranked` is the glance's ranking
 * (best g first); `bm25` and `lucene` are indexed by glance column; `T` is the lexical temperature.
 */
export function rerankPool(model: RerankModel, text: string, ranked: readonly Ranked[], bm25: Float64Array, lucene: Float64Array, T: number): RerankCandidate[] {
  const chosen: Ranked[] = ranked.slice(0, model.poolGlance);
  const seen = new Set(chosen.map((r) => r.column));
  for (const i of topK(ranked.length, model.poolLexical, (i) => bm25[ranked[i].column])) {
    const r = ranked[i];
    if (seen.has(r.column)) continue;
    seen.add(r.column);
    chosen.push(r);
  }
  const task = readTask(text);
  const s = chosen.map((r) => bm25[r.column]);
  const l = chosen.map((r) => lucene[r.column]);
  const sMax = Math.max(0, ...s), lMax = Math.max(0, ...l);
  const sRank = logRanks(s), gRank = logRanks(chosen.map((r) => r.g));
  return chosen.map((r, k) => {
    const nt = nameTokens({ id: r.skill, name: r.name });
    const who = { id: r.skill, name: r.name };
    const x: Record<RerankFeature, number> = {
      bm25: s[k] / T,
      bm25Rel: sMax > 0 ? s[k] / sMax : 0,
      bm25Rank: sRank[k],
      lucene: lMax > 0 ? l[k] / lMax : 0,
      nameShare: share(nt, task.tokens),
      nameVerbatim: nameVerbatim(who, task),
      nameTitle: share(nt, task.title),
      nameBigram: nameBigramShare(who, task),
      g: r.g,
      gRank: gRank[k],
      L: NaN,
      LRel: NaN,
      LRank: NaN,
      V: NaN,
    };
    return { column: r.column, skill: r.skill, name: r.name, g: r.g, bm25: s[k], x, cheap: stageScore(model.cheap, x) };
  });
}

/** The cheap stage's best `n` of the pool, in the pool's order (ties: the pool's order). */
export function cheapTop(pool: readonly RerankCandidate[], n: number): RerankCandidate[] {
  return topK(pool.length, n, (i) => pool[i].cheap).sort((a, b) => a - b).map((i) => pool[i]);
}

/**
 * The full stage's scores of the verdict's candidates, given their L and V (in the candidates'
 * order): LRel and LRank are read among these candidates.
 */
export function fullScores(model: RerankModel, top: readonly RerankCandidate[], L: readonly number[], V: readonly number[]): number[] {
  const Lmax = Math.max(...L);
  const LRank = logRanks(L);
  return top.map((c, k) => stageScore(model.full, { ...c.x, L: L[k], LRel: L[k] - Lmax, LRank: LRank[k], V: V[k] }));
}

/**
 * Whether the verdict reads these candidates: more than one, and, when the model sets a
 * `verdictMargin`, the cheap stage's best leads its second by less than it.
 */
export function verdictNeeded(model: RerankModel, top: readonly RerankCandidate[]): boolean {
  if (top.length < 2) return false;
  if (model.verdictMargin === undefined) return true;
  const s = top.map((c) => c.cheap).sort((a, b) => b - a);
  return s[0] - s[1] < model.verdictMargin;
}
