/**
 * Abstention calibrated from data: the decision to load nothing, fitted on validation
 * per-query records of in-domain tasks and of off-domain prompts (records with `offDomain: true`,
 * no golds), and measured on held-out ones.
 *
 * Each record's features are those route() computes (src/route/abstention.ts), by replaying the
 * ruling from its read-outs with the calibrated α, γ, Δ, β, T (`rule`, `shortlist`, `lexicalB`).
 * Candidate models: a threshold on each single feature ("abstain when V < t"), and small L2-regularised
 * logistic regressions of p(off-domain) over all features and over all but V (which lets a lone
 * candidate skip the verdict), at a few λ. Each model's threshold is set on the records it is fitted
 * to, so that it triggers on at most a given share r of their off-domain prompts.
 *
 * Choice by k-fold cross-validation (stratified, seeded; the fits are closed-form or a few Newton
 * steps, so it is cheap): a threshold that triggers on exactly the target share of the records it was
 * set on triggers on more of new prompts (it sits at an extreme quantile of a small sample; with 100
 * prompts a 10% rate has a standard error of 3 points). So for each model the fitting share r is
 * lowered from the target in steps of 5% of it, to the largest r whose out-of-fold trigger rate meets
 * the target: the stricter internal margin is measured, not guessed. Models are then compared by
 * their out-of-fold in-domain abstention rate (those meeting the trigger target first; ties to the
 * model that needs no verdict, then to a threshold). The chosen one is refitted on all the records.
 *
 * @module
 */
import { ABSTENTION_FEATURES, type AbstentionFeature, abstentionFeatures, type AbstentionFeatures, type AbstentionModel, type BandAbstention, decideAbstention, featureValue, invalidArgument, lexicalCoverage, lexicalReach, logisticLogit, needsVerdict, Rng, ruledShortlist, type RulingParams } from "gavel-router/internal";
import type { PerQueryRecord } from "./evaluate.js";
import { lexicalB, verdictPool } from "./lexical-fit.js";
import { fitLogistic } from "./logistic.js";

/** A per-query record as abstention reads it; off-domain prompts carry `offDomain: true`. */
export type AbstentionRecord = PerQueryRecord & { offDomain?: boolean };

/** The ruling replayed to compute features: its constants, and T of the lexical expert. */
export interface AbstentionRuling extends RulingParams {
  /** T of B; without it (the lexical expert not fitted) B and lift are not features. */
  lexicalTemperature?: number;
}

/** One record replayed: the features route() would compute, the skill it commits to, and whether that is accepted. */
export interface ReplayedAbstention {
  features: AbstentionFeatures;
  chosen: string;
  hit: boolean;
}

/**
 * Replays the ruling on one record (as calibrate does: the verdict pool in glance order, cut to
 * maxShortlist, B from the record's lexical read-outs at T) and returns the abstention features of the
 * ruled shortlist; null when the record has no verdict read-outs.
 */
export function replayAbstention(record: AbstentionRecord, ruling: AbstentionRuling): ReplayedAbstention | null {
  if (!record.verdict || record.verdict.length === 0) return null;
  const T = ruling.lexicalTemperature;
  const lex = T === undefined ? undefined : record.lexical;
  const ruled = ruledShortlist(verdictPool(record, T), ruling);
  if (lex && lex.size === undefined) throw invalidArgument(`record ${record.id}: its lexical read-outs lack the library size (regenerate them with scripts/device/lexical-records.ts)`);
  const logN = lex ? Math.log(lex.size!) : undefined;
  const lift = lex ? lexicalB(lex, lex.top[0]?.s ?? 0, T!) + logN! : undefined;
  // coverage needs the ceiling, which records made before it lack (the feature is then absent)
  const coverage = lex?.ceiling !== undefined ? lexicalCoverage(lex.top[0]?.s ?? 0, lex.ceiling) : undefined;
  const reach = lex ? lexicalReach(lex.top[0]?.s ?? 0, lex.size!) : undefined;
  const gcov = ruled.length > 0 ? lex?.gcov?.[ruled[0].skill] : undefined;
  const gcov2 = ruled.length > 0 ? lex?.gcov2?.[ruled[0].skill] : undefined;
  const skillWords = ruled.length > 0 ? lex?.skillWords?.[ruled[0].skill] : undefined;
  const features = abstentionFeatures(ruled, { ...(lift !== undefined ? { lift, reach, logN } : {}), ...(coverage !== undefined ? { coverage } : {}), ...(gcov !== undefined ? { gcov } : {}), ...(gcov2 !== undefined ? { gcov2 } : {}), ...(skillWords !== undefined ? { skillWords } : {}), ...(lex?.domain !== undefined ? { domain: lex.domain } : {}) });
  if (!features) return null;
  return { features, chosen: ruled[0].skill, hit: (record.accepted ?? []).includes(ruled[0].skill) };
}

