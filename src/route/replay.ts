/**
 * The ruling replayed from recorded read-outs: what {@link Router.route} would commit to for given
 * (α, γ, Δ), without running the model again. Evaluation and calibration both use it.
 */
import { ruling, shortlist } from "./ruling.js";

/** A verdict read-out as per-query records keep it. */
export interface VerdictRecord {
  skill: string;
  g: number;
  L: number;
  V: number;
}

/** The ruling's constants. */
export interface RulingParams {
  alpha: number;
  gamma: number;
  delta: number;
  /** Most candidates the verdict examines (the projections' maxShortlist). */
  maxShortlist: number;
}

/**
 * The skill route() commits to: among the candidates whose g is within Δ of the best (at most
 * maxShortlist, in glance order), the highest S = g + αL + γV; on equal S the earlier in glance
 * order, as route()'s stable sort keeps it. `verdict` must be in glance order (g descending, the
 * glance's own tie order). Null when there is no candidate.
 */
export function chooseByRuling(verdict: readonly VerdictRecord[], p: RulingParams): string | null {
  const short = shortlist(verdict as VerdictRecord[], p.delta, p.maxShortlist);
  let best: VerdictRecord | null = null;
  let bestS = -Infinity;
  for (const c of short) {
    const S = ruling(c.g, c.L, c.V, p.alpha, p.gamma);
    if (best === null || S > bestS) {
      best = c;
      bestS = S;
    }
  }
  return best?.skill ?? null;
}
