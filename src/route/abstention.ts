/**
 * Abstention calibrated from data: the features of a ruled shortlist and the decision a
 * fitted {@link AbstentionModel} takes on them. Pure: no I/O, no model. `Router.route` applies it to
 * its ruled shortlist, and lab/eval/abstention-fit.ts fits and measures it by replaying the ruling from
 * per-query records through the same two functions, so route and evaluation cannot disagree.
 *
 * The model (its type, checks and file keys) lives with the projections (src/projections/abstention-model.ts),
 * because it is fitted under their α, γ, Δ, β and T.
 *
 * @module
 */
import { invalidArgument } from "../errors.js";
import { bandFor, needsLexical, LEXICAL_FEATURES, modelFeatures, sizeBandFor, sizeBands, type AbstentionFeature, type AbstentionModel, type BandAbstention } from "../projections/abstention-model.js";

export {
  ABSTENTION_FEATURES,
  bandFor,
  sizeBandFor,
  sizeBands,
  type BandAbstention,
  type BySizeAbstention,
  checkAbstentionModel,
  LEXICAL_FEATURES,
  modelFeatures,
  needsLexical,
  needsVerdict,
  readsFeature,
  type AbstentionFeature,
  type AbstentionModel,
  type LogisticAbstention,
  type ThresholdAbstention,
} from "../projections/abstention-model.js";

/**
 * What abstention reads of one ruled shortlist. Every feature is evidence for the match (higher reads
 * more in-domain).
 */
export interface AbstentionFeatures {
  /**
   * S(winner) − S(runner-up) under the ruling (≥ 0). A lone candidate has no runner-up: its margin is
   * +∞, which every model clips to its `marginCap` (the largest contested margin among the fitting
   * records). A lone candidate means Δ left every other skill out on g alone, so it is read as at
   * least as decisive as the most decisive contested ruling seen; a fixed constant would not do, as
   * S's scale moves with α, γ and β. The cap needs no verdict, so a lone candidate's margin is known
   * without one.
   */
  margin: number;
  /** The winner's verdict V (NaN when the verdict did not run). */
  V: number;
  /** The winner's glance vote g. */
  g: number;
  /** The winner's lexical log posterior B, when computed. */
  B?: number;
  /**
   * The lift of the best skill over the library: its B plus log N (N routable skills), i.e.
   * log(p_best / (1/N)), how far BM25's posterior rises above uniform. From the same BM25 pass that
   * gives B's normaliser (free once B is computed). Near 0 when no installed skill shares the task's
   * words, whatever the library's size; the + log N is what lets a threshold fitted on one library
   * size carry to another.
   */
  lift?: number;
  /**
   * The lexical coverage of the task: the best skill's raw BM25 over the most any skill could score
   * for it (src/lexical/postings.ts `lexicalCoverage`), in [0, 1]. From the same BM25 pass as B.
   * Unlike the raw score it does not grow with the task's length, and barely with the library's
   * size: a request whose words some skill holds reads high over 24 skills and over 30K alike.
   */
  coverage?: number;
  /**
   * The lexical reach of the task: ln(1 + r), r the best skill's raw BM25 over the idf of a word no
   * skill holds, ln(1 + (N + 0.5)/0.5) (src/lexical/postings.ts `lexicalReach`). From the same BM25
   * pass as B.
   */
  reach?: number;
  /** The log of the library's routable skills (from the lexical pass, with lift). */
  logN?: number;
  /** g × logN, B × logN, lift × logN, coverage × logN, reach × logN: present with logN and the factor. */
  "g*logN"?: number;
  "B*logN"?: number;
  "lift*logN"?: number;
  "coverage*logN"?: number;
  "reach*logN"?: number;
  /**
   * The winner's reference coverage: the share of the task's distinct words, each weighed by its idf
   * over the projections' reference library, that the winner's text holds (src/lexical/reference-idf.ts),
   * in [0, 1]. Present when the lexical expert ran, the projections carry a reference idf and the
   * model deciding reads it.
   */
  gcov?: number;
  /** `gcov` with each word weighed by its reference idf squared; present as `gcov` is. */
  gcov2?: number;
  /**
   * ln of the number of distinct words the winner's text holds (from the bank's BM25 index). Present
   * when the lexical expert ran and the model deciding reads it.
   */
  skillWords?: number;
  /**
   * The task's domain score (src/lexical/domain.ts): positive reads like an agent's kind of work,
   * negative like an everyday assistant query. Present when the projections carry a domain table, the
   * model deciding reads it and the task holds a word of the table.
   */
  domain?: number;
  /** Candidates in the shortlist. */
  candidates: number;
}