/** Splits records by their `offDomain` flag. */
export function splitByDomain(records: readonly AbstentionRecord[]): { inDomain: AbstentionRecord[]; offDomain: AbstentionRecord[] } {
  return { inDomain: records.filter((r) => !r.offDomain), offDomain: records.filter((r) => r.offDomain === true) };
}

/** A family of models: how to fit one to records, before its threshold is set. */
export type AbstentionFamily = { kind: "threshold"; feature: AbstentionFeature } | { kind: "logistic"; features: AbstentionFeature[]; lambda: number; monotone?: boolean };
/**
 * The evidence for the match (higher reads in-domain): a monotone logistic family keeps their weights
 * toward abstaining ≤ 0, however far a request lies from the fitting records. logN, its products and
 * skillWords (a normaliser: a long skill holds a chance word more often) stay free.
 */
export const EVIDENCE_FEATURES: readonly AbstentionFeature[] = Object.freeze(["margin", "V", "g", "B", "lift", "coverage", "reach", "gcov", "gcov2", "domain"]);

/** A family's name in reports: "V < t", "logistic(margin, V, g; λ=0.1)". */
export function familyLabel(f: AbstentionFamily): string {
  return f.kind === "threshold" ? `${f.feature} < t` : `${f.monotone ? "monotone " : ""}logistic(${f.features.join(", ")}; λ=${f.lambda})`;
}

/** Options of {@link fitAbstention}. */
export interface FitAbstentionOptions {
  /** The stated false-trigger rate: the most off-domain prompts that may get a skill (default 0.1). */
  targetTriggerRate?: number;
  /** The in-domain abstention rate aimed at (default 0.05): reported against, never traded for triggers. */
  targetAbstentionRate?: number;
  /** Folds of the cross-validation (default 5; fewer when a class has fewer records; < 2: none). */
  folds?: number;
  /** Seed of the fold assignment (default 0). */
  seed?: number;
  /** λ values of the logistic families (default 0.01, 0.1, 1). */
  lambdas?: number[];
  /** The features to consider (default every one the records carry). */
  features?: AbstentionFeature[];
  /** Logistic families keep the weights of {@link EVIDENCE_FEATURES} toward abstaining ≤ 0 (default false). */
  monotone?: boolean;
  /**
   * Set thresholds at this off-domain share on the fitting records instead of the cross-validated
   * one (e.g. the target itself).
   */
  fitTriggerRate?: number;
}

/** An in-domain abstention rate and an off-domain trigger rate. */
export interface AbstentionRates {
  abstentionRate: number;
  triggerRate: number;
}

/** One candidate model in the report. */
export interface AbstentionCandidate {
  label: string;
  family: AbstentionFamily;
  /** The off-domain share its threshold was set at on the fitting records. */
  fitTriggerRate: number;
  /** Out-of-fold rates at that share (null without cross-validation). */
  cv: AbstentionRates | null;
  /** The model refitted on all the records, and its rates there. */
  model: BandAbstention;
  fitting: AbstentionRates;
}

/** What {@link fitAbstention} reports besides the model. */
export interface AbstentionFitReport {
  targetTriggerRate: number;
  targetAbstentionRate: number;
  /** Records used (with verdict read-outs), and records without them (left out). */
  inDomain: number;
  offDomain: number;
  skipped: number;
  /** The features the records allowed. */
  features: AbstentionFeature[];
  /** Folds of the cross-validation (0: none, too few records). */
  folds: number;
  candidates: AbstentionCandidate[];
  /** The chosen candidate's label, its rates on the fitting records and out of fold. */
  chosen: string;
  fitting: AbstentionRates;
  cv: AbstentionRates | null;
  /** Whether the chosen model's trigger rate meets the target (out of fold when cross-validated). */
  meetsTriggerTarget: boolean;
  meetsAbstentionTarget: boolean;
}

