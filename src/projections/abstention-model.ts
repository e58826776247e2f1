/**
 * The abstention model as the projections file stores it: a decision, learnt on validation
 * records (lab/eval/abstention-fit.ts), to load nothing when the ruled shortlist looks off-domain. It lives
 * here, beside α, γ, Δ, β and T, because it is fitted under those constants; src/route/abstention.ts
 * computes its features and applies it. This module holds only the data and its checks.
 *
 * @module
 */
import { invalidArgument } from "../errors.js";
import { valueText } from "../util/validate.js";

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
 *   weight on each feature can move with the library's size (a request's evidence reads differently
 *   over 3 skills and over 30K). Over the default's records this was not enough for one model to
 *   hold at every size; the default is a {@link BySizeAbstention} instead.
 * - `gcov`: the share of the task's distinct words, each weighed by its idf over a reference library
 *   (the projections' `referenceIdf`, src/lexical/reference-idf.ts), that the winner's text holds, in
 *   [0, 1]. Unlike `coverage` it weighs words by their rarity over thousands of public skills, not
 *   over the installed library, so over 3 skills as over 30K a common word counts for little and a
 *   subject's name for much. Needs the lexical pass and a reference table; absent without them.
 * - `gcov2`: `gcov` with each word weighed by its reference idf squared: the common words a short
 *   off-domain prompt shares with any long skill (the, of, with, always) count for less against the
 *   task's rare ones. Needs what `gcov` needs.
 * - `skillWords`: ln of the number of distinct words (as BM25 splits them) the winner's text holds.
 *   Not evidence either way: it tells the model how much of any task a skill of that length can hold,
 *   so a one-line skill's low coverage need not read as off-domain. Needs the lexical pass.
 * - `domain`: the task's domain score (the projections' `domain` table, src/lexical/domain.ts): how much
 *   its words read like an agent's kind of work rather than an everyday assistant query, whatever the
 *   library holds. Needs a domain table; absent without one, or when the task holds none of its words.
 * Each but `logN`, `skillWords` and the products is evidence *for* the match: higher reads more in-domain.
 */
export const ABSTENTION_FEATURES = Object.freeze(["margin", "V", "g", "B", "lift", "coverage", "reach", "logN", "g*logN", "B*logN", "lift*logN", "coverage*logN", "reach*logN", "gcov", "gcov2", "skillWords", "domain"] as const);

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

/** One threshold or logistic model: what a {@link BySizeAbstention} holds for each band. */
export type BandAbstention = ThresholdAbstention | LogisticAbstention;

/**
 * Two or three models, one for each band of library size: `small` decides for a library of fewer than
 * `from` routable skills; with no `mid`, `large` decides from `from`; with one, `mid` decides from
 * `from` to `midUntil − 1` and `large` from `midUntil`. The lexical evidence of a request reads
 * differently over a few skills and over thousands (a short request's words meet some skill in a big
 * public library, and almost none in a small one), so each band's model is fitted on records of
 * libraries of its own sizes. The size comes from the lexical pass (logN), which such a model
 * therefore always needs.
 */
export interface BySizeAbstention {
  readonly kind: "bySize";
  /** The smallest library (routable skills) the band above `small` decides for; an integer ≥ 2. */
  readonly from: number;
  readonly small: BandAbstention;
  /** The middle band, for libraries of `from` to `midUntil − 1` skills (absent: none). */
  readonly mid?: BandAbstention;
  /** With `mid`: the smallest library `large` decides for, an integer > `from`. */
  readonly midUntil?: number;
  readonly large: BandAbstention;
}

/** The bands of a by-size model, smallest libraries first, each with the sizes it decides for. */
export function sizeBands(model: BySizeAbstention): { model: BandAbstention; from: number; until: number }[] {
  const { small, mid, large, from, midUntil } = model;
  return mid && midUntil !== undefined
    ? [{ model: small, from: 0, until: from }, { model: mid, from, until: midUntil }, { model: large, from: midUntil, until: Infinity }]
    : [{ model: small, from: 0, until: from }, { model: large, from, until: Infinity }];
}