/** The features whose product with logN is a feature. */
const SCALED = ["g", "B", "lift", "coverage", "reach"] as const;

/** A ruled candidate as abstention reads it (a route's `Candidate`, or a replayed record entry). */
export interface RuledForAbstention {
  S: number;
  g: number;
  V: number;
  B?: number;
}

/**
 * The features of a ruled shortlist (best S first, as `rule` returns it), or null when it is empty.
 * `lift` is the best B over the library, `coverage` and `reach` the task's lexical coverage and reach,
 * `logN` the log of the library's routable skills, when the lexical expert ran (see
 * {@link AbstentionFeatures}); with `logN` come the products of g, B, lift, coverage and reach with it.
 * `gcov` and `gcov2` are the winner's (`ruled[0]`) reference coverages and `skillWords` the log of its distinct
 * words, which the caller computes for that skill.
 */
export function abstentionFeatures(ruled: readonly RuledForAbstention[], extra: { lift?: number; coverage?: number; reach?: number; logN?: number; gcov?: number; gcov2?: number; skillWords?: number; domain?: number } = {}): AbstentionFeatures | null {
  if (ruled.length === 0) return null;
  const w = ruled[0];
  const f: AbstentionFeatures = {
    margin: ruled.length > 1 ? w.S - ruled[1].S : Infinity,
    V: w.V,
    g: w.g,
    ...(w.B !== undefined ? { B: w.B } : {}),
    ...(extra.lift !== undefined ? { lift: extra.lift } : {}),
    ...(extra.coverage !== undefined ? { coverage: extra.coverage } : {}),
    ...(extra.reach !== undefined ? { reach: extra.reach } : {}),
    ...(extra.gcov !== undefined ? { gcov: extra.gcov } : {}),
    ...(extra.gcov2 !== undefined ? { gcov2: extra.gcov2 } : {}),
    ...(extra.skillWords !== undefined ? { skillWords: extra.skillWords } : {}),
    ...(extra.domain !== undefined ? { domain: extra.domain } : {}),
    candidates: ruled.length,
  };
  if (extra.logN !== undefined) {
    f.logN = extra.logN;
    for (const name of SCALED) {
      const x = f[name];
      if (x !== undefined && !Number.isNaN(x)) f[`${name}*logN`] = x * extra.logN;
    }
  }
  return f;
}

/** What {@link decideAbstention} decides. */
export interface AbstentionDecision {
  abstain: boolean;
  /**
   * What the threshold is compared with: a threshold model's feature value (margin clipped to the
   * cap), a logistic model's logit z of p(off-domain). NaN when there is no model or no candidate.
   */
  score: number;
  /** A sentence naming the feature(s), their values and the calibrated threshold. */
  reason: string;
}

const LABEL: Readonly<Record<AbstentionFeature, string>> = {
  margin: "the ruling's margin S(winner) − S(runner-up)",
  V: "V of the winner",
  g: "g of the winner",
  B: "B of the winner",
  lift: "the best skill's lift over uniform (max B + log N)",
  coverage: "the lexical coverage (best BM25 / the most any skill could score)",
  reach: "the lexical reach (ln(1 + best BM25 / the idf of a word no skill has))",
  logN: "log N (N routable skills)",
  "g*logN": "g × log N",
  "B*logN": "B × log N",
  "lift*logN": "lift × log N",
  "coverage*logN": "coverage × log N",
  "reach*logN": "reach × log N",
  gcov: "the winner's reference coverage (its share of the task's words, weighed by a reference idf)",
  gcov2: "the winner's reference coverage with each word weighed by its reference idf squared",
  skillWords: "ln of the winner's distinct words",
  domain: "the task's domain score (how much its words read like an agent's work rather than an everyday query)",
};