/** Features with their labels (1: off-domain). */
interface Data {
  rows: AbstentionFeatures[];
  off: Uint8Array;
}

/** A family fitted to some rows: its abstain score (abstain when > θ) and the model at a θ. */
interface Scorer {
  score(row: AbstentionFeatures): number;
  model(theta: number): BandAbstention;
}

/** The largest contested margin among the rows (1 when none is finite and positive). */
function marginCap(rows: readonly AbstentionFeatures[]): number {
  let cap = 0;
  for (const r of rows) if (Number.isFinite(r.margin)) cap = Math.max(cap, r.margin);
  return cap > 0 ? cap : 1;
}

function fitScorer(family: AbstentionFamily, rows: readonly AbstentionFeatures[], off: ArrayLike<number>, target: number): Scorer {
  const cap = marginCap(rows);
  if (family.kind === "threshold") {
    const base = { kind: "threshold" as const, feature: family.feature, marginCap: cap, targetTriggerRate: target };
    return {
      score: (r) => -featureValue({ ...base, threshold: 0 }, r, family.feature)!,
      model: (theta) => ({ ...base, threshold: -theta }),
    };
  }
  const probe: BandAbstention = { kind: "threshold", feature: "margin", threshold: 0, marginCap: cap };
  const X = rows.map((r) => family.features.map((f) => featureValue(probe, r, f)!));
  const fit = fitLogistic(X, off, { lambda: family.lambda, ...(family.monotone ? { signs: family.features.map((f) => (EVIDENCE_FEATURES.includes(f) ? -1 : 0)) } : {}) });
  const base = { kind: "logistic" as const, features: family.features, weights: fit.weights, bias: fit.bias, mean: fit.mean, scale: fit.scale, marginCap: cap, targetTriggerRate: target };
  const m0 = { ...base, threshold: 0 };
  return {
    score: (r) => logisticLogit(m0, family.features.map((f) => featureValue(m0, r, f))),
    model: (theta) => ({ ...base, threshold: theta }),
  };
}

/**
 * θ such that abstaining when a score is > θ leaves at most `allowed` of the off-domain scores at or
 * below it (triggers) with the fewest in-domain abstentions, and, among the θ that abstain on exactly
 * those in-domain tasks, the one with the fewest triggers, midway in its gap (the widest margin on
 * both sides). Where the classes separate, θ lies in the middle of the gap between them whatever
 * `allowed` is: the trigger budget is a ceiling, not a quota to spend.
 */
export function abstainCut(offScores: readonly number[], inScores: readonly number[], allowed: number): number {
  const hi = loosestCut(offScores, inScores, allowed);
  // Any θ at or above the highest in-domain score that hi keeps abstains on the same in-domain tasks.
  let kept = -Infinity;
  for (const s of inScores) if (s <= hi && s > kept) kept = s;
  if (!Number.isFinite(kept)) return hi;
  let nextOff = Infinity;
  for (const s of offScores) if (s > kept && s < nextOff) nextOff = s;
  const upper = nextOff <= hi ? nextOff : hi;
  return kept + (upper - kept) / 2;
}

/** The highest θ within the trigger budget: midway between the (allowed+1)-th lowest off-domain score and the next lower score of either class. */
function loosestCut(offScores: readonly number[], inScores: readonly number[], allowed: number): number {
  const off = [...offScores].sort((a, b) => a - b);
  if (allowed >= off.length) return Math.max(...off, ...inScores) + 1;
  const cut = off[allowed];
  let below = -Infinity;
  for (const s of [...off, ...inScores]) if (s < cut && s > below) below = s;
  return Number.isFinite(below) ? below + (cut - below) / 2 : cut - Math.max(1e-6, 1e-3 * Math.abs(cut));
}

/** How many of n may trigger at share r (r·n rounded down, robust to r·n landing a hair below an integer). */
function allowedOf(r: number, n: number): number {
  return Math.floor(r * n + 1e-9);
}