/** A calibrated abstention decision; `null` (no model) never abstains. */
export type AbstentionModel = BandAbstention | BySizeAbstention;

/** The features a model reads, in its order (a by-size model: its bands', each once, then logN). */
export function modelFeatures(model: AbstentionModel): readonly AbstentionFeature[] {
  if (model.kind === "bySize") return [...new Set([...sizeBands(model).flatMap((b) => modelFeatures(b.model)), "logN" as const])];
  return model.kind === "threshold" ? [model.feature] : model.features;
}

/** The band's model that decides for a library of e^logN skills (a band model decides for itself). */
export function bandFor(model: AbstentionModel, logN: number | undefined): BandAbstention {
  return model.kind === "bySize" ? sizeBandFor(model, logN).model : model;
}

/** The band of a by-size model that decides for a library of e^logN skills, with the sizes it covers. */
export function sizeBandFor(model: BySizeAbstention, logN: number | undefined): { model: BandAbstention; from: number; until: number } {
  const bands = sizeBands(model);
  // without the library's size (no lexical pass) the small band decides, as before the split
  if (logN === undefined) return bands[0];
  const n = Math.round(Math.exp(logN));
  return bands.find((b) => n < b.until)!;
}

function finite(x: unknown, what: string): number {
  if (typeof x !== "number" || !Number.isFinite(x)) throw invalidArgument(`abstention model: ${what} must be a finite number, got ${valueText(x)}`);
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
  if (o.kind === "bySize") {
    const from = finite(o.from, "from");
    if (!Number.isInteger(from) || from < 2) throw invalidArgument(`abstention model: from must be an integer ≥ 2, got ${from}`);
    const band = (x: unknown, what: string): BandAbstention => {
      if (x === null || x === undefined || typeof x !== "object") throw invalidArgument(`abstention model: ${what} must be a threshold or logistic model`);
      if ((x as { kind?: unknown }).kind === "bySize") throw invalidArgument(`abstention model: ${what} must be a threshold or logistic model, not another by-size model`);
      return checkAbstentionModel(x) as BandAbstention;
    };
    if ((o.mid === undefined) !== (o.midUntil === undefined)) throw invalidArgument("abstention model: mid and midUntil come together");
    if (o.mid === undefined) return Object.freeze({ kind: "bySize", from, small: band(o.small, "small"), large: band(o.large, "large") });
    const midUntil = finite(o.midUntil, "midUntil");
    if (!Number.isInteger(midUntil) || midUntil <= from) throw invalidArgument(`abstention model: midUntil must be an integer > from (${from}), got ${midUntil}`);
    return Object.freeze({ kind: "bySize", from, small: band(o.small, "small"), mid: band(o.mid, "mid"), midUntil, large: band(o.large, "large") });
  }
  const marginCap = finite(o.marginCap, "marginCap");
  if (marginCap < 0) throw invalidArgument(`abstention model: marginCap must be ≥ 0, got ${marginCap}`);
  const common = {
    threshold: finite(o.threshold, "threshold"),
    marginCap,
    ...(o.targetTriggerRate !== undefined ? { targetTriggerRate: finite(o.targetTriggerRate, "targetTriggerRate") } : {}),
  };
  if (o.kind === "threshold") return Object.freeze({ kind: "threshold", feature: feature(o.feature), ...common });
  if (o.kind !== "logistic") throw invalidArgument(`abstention model: kind must be "threshold", "logistic" or "bySize", got ${JSON.stringify(o.kind)}`);
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
  return readsFeature(model, "V");
}

/**
 * Features that may be absent, read at their mean when they are: those the lexical expert computes
 * (absent when it did not run) and `domain` (absent without a domain table, or for a task that holds
 * none of its words).
 */
export const LEXICAL_FEATURES: readonly AbstentionFeature[] = Object.freeze(["B", "lift", "coverage", "reach", "logN", "g*logN", "B*logN", "lift*logN", "coverage*logN", "reach*logN", "gcov", "gcov2", "skillWords", "domain"] as const);