/** A number for a sentence: 3 significant digits, a true minus sign. */
function fmt(x: number): string {
  if (x === Infinity) return "∞";
  if (x === -Infinity) return "−∞";
  return String(Number(x.toPrecision(3))).replace(/-/g, "−");
}

/**
 * A feature's value as a model reads it: the margin clipped to the model's cap; B, lift, coverage and reach undefined
 * when absent (the neutral case, see {@link decideAbstention}).
 * @throws GavelError `INVALID_ARGUMENT` when the model reads g, V or the margin and it is not a number
 *   (e.g. V when the verdict was skipped: the router must run it when {@link needsVerdict} says so)
 */
export function featureValue(model: BandAbstention, f: AbstentionFeatures, name: AbstentionFeature): number | undefined {
  const x = f[name];
  if (LEXICAL_FEATURES.includes(name)) return x === undefined || Number.isNaN(x) ? undefined : x;
  if (typeof x !== "number" || Number.isNaN(x)) throw invalidArgument(`abstention reads ${LABEL[name]}, which was not computed`);
  return name === "margin" ? Math.min(x, model.marginCap) : x;
}

/**
 * The logistic model's logit z = bias + Σ wᵢ (xᵢ − meanᵢ)/scaleᵢ over values in the model's feature
 * order; an absent value (a lexical feature not computed) sits at its mean, so it adds nothing either way.
 * One implementation: the fit sets its threshold with it, and route decides with it.
 */
export function logisticLogit(model: Extract<AbstentionModel, { kind: "logistic" }>, values: readonly (number | undefined)[]): number {
  let z = model.bias;
  for (let i = 0; i < model.features.length; i++) {
    const x = values[i];
    if (x !== undefined) z += (model.weights[i] * (x - model.mean[i])) / model.scale[i];
  }
  return z;
}

/**
 * The calibrated decision on one ruled shortlist's features. No model (null/undefined) never
 * abstains, nor does an empty shortlist (there is nothing to load anyway). A threshold model abstains
 * when its feature is strictly below the threshold; a logistic one when its logit is strictly above.
 * B, lift, coverage and reach absent (the lexical expert did not run) are neutral: a threshold on them does not
 * abstain, a logistic model reads them at its mean. {@link needsLexical} tells the router to compute
 * them.
 */