/** The stratified folds: a fold index per row, in-domain and off-domain rows dealt separately. */
function assignFolds(off: Uint8Array, k: number, seed: number): Uint8Array {
  const fold = new Uint8Array(off.length);
  const rng = new Rng(seed);
  for (const label of [0, 1]) {
    const idx = [...off.keys()].filter((i) => off[i] === label);
    for (let i = idx.length - 1; i > 0; i--) {
      const j = rng.int(i + 1);
      [idx[i], idx[j]] = [idx[j], idx[i]];
    }
    idx.forEach((row, pos) => (fold[row] = pos % k));
  }
  return fold;
}

/** Out-of-fold counts of one family at each share of `rates`: in-domain abstentions and off-domain triggers. */
function crossValidate(family: AbstentionFamily, data: Data, fold: Uint8Array, k: number, rates: readonly number[], target: number): AbstentionRates[] {
  const abstained = new Float64Array(rates.length);
  const triggered = new Float64Array(rates.length);
  for (let j = 0; j < k; j++) {
    const train = data.rows.filter((_, i) => fold[i] !== j);
    const trainOff = data.off.filter((_, i) => fold[i] !== j);
    const scorer = fitScorer(family, train, trainOff, target);
    const scores = train.map((r) => scorer.score(r));
    const offScores = scores.filter((_, i) => trainOff[i] === 1);
    const inScores = scores.filter((_, i) => trainOff[i] === 0);
    const held = data.rows.map((r, i) => (fold[i] === j ? scorer.score(r) : NaN));
    rates.forEach((r, ri) => {
      const theta = abstainCut(offScores, inScores, allowedOf(r, offScores.length));
      held.forEach((s, i) => {
        if (Number.isNaN(s)) return;
        if (data.off[i] === 0 && s > theta) abstained[ri]++;
        if (data.off[i] === 1 && s <= theta) triggered[ri]++;
      });
    });
  }
  const nOff = data.off.reduce((a, b) => a + b, 0);
  const nIn = data.off.length - nOff;
  return rates.map((_, ri) => ({ abstentionRate: abstained[ri] / nIn, triggerRate: triggered[ri] / nOff }));
}

/** The rates of a model over rows, through route()'s own {@link decideAbstention}. */
function ratesOf(model: AbstentionModel, data: Data): AbstentionRates {
  let abstained = 0;
  let triggered = 0;
  data.rows.forEach((r, i) => {
    const a = decideAbstention(model, r).abstain;
    if (data.off[i] === 0 && a) abstained++;
    if (data.off[i] === 1 && !a) triggered++;
  });
  const nOff = data.off.reduce((a, b) => a + b, 0);
  return { abstentionRate: abstained / (data.off.length - nOff), triggerRate: triggered / nOff };
}

/**
 * Features every row carries (B and lift only with the lexical expert's read-outs), within `wanted`,
 * and that vary across the rows (logN over records of one library is one value: nothing to learn).
 */
function availableFeatures(rows: readonly AbstentionFeatures[], wanted: readonly AbstentionFeature[]): AbstentionFeature[] {
  return ABSTENTION_FEATURES.filter((f) => {
    if (!wanted.includes(f)) return false;
    if (!rows.every((r) => (f === "margin" ? !Number.isNaN(r.margin) : Number.isFinite(r[f])))) return false;
    return f === "margin" || rows.some((r) => r[f] !== rows[0][f]);
  });
}

function families(features: readonly AbstentionFeature[], lambdas: readonly number[], monotone = false): AbstentionFamily[] {
  const out: AbstentionFamily[] = features.map((feature) => ({ kind: "threshold", feature }));
  const withoutV = features.filter((f) => f !== "V");
  const m = monotone ? { monotone: true } : {};
  for (const lambda of lambdas) {
    if (features.length > 1) out.push({ kind: "logistic", features: [...features], lambda, ...m });
    if (features.includes("V") && withoutV.length > 1) out.push({ kind: "logistic", features: withoutV, lambda, ...m });
  }
  return out;
}

