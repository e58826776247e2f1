/**
 * The verdict's read-outs and the ruling (paper, sections 3.4–3.5): L is the mean log-likelihood of
 * the task tokens with the skill as prefix, V the log-odds of yes over no after the question, and
 * S = g + αL + γV, a product of experts, with a fourth, the lexical B: S = g + αL + γV + βB.
 *
 * {@link rule} is the one implementation of the ruling's order: {@link Router.route} commits to its
 * first candidate, and {@link chooseByRuling} replays it from recorded read-outs for evaluation and
 * calibration, so the two cannot disagree.
 *
 * @module
 */
import { GavelError } from "../errors.js";

/** log Σ exp(x) over the given values, stable. */
export function logSumExp(values: ArrayLike<number>): number {
  let mx = -Infinity;
  for (let i = 0; i < values.length; i++) mx = Math.max(mx, values[i]);
  if (mx === -Infinity) return -Infinity;
  let s = 0;
  for (let i = 0; i < values.length; i++) s += Math.exp(values[i] - mx);
  return mx + Math.log(s);
}

/** L = mean of logprobs over [start, end). */
export function meanLogLikelihood(logprobs: Float32Array, start: number, end: number): number {
  if (end <= start) return 0;
  let s = 0;
  for (let i = start; i < end; i++) s += logprobs[i];
  return s / (end - start);
}

/**
 * V = log Σ_{yes} p − log Σ_{no} p, from the log-probs `final` of the read ids, the first `nYes` of
 * which are the yes spellings. 0 when either set is empty (the vocabulary has no single-token
 * spelling), so V then abstains from the ruling.
 */
export function yesNoLogOdds(final: Float32Array, nYes: number): number {
  const yes = final.subarray(0, nYes);
  const no = final.subarray(nYes);
  if (yes.length === 0 || no.length === 0) return 0;
  return logSumExp(yes) - logSumExp(no);
}

/**
 * The score a route's shortlist is ordered by: the re-ranker's R where it ranked the shortlist, else
 * the ruling's S.
 */
export function shortlistScore(c: { S: number; R?: number }): number {
  return c.R !== undefined && Number.isFinite(c.R) ? c.R : c.S;
}

/**
 * The first stage's score of a skill: the glance's g plus β times the lexical expert's B,
 * the two experts that score the whole library before any verdict. g alone when β = 0.
 */
export function firstStage(g: number, B: number | undefined, beta = 0): number {
  return beta === 0 ? g : g + beta * (B ?? 0);
}

/**
 * Candidates in first-stage order, best g + βB first; equal scores keep the input's (glance) order.
 * With β = 0 the input order itself (the glance's).
 */
export function firstStageOrder<T extends { g: number; B?: number }>(candidates: readonly T[], beta = 0): T[] {
  if (beta === 0) return [...candidates];
  return candidates
    .map((c, i) => ({ c, i, f: firstStage(c.g, c.B, beta) }))
    .sort((a, b) => (b.f > a.f ? 1 : b.f < a.f ? -1 : a.i - b.i))
    .map((e) => e.c);
}

/**
 * {@link shortlist} of {@link firstStageOrder} in one pass over a whole library, without sorting it:
 * the candidates whose g + βB is within Δ of the best, best first (ties in the input's order), at
 * most `max`. The route's first stage over 30K skills; the same result as the composition. `bOf`
 * reads a candidate's B (default its `B`), so a caller may keep B outside the candidates.
 */
export function firstStageShortlist<T extends { g: number; B?: number }>(
  candidates: readonly T[],
  delta: number,
  max: number,
  beta = 0,
  bOf: (c: T) => number | undefined = (c) => c.B,
  union: ShortlistUnion = {},
): T[] {
  // one pass for the scores (a typed array: no object per skill), one for the candidates near the best
  const F = new Float64Array(candidates.length);
  let best = -Infinity;
  for (let i = 0; i < candidates.length; i++) {
    const c = candidates[i];
    const f = beta === 0 ? c.g : c.g + beta * (bOf(c) ?? 0);
    F[i] = f;
    if (f > best) best = f;
  }
  const near: { c: T; i: number; f: number }[] = [];
  const taken = new Uint8Array(F.length);
  for (let i = 0; i < F.length; i++) if (F[i] >= best - delta) taken[i] = 1;
  // the union: each expert's own best k join the pool, whatever their first-stage score
  if (union.glance) for (const i of topIndices(candidates.length, union.glance, (i) => candidates[i].g)) taken[i] = 1;
  if (union.lexical) for (const i of topIndices(candidates.length, union.lexical, (i) => bOf(candidates[i]) ?? -Infinity)) taken[i] = 1;
  for (let i = 0; i < F.length; i++) if (taken[i]) near.push({ c: candidates[i], i, f: F[i] });
  near.sort((a, b) => (b.f > a.f ? 1 : b.f < a.f ? -1 : a.i - b.i));
  return near.slice(0, max).map((e) => e.c);
}

/** Each expert's best k that join the verdict's pool beside the first stage's Δ-shortlist. */
export interface ShortlistUnion {
  /** The glance's best k by g (0 or absent: none). */
  glance?: number;
  /** The lexical expert's best k by B (0 or absent: none; skills with no B never join). */
  lexical?: number;
}