/** Whether the model reads `feature` (with a nonzero weight, for a logistic model; in any band of a by-size model). */
export function readsFeature(model: AbstentionModel | null | undefined, feature: AbstentionFeature): boolean {
  if (!model) return false;
  if (model.kind === "bySize") return sizeBands(model).some((b) => readsFeature(b.model, feature));
  if (model.kind === "threshold") return model.feature === feature;
  return model.features.some((f, i) => f === feature && model.weights[i] !== 0);
}

/** Whether the model reads the lexical expert (B, lift, coverage, reach or the library's size), so the route must compute it. */
export function needsLexical(model: AbstentionModel | null | undefined): boolean {
  if (!model) return false;
  // a by-size model reads the library's size, which the lexical pass gives
  if (model.kind === "bySize") return true;
  if (model.kind === "threshold") return LEXICAL_FEATURES.includes(model.feature);
  return model.features.some((f, i) => LEXICAL_FEATURES.includes(f) && model.weights[i] !== 0);
}

/**
 * What a small library measures its own abstention cut against (src/route/library-cut.ts applies
 * it). A library of fewer than `below` routable skills, whose deciding band is logistic, routes each
 * of `prompts` (off-domain prompts: requests no skill is written for) over itself once, and a route
 * then also abstains when its score (the logit of p(off-domain)) is at or above the (`pass` + 1)-th
 * lowest of theirs: at most `pass` of the prompts would load a skill there. For an off-domain request
 * exchangeable with the prompts, the chance it loads a skill is then at most (`pass` + 1) / (n + 1),
 * n the number of prompts (the conformal bound), whatever the library: the model's one cut trades one
 * library size against another, this one is set per library.
 */
export interface AbstentionReference {
  /** The off-domain prompts, each scored as a route over the library. */
  readonly prompts: readonly string[];
  /** At most this many prompts may load a skill: the cut is the (pass + 1)-th lowest prompt score. */
  readonly pass: number;
  /** The cut applies to libraries of fewer routable skills than this. */
  readonly below: number;
}

/** Most reference prompts a file may carry, and most characters in one. */
export const MAX_REFERENCE_PROMPTS = 1000;
export const MAX_REFERENCE_PROMPT_CHARS = 4000;

/**
 * Checks a reference and returns a frozen copy of it, or null for null/undefined.
 *
 * @throws GavelError `INVALID_ARGUMENT` naming what is wrong
 */
export function checkAbstentionReference(r: unknown): AbstentionReference | null {
  if (r === null || r === undefined) return null;
  if (typeof r !== "object" || Array.isArray(r)) throw invalidArgument("abstention reference must be an object or null");
  const o = r as Record<string, unknown>;
  for (const k of Object.keys(o)) if (!["prompts", "pass", "below"].includes(k)) throw invalidArgument(`abstention reference: unknown field ${JSON.stringify(k.slice(0, 80))} (fields: prompts, pass, below)`);
  if (!Array.isArray(o.prompts) || o.prompts.length === 0 || o.prompts.length > MAX_REFERENCE_PROMPTS) throw invalidArgument(`abstention reference: prompts must be a list of 1 to ${MAX_REFERENCE_PROMPTS} strings`);
  const prompts = o.prompts.map((p, i) => {
    if (typeof p !== "string" || p.trim() === "" || p.length > MAX_REFERENCE_PROMPT_CHARS) throw invalidArgument(`abstention reference: prompts[${i}] must be a non-blank string of at most ${MAX_REFERENCE_PROMPT_CHARS} characters`);
    return p;
  });
  const pass = o.pass;
  if (typeof pass !== "number" || !Number.isInteger(pass) || pass < 0 || pass >= prompts.length) throw invalidArgument(`abstention reference: pass must be an integer in [0, ${prompts.length - 1}] (fewer than the prompts), got ${valueText(pass)}`);
  const below = o.below;
  if (typeof below !== "number" || !Number.isInteger(below) || below < 2 || below > 2 ** 31) throw invalidArgument(`abstention reference: below must be an integer in [2, 2^31], got ${valueText(below)}`);
  return Object.freeze({ prompts: Object.freeze(prompts), pass, below });
}