/** Checks options and returns them with defaults. */
function fitOptions(o: FitAbstentionOptions) {
  const target = o.targetTriggerRate ?? 0.1;
  if (!(target >= 0 && target < 1)) throw invalidArgument(`fitAbstention: targetTriggerRate must be in [0, 1), got ${target}`);
  const lambdas = o.lambdas ?? [0.01, 0.1, 1];
  if (lambdas.some((l) => !(l > 0) || !Number.isFinite(l))) throw invalidArgument("fitAbstention: every λ must be finite and > 0");
  if (o.fitTriggerRate !== undefined && !(o.fitTriggerRate >= 0 && o.fitTriggerRate < 1)) throw invalidArgument("fitAbstention: fitTriggerRate must be in [0, 1)");
  const folds = o.folds ?? 5;
  if (!Number.isInteger(folds) || folds < 0) throw invalidArgument("fitAbstention: folds must be a non-negative integer");
  return { target, lambdas, folds, seed: o.seed ?? 0, targetAbstentionRate: o.targetAbstentionRate ?? 0.05 };
}

/** Replays records into features, leaving out those without verdict read-outs. */
function replayAll(inDomain: readonly AbstentionRecord[], offDomain: readonly AbstentionRecord[], ruling: AbstentionRuling): { data: Data; skipped: number; nOff: number } {
  const rows: AbstentionFeatures[] = [];
  const labels: number[] = [];
  let skipped = 0;
  let nOff = 0;
  for (const [records, label] of [[inDomain, 0], [offDomain, 1]] as const) {
    for (const r of records) {
      const x = replayAbstention(r, ruling);
      if (!x) skipped++;
      else {
        rows.push(x.features);
        labels.push(label);
        nOff += label;
      }
    }
  }
  return { data: { rows, off: Uint8Array.from(labels) }, skipped, nOff };
}

/** Candidates in preference order: meeting the trigger target, fewer abstentions, no verdict, simpler, earlier. */
function preferred(a: AbstentionCandidate, b: AbstentionCandidate, target: number): number {
  const ra = a.cv ?? a.fitting;
  const rb = b.cv ?? b.fitting;
  const okA = ra.triggerRate <= target + 1e-12;
  const okB = rb.triggerRate <= target + 1e-12;
  if (okA !== okB) return okA ? -1 : 1;
  if (!okA && ra.triggerRate !== rb.triggerRate) return ra.triggerRate - rb.triggerRate;
  if (ra.abstentionRate !== rb.abstentionRate) return ra.abstentionRate - rb.abstentionRate;
  const va = needsVerdict(a.model) ? 1 : 0;
  const vb = needsVerdict(b.model) ? 1 : 0;
  if (va !== vb) return va - vb;
  return (a.family.kind === "threshold" ? 0 : 1) - (b.family.kind === "threshold" ? 0 : 1);
}

/**
 * Fits the abstention model on validation records (see the module's comment for the method): the
 * in-domain tasks and the off-domain prompts, each replayed under `ruling`. Records without verdict
 * read-outs are left out (counted in `skipped`).
 *
 * @throws GavelError `INVALID_ARGUMENT` when either class has no usable record, or on bad options
 */