/** Indices of the k largest finite values of `value(i)`, i < n, best first (ties: lower index first). */
export function topIndices(n: number, k: number, value: (i: number) => number): number[] {
  const best: { i: number; v: number }[] = [];
  for (let i = 0; i < n; i++) {
    const v = value(i);
    if (!Number.isFinite(v)) continue;
    if (best.length === k && v <= best[k - 1].v) continue;
    let j = best.length < k ? best.length : k - 1;
    if (best.length < k) best.push({ i, v });
    while (j > 0 && best[j - 1].v < v) { best[j] = best[j - 1]; j--; }
    best[j] = { i, v };
  }
  return best.map((e) => e.i);
}

/**
 * The candidates the verdict examines: first-stage score g + βB within Δ of the best, at most `max`,
 * best first. `ranked` must be in first-stage order ({@link firstStageOrder}; with β = 0, the
 * glance's order).
 */
export function shortlist<T extends { g: number; B?: number }>(ranked: readonly T[], delta: number, max: number, beta = 0): T[] {
  if (ranked.length === 0) return [];
  const best = firstStage(ranked[0].g, ranked[0].B, beta);
  const out: T[] = [];
  for (const c of ranked) {
    if (out.length >= max || firstStage(c.g, c.B, beta) < best - delta) break;
    out.push(c);
  }
  return out;
}

/**
 * S = g + αL + γV + βB. B is the lexical expert (log posterior of BM25 over the library,
 * src/lexical/posterior.ts); with β = 0 (the default) the term is left out, so S is exactly
 * g + αL + γV whatever B holds.
 */
export function ruling(g: number, L: number, V: number, alpha: number, gamma: number, beta = 0, B = 0): number {
  const s = g + alpha * L + gamma * V;
  return beta === 0 ? s : s + beta * B;
}

/** The ruling's exchange rates: S = g + αL + γV + βB. */
export interface RulingWeights {
  alpha: number;
  gamma: number;
  /** Weight of the lexical expert B (default 0: the ruling of the paper, S = g + αL + γV). */
  beta?: number;
}

/** A candidate as the ruling reads it: the glance's g, the verdict's L and V, and B if computed. */
export interface Ruled {
  g: number;
  L: number;
  V: number;
  /** The lexical expert's log posterior (read as 0 when absent). */
  B?: number;
}

/** Higher S first; equal (or unordered) S keep their order under a stable sort. */
function byScoreDescending(a: { S: number }, b: { S: number }): number {
  return b.S > a.S ? 1 : b.S < a.S ? -1 : 0;
}

/**
 * The ruling: each candidate with its S = g + αL + γV + βB, best S first. Candidates must come in glance
 * order (g descending, the glance's own tie order); equal S keep that order (the sort is stable), so
 * on a tie the earlier in glance order wins.
 */
export function rule<T extends Ruled>(candidates: readonly T[], w: RulingWeights): (T & { S: number })[] {
  const beta = w.beta ?? 0;
  return candidates.map((c) => ({ ...c, S: ruling(c.g, c.L, c.V, w.alpha, w.gamma, beta, c.B ?? 0) })).sort(byScoreDescending);
}

/** A verdict read-out as per-query records keep it. */
export interface VerdictRecord extends Ruled {
  skill: string;
}

/** The ruling's constants. */
export interface RulingParams extends RulingWeights {
  delta: number;
  /** Most candidates the verdict examines (the projections' maxShortlist). */
  maxShortlist: number;
}

/**
 * The ruling replayed from recorded read-outs: the skill {@link Router.route} would commit to under
 * (α, γ, Δ, β), without running the model again: the first of {@link rule} over the candidates whose
 * g + βB is within Δ of the best (at most maxShortlist, in first-stage order). `verdict` must be in
 * glance order, with B on each entry when β > 0. Null when there is no candidate.
 */
export function chooseByRuling(verdict: readonly VerdictRecord[], p: RulingParams): string | null {
  return ruledShortlist(verdict, p)[0]?.skill ?? null;
}

/**
 * The whole ruling over candidates in glance order: first-stage order by g + βB, the Δ-shortlist of
 * it, then S = g + αL + γV + βB, best first. What route() commits to is the first.
 */
export function ruledShortlist<T extends Ruled>(candidates: readonly T[], p: RulingParams): (T & { S: number })[] {
  const beta = p.beta ?? 0;
  return rule(shortlist(firstStageOrder(candidates, beta), p.delta, p.maxShortlist, beta), p);
}

/**
 * Refuses read-outs that are not finite numbers before anything is chosen from them: a NaN g, L, V,
 * B or S orders nowhere (every comparison with NaN is false), so a "chosen" skill would be arbitrary,
 * and `V < 0` would read NaN as "do not abstain". `verdict`: whether L and V were computed (when it
 * did not run they are NaN by design and S is the first stage's). `model` names the model whose
 * forward passes gave them.
 *
 * @throws GavelError `INTERNAL`, naming the model, the skill and the read-out
 */
export function checkFiniteReadouts(candidates: readonly (Ruled & { skill: string; S?: number })[], verdict: boolean, model: string): void {
  for (const c of candidates) {
    const fields: [string, number | undefined][] = [["g", c.g], ["B", c.B], ["S", c.S]];
    if (verdict) fields.push(["L", c.L], ["V", c.V]);
    for (const [name, x] of fields) {
      if (x === undefined || Number.isFinite(x)) continue;
      throw new GavelError(
        `the read-out ${name} of skill ${JSON.stringify(c.skill.slice(0, 200))} is ${x}, not a finite number: model ${model} gave NaN or infinite ` +
          "scores (a damaged model or a numeric failure); no skill is chosen from them",
        "INTERNAL",
      );
    }
  }
}
