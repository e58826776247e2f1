/**
 * The abstention model as the projections file stores it: a decision, learnt on validation
 * records (lab/eval/abstention-fit.ts), to load nothing when the ruled shortlist looks off-domain. It lives
 * here, beside α, γ, Δ, β and T, because it is fitted under those constants; src/route/abstention.ts
 * computes its features and applies it. This module holds only the data and its checks.
 *
 * @module
 */
import { invalidArgument } from "../errors.js";

/**
 * What an abstention model can read of a ruled shortlist (src/route/abstention.ts computes them):
 * - `margin`: S(winner) − S(runner-up) of the ruling; a lone candidate reads as the model's
 *   `marginCap` (every margin is clipped to it);
 * - `V`: the verdict's yes/no log-odds of the winner;
 * - `g`: the glance's vote for the winner;
 * - `B`: the lexical expert's log posterior of the winner;
 * - `lift`: the best B over the whole library plus log N (s_top/T − log Z + log N, the log of the best
 *   skill's posterior over uniform): how well any installed skill shares the task's words.
 * - `coverage`: the best skill's raw BM25 over the most any skill could score for this task
 *   (Σ over the task's words of idf·(k1+1), src/lexical/postings.ts `bm25Ceiling`), in [0, 1]: the
 *   share of the task's idf-weighted words the best skill holds, whatever the task's length and
 *   (nearly) the library's size.
 * - `reach`: ln(1 + r), r the best skill's raw BM25 over ln(1 + (N + 0.5)/0.5), the idf of a word no
 *   skill holds (src/lexical/postings.ts `lexicalReach`): r is about how many of the library's rarest
 *   words the best skill matches; it reads alike over 24 skills and 30K, and grows with the task's length.
 * - `logN`: the log of the library's routable skills, from the same lexical pass; and the products
 *   `g*logN`, `B*logN`, `lift*logN`, `coverage*logN`, `reach*logN`, through which a logistic model's
 *   weight on each feature moves with the library's size (a request's evidence reads differently
 *   over 3 skills and over 30K: one model, fitted over libraries of every size, holds for both).
 * Each but `logN` and the products is evidence *for* the match: higher reads more in-domain.
 */
export const ABSTENTION_FEATURES = Object.freeze(["margin", "V", "g", "B", "lift", "coverage", "reach", "logN", "g*logN", "B*logN", "lift*logN", "coverage*logN", "reach*logN"] as const);

/** One of {@link ABSTENTION_FEATURES}. */
export type AbstentionFeature = (typeof ABSTENTION_FEATURES)[number];

/** Abstain when one feature is below a threshold. */
export interface ThresholdAbstention {
  readonly kind: "threshold";
  readonly feature: AbstentionFeature;
  /** Abstain when the feature is strictly below it. */
  readonly threshold: number;
  /** The margin of a lone candidate, and the most any margin counts (see {@link ABSTENTION_FEATURES}). */
  readonly marginCap: number;
  /** The off-domain trigger rate the model was fitted for (bookkeeping; the decision does not read it). */
  readonly targetTriggerRate?: number;
}

/**
 * A logistic model of p(off-domain | features) on standardised features:
 * z = bias + Σ weights[i] · (x[i] − mean[i]) / scale[i]; abstain when z > threshold (z is a logit,
 * so the threshold on p is σ(threshold)).
 */
export interface LogisticAbstention {
  readonly kind: "logistic";
  readonly features: readonly AbstentionFeature[];
  readonly weights: readonly number[];
  readonly bias: number;
  readonly mean: readonly number[];
  readonly scale: readonly number[];
  /** Abstain when the logit z is strictly above it. */
  readonly threshold: number;
  readonly marginCap: number;
  readonly targetTriggerRate?: number;
}

/** A calibrated abstention decision; `null` (no model) never abstains. */
export type AbstentionModel = ThresholdAbstention | LogisticAbstention;