export function decideAbstention(model: AbstentionModel | null | undefined, features: AbstentionFeatures | null): AbstentionDecision {
  if (!model) return { abstain: false, score: NaN, reason: "no abstention model: never abstains" };
  if (!features) return { abstain: false, score: NaN, reason: "nothing was shortlisted" };
  if (model.kind === "bySize") {
    const b = sizeBandFor(model, features.logN);
    const d = decideAbstention(b.model, features);
    const n = features.logN === undefined ? "the library's size unknown" : `${Math.round(Math.exp(features.logN))} skills here`;
    const sizes = b.from === 0 ? `libraries under ${b.until} skills` : b.until === Infinity ? `libraries of ${b.from} skills or more` : `libraries of ${b.from} to ${b.until - 1} skills`;
    return { ...d, reason: `${d.reason}; by the model for ${sizes} (${n})` };
  }
  if (model.kind === "threshold") {
    const name = model.feature;
    const x = featureValue(model, features, name);
    if (x === undefined) return { abstain: false, score: NaN, reason: `${LABEL[name]} was not computed (the lexical expert did not run): no abstention on it` };
    const abstain = x < model.threshold;
    const lone = name === "margin" && features.candidates === 1 ? " (one candidate: the margin is the cap)" : "";
    return { abstain, score: x, reason: `${LABEL[name]} ${fmt(x)}${lone} is ${abstain ? "below" : "at or above"} the calibrated ${fmt(model.threshold)}` };
  }
  const values = model.features.map((n) => featureValue(model, features, n));
  const z = logisticLogit(model, values);
  const abstain = z > model.threshold;
  const p = (t: number) => fmt(1 / (1 + Math.exp(-t)));
  // Each feature's pull toward abstaining, strongest first.
  // (a feature the fit left at weight 0, as a sign-bounded fit may, says nothing and is not listed)
  const parts = model.features
    .map((n, i) => ({ n, x: values[i], w: model.weights[i], c: values[i] === undefined ? 0 : (model.weights[i] * (values[i]! - model.mean[i])) / model.scale[i] }))
    .filter((p) => p.w !== 0)
    .sort((a, b) => Math.abs(b.c) - Math.abs(a.c))
    .map(({ n, x, c }) => (x === undefined ? `${LABEL[n]} not computed (neutral)` : `${LABEL[n]} ${fmt(x)} (${c >= 0 ? "+" : "−"}${fmt(Math.abs(c))})`));
  const verdict = abstain ? "is above" : "is at or below";
  return { abstain, score: z, reason: `p(off-domain) ${p(z)} ${verdict} the calibrated ${p(model.threshold)} (logit ${fmt(z)} vs ${fmt(model.threshold)}), from ${parts.join(", ")}` };
}

/** One line saying what a model decides, for display ("abstain when V < −0.4"). */
export function describeAbstentionModel(model: AbstentionModel | null | undefined): string {
  if (!model) return "none";
  if (model.kind === "bySize") return sizeBands(model).map((b) => (b.from === 0 ? `under ${b.until} skills, ` : `from ${b.from}, `) + describeAbstentionModel(b.model)).join("; ");
  if (model.kind === "threshold") return `abstain when ${model.feature} < ${fmt(model.threshold)}`;
  return `logistic over ${modelFeatures(model).join(", ")}: abstain when p(off-domain) > ${fmt(1 / (1 + Math.exp(-model.threshold)))}`;
}

/**
 * Whether a route computes the lexical expert B when the caller does not say: when the ruling weighs
 * it (β > 0), or abstention is on and its model reads it. A library's own cut is measured and applied
 * under this same setting (library-cut.ts, decide.ts).
 */
export function defaultLexical(projections: { readonly beta: number; readonly abstention: AbstentionModel | null }, abstain: boolean): boolean {
  return projections.beta > 0 || (abstain && needsLexical(projections.abstention));
}

/** A small library's own abstention cut, as src/route/library-cut.ts measures it. */
export interface LibraryCut {
  /** The score at or above which a route abstains: the (pass + 1)-th lowest prompt score. */
  readonly cut: number;
  /** How many prompts score below it (would load a skill), and how many were scored. */
  readonly pass: number;
  readonly prompts: number;
  /** The routable skills it was measured over. */
  readonly skills: number;
}

/**
 * `decision` (the model's) with the library's cut applied: a route the model lets through abstains
 * when its score is at or above the cut. Unchanged when no cut applies or the model already abstains;
 * `model` and `logN` say which band decided (the cut was measured with the same band).
 */
export function applyLibraryCut(decision: AbstentionDecision, cut: LibraryCut | null | undefined, model: AbstentionModel | null, logN: number | undefined): AbstentionDecision {
  if (!cut || !model || decision.abstain || !Number.isFinite(decision.score)) return decision;
  if (bandFor(model, logN).kind !== "logistic") return decision;
  if (decision.score < cut.cut) return decision;
  return {
    abstain: true,
    score: decision.score,
    reason: `${decision.reason}; but this library's own cut, logit ${fmt(cut.cut)} (${cut.pass} of the projections' ${cut.prompts} off-domain reference prompts score under it over these ${cut.skills} skills), is at or below ${fmt(decision.score)}: abstaining`,
  };
}