export function fitAbstention(inDomain: readonly AbstentionRecord[], offDomain: readonly AbstentionRecord[], ruling: AbstentionRuling, options: FitAbstentionOptions = {}): { model: BandAbstention; report: AbstentionFitReport } {
  const o = fitOptions(options);
  const { data, skipped, nOff } = replayAll(inDomain, offDomain, ruling);
  const nIn = data.rows.length - nOff;
  if (nIn === 0 || nOff === 0) throw invalidArgument(`fitAbstention: needs in-domain and off-domain records with verdict read-outs (got ${nIn} and ${nOff})`);
  // the library's size and its products only when asked for: records over one library hold one size
  const features = availableFeatures(data.rows, options.features ?? ABSTENTION_FEATURES.filter((f) => !f.includes("logN")));
  if (features.length === 0) throw invalidArgument("fitAbstention: no feature is available in every record");
  const k = Math.min(o.folds, nIn, nOff);
  const cvOn = k >= 2;
  const rates = options.fitTriggerRate !== undefined ? [options.fitTriggerRate] : cvOn ? Array.from({ length: 21 }, (_, i) => o.target * (1 - i / 20)) : [o.target];
  const fold = cvOn ? assignFolds(data.off, k, o.seed) : new Uint8Array(0);
  const candidates = families(features, o.lambdas, options.monotone ?? false).map((family): AbstentionCandidate => {
    let ri = 0;
    let cv: AbstentionRates | null = null;
    if (cvOn) {
      const curve = crossValidate(family, data, fold, k, rates, o.target);
      const ok = curve.findIndex((c) => c.triggerRate <= o.target + 1e-12);
      ri = ok >= 0 ? ok : curve.reduce((best, c, i) => (c.triggerRate < curve[best].triggerRate ? i : best), 0);
      cv = curve[ri];
    }
    const scorer = fitScorer(family, data.rows, data.off, o.target);
    const scores = data.rows.map((r) => scorer.score(r));
    const offScores = scores.filter((_, i) => data.off[i] === 1);
    const theta = abstainCut(offScores, scores.filter((_, i) => data.off[i] === 0), allowedOf(rates[ri], nOff));
    const model = scorer.model(theta);
    return { label: familyLabel(family), family, fitTriggerRate: rates[ri], cv, model, fitting: ratesOf(model, data) };
  });
  const chosen = [...candidates].sort((a, b) => preferred(a, b, o.target))[0];
  const rated = chosen.cv ?? chosen.fitting;
  return {
    model: chosen.model,
    report: {
      targetTriggerRate: o.target,
      targetAbstentionRate: o.targetAbstentionRate,
      inDomain: nIn,
      offDomain: nOff,
      skipped,
      features,
      folds: cvOn ? k : 0,
      candidates,
      chosen: chosen.label,
      fitting: chosen.fitting,
      cv: chosen.cv,
      meetsTriggerTarget: rated.triggerRate <= o.target + 1e-12,
      meetsAbstentionTarget: rated.abstentionRate <= o.targetAbstentionRate + 1e-12,
    },
  };
}

/** What {@link evaluateAbstention} measures on held-out records. */
export interface AbstentionEvaluation extends AbstentionRates {
  inDomain: number;
  offDomain: number;
  /** Records without verdict read-outs, left out. */
  skipped: number;
  /** In-domain Hit@1 with every abstention counted as a miss. */
  hitAt1: number;
  /** In-domain Hit@1 of the ruling without abstention. */
  hitAt1WithoutAbstention: number;
  /** Hit@1 over the in-domain tasks it did not abstain on (NaN when it abstained on all). */
  answeredHitAt1: number;
  /** In-domain tasks the ruling had right that abstention dropped. */
  lostHits: number;
}

/**
 * Measures a model on held-out records (e.g. the test split's tasks and held-back off-domain
 * prompts), through route()'s own decision: in-domain abstention rate, off-domain trigger rate, and
 * in-domain Hit@1 with abstentions as misses. A null model never abstains.
 */
export function evaluateAbstention(model: AbstentionModel | null, inDomain: readonly AbstentionRecord[], offDomain: readonly AbstentionRecord[], ruling: AbstentionRuling): AbstentionEvaluation {
  let skipped = 0;
  const decide = (r: AbstentionRecord) => {
    const x = replayAbstention(r, ruling);
    if (!x) skipped++;
    return x && { ...x, abstain: decideAbstention(model, x.features).abstain };
  };
  const ins = inDomain.map(decide).filter((x) => x !== null);
  const offs = offDomain.map(decide).filter((x) => x !== null);
  const answered = ins.filter((x) => !x.abstain);
  const hits = answered.filter((x) => x.hit).length;
  return {
    inDomain: ins.length,
    offDomain: offs.length,
    skipped,
    abstentionRate: ins.length ? (ins.length - answered.length) / ins.length : 0,
    triggerRate: offs.length ? offs.filter((x) => !x.abstain).length / offs.length : 0,
    hitAt1: ins.length ? hits / ins.length : 0,
    hitAt1WithoutAbstention: ins.length ? ins.filter((x) => x.hit).length / ins.length : 0,
    answeredHitAt1: answered.length ? hits / answered.length : NaN,
    lostHits: ins.filter((x) => x.abstain && x.hit).length,
  };
}