/** The features a model reads, in its order. */
export function modelFeatures(model: AbstentionModel): readonly AbstentionFeature[] {
  return model.kind === "threshold" ? [model.feature] : model.features;
}

function finite(x: unknown, what: string): number {
  if (typeof x !== "number" || !Number.isFinite(x)) throw invalidArgument(`abstention model: ${what} must be a finite number, got ${String(x)}`);
  return x;
}

function finiteList(xs: unknown, n: number, what: string): number[] {
  if (!Array.isArray(xs) || xs.length !== n) throw invalidArgument(`abstention model: ${what} must hold ${n} numbers`);
  return xs.map((x, i) => finite(x, `${what}[${i}]`));
}

function feature(name: unknown): AbstentionFeature {
  if (!(ABSTENTION_FEATURES as readonly unknown[]).includes(name)) {
    throw invalidArgument(`abstention model: unknown feature ${JSON.stringify(name)} (features: ${ABSTENTION_FEATURES.join(", ")})`);
  }
  return name as AbstentionFeature;
}

/**
 * Checks a model and returns a frozen copy of it (arrays copied), or null for null/undefined.
 *
 * @throws GavelError `INVALID_ARGUMENT` naming what is wrong
 */
export function checkAbstentionModel(m: unknown): AbstentionModel | null {
  if (m === null || m === undefined) return null;
  if (typeof m !== "object") throw invalidArgument("abstention model must be an object or null");
  const o = m as Record<string, unknown>;
  const marginCap = finite(o.marginCap, "marginCap");
  if (marginCap < 0) throw invalidArgument(`abstention model: marginCap must be ≥ 0, got ${marginCap}`);
  const common = {
    threshold: finite(o.threshold, "threshold"),
    marginCap,
    ...(o.targetTriggerRate !== undefined ? { targetTriggerRate: finite(o.targetTriggerRate, "targetTriggerRate") } : {}),
  };
  if (o.kind === "threshold") return Object.freeze({ kind: "threshold", feature: feature(o.feature), ...common });
  if (o.kind !== "logistic") throw invalidArgument(`abstention model: kind must be "threshold" or "logistic", got ${JSON.stringify(o.kind)}`);
  if (!Array.isArray(o.features) || o.features.length === 0) throw invalidArgument("abstention model: features must be a non-empty list");
  const features = o.features.map(feature);
  if (new Set(features).size !== features.length) throw invalidArgument(`abstention model: features repeat (${features.join(", ")})`);
  const n = features.length;
  const scale = finiteList(o.scale, n, "scale");
  if (scale.some((s) => s <= 0)) throw invalidArgument("abstention model: every scale must be > 0");
  return Object.freeze({
    kind: "logistic",
    features: Object.freeze(features),
    weights: Object.freeze(finiteList(o.weights, n, "weights")),
    bias: finite(o.bias, "bias"),
    mean: Object.freeze(finiteList(o.mean, n, "mean")),
    scale: Object.freeze(scale),
    ...common,
  });
}

/** Whether the model reads the verdict's V (else a lone candidate needs no verdict at all). */
export function needsVerdict(model: AbstentionModel | null | undefined): boolean {
  if (!model) return false;
  if (model.kind === "threshold") return model.feature === "V";
  return model.features.some((f, i) => f === "V" && model.weights[i] !== 0);
}

/** Features the lexical expert computes: absent when it did not run. */
export const LEXICAL_FEATURES: readonly AbstentionFeature[] = Object.freeze(["B", "lift", "coverage", "reach", "logN", "g*logN", "B*logN", "lift*logN", "coverage*logN", "reach*logN"] as const);

/** Whether the model reads the lexical expert (B, lift, coverage, reach or the library's size), so the route must compute it. */
export function needsLexical(model: AbstentionModel | null | undefined): boolean {
  if (!model) return false;
  if (model.kind === "threshold") return LEXICAL_FEATURES.includes(model.feature);
  return model.features.some((f, i) => LEXICAL_FEATURES.includes(f) && model.weights[i] !== 0);
}
