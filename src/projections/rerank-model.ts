/**
 * The re-ranker as the projections file stores it: a learned re-ranking of the first stage's leaders
 * (src/route/rerank.ts applies it; scripts/select/rerank.ts fits it on validation records). A cascade:
 * the pool is the glance's best `poolGlance` skills and the lexical expert's best `poolLexical`; a
 * cheap stage orders the pool on lexical and name features; the verdict reads the cheap stage's best
 * `verdictTop`; a full stage, which also reads the verdict's L and V, picks among those. Each stage is
 * linear in standardised features: score = Σ weights[i] · (x[i] − mean[i]) / scale[i].
 *
 * It lives here, beside β and T, because it is fitted under those constants (its `bm25` feature is
 * BM25 / T with the lexical expert's k1 and b). This module holds only the data and its checks.
 *
 * @module
 */
import { invalidArgument } from "../errors.js";
import { valueText } from "../util/validate.js";

/**
 * What a stage can read of a pool candidate (src/route/rerank.ts computes them):
 * - `bm25`: its BM25 under the lexical expert's k1 and b, over T;
 * - `bm25Rel`: that BM25 over the pool's best (0 when the best is 0);
 * - `bm25Rank`: ln(1 + its rank by BM25 in the pool), 0 for the best;
 * - `lucene`: its BM25 under the re-ranker's own k1 and b, over the pool's best by it;
 * - `nameShare` / `nameTitle`: the share of its name's words (front-matter name and id's last segment)
 *   found in the task / in the task's first line;
 * - `nameVerbatim`: 1 when its name appears in the task as written (hyphens, underscores or spaces);
 * - `nameBigram`: the share of its name's word pairs found in the task;
 * - `g`, `gRank`: the glance's vote and ln(1 + its rank by it in the pool);
 * - `L`, `V`: the verdict's read-outs; `LRel`: L minus the best L of the candidates the verdict read;
 *   `LRank`: ln(1 + its rank by L among them). Only the full stage may read these.
 */
export const RERANK_FEATURES = Object.freeze([
  "bm25", "bm25Rel", "bm25Rank", "lucene", "nameShare", "nameVerbatim", "nameTitle", "nameBigram", "g", "gRank", "L", "LRel", "LRank", "V",
] as const);

/** One of {@link RERANK_FEATURES}. */
export type RerankFeature = (typeof RERANK_FEATURES)[number];

/** The features only the verdict gives. */
export const VERDICT_FEATURES: readonly RerankFeature[] = Object.freeze(["L", "LRel", "LRank", "V"] as const);

/** One linear stage on standardised features. */
export interface RerankStage {
  readonly features: readonly RerankFeature[];
  readonly weights: readonly number[];
  readonly mean: readonly number[];
  readonly scale: readonly number[];
}

/** The cascade a projections file may carry (see the module's description). */
export interface RerankModel {
  readonly kind: "cascade";
  /** The glance's best k join the pool. */
  readonly poolGlance: number;
  /** The lexical expert's best k join the pool. */
  readonly poolLexical: number;
  /** BM25 constants of the `lucene` feature. */
  readonly lucene: { readonly k1: number; readonly b: number };
  /** The verdict reads the cheap stage's best this many (≥ 1). */
  readonly verdictTop: number;
  /** Orders the pool; reads no verdict feature. */
  readonly cheap: RerankStage;
  /** Picks among the verdict's candidates. */
  readonly full: RerankStage;
  /**
   * The re-ranker applies only to a routable library of at least this many skills (below it the
   * ruling decides): its features' scales follow the library it was fitted on. 0: always.
   */
  readonly minSkills: number;
  /**
   * The verdict runs only when the cheap stage's best leads its second by less than this (in the
   * cheap stage's score); otherwise the cheap stage's best is the pick and the verdict is skipped.
   * Undefined: the verdict always runs.
   */
  readonly verdictMargin?: number;
  /**
   * The verdict reads the cheap stage's best only in a routable library of at least this many
   * skills; below it the cheap stage's best is the pick (over small libraries the verdict changed no
   * pick measured, and costs a route hundreds of milliseconds on a CPU). 0: at every size.
   */
  readonly verdictMinSkills: number;
}

/** Most candidates a pool may take from each expert, and the verdict from the cheap stage: a bound on a route's work. */
export const RERANK_MAX_POOL = 200;
/** Most candidates the verdict may read for the re-ranker. */
export const RERANK_MAX_VERDICT = 20;

function finite(x: unknown, what: string): number {
  if (typeof x !== "number" || !Number.isFinite(x)) throw invalidArgument(`re-ranker: ${what} must be a finite number, got ${valueText(x)}`);
  return x;
}

function count(x: unknown, what: string, lo: number, hi: number): number {
  if (typeof x !== "number" || !Number.isInteger(x) || x < lo || x > hi) throw invalidArgument(`re-ranker: ${what} must be an integer in [${lo}, ${hi}], got ${valueText(x)}`);
  return x;
}

function stage(s: unknown, what: string, verdict: boolean): RerankStage {
  if (s === null || typeof s !== "object") throw invalidArgument(`re-ranker: ${what} must be an object`);
  const o = s as Record<string, unknown>;
  if (!Array.isArray(o.features) || o.features.length === 0) throw invalidArgument(`re-ranker: ${what}.features must be a non-empty list`);
  const features = o.features.map((f) => {
    if (!(RERANK_FEATURES as readonly unknown[]).includes(f)) throw invalidArgument(`re-ranker: ${what} reads an unknown feature ${JSON.stringify(f)} (features: ${RERANK_FEATURES.join(", ")})`);
    if (!verdict && VERDICT_FEATURES.includes(f as RerankFeature)) throw invalidArgument(`re-ranker: ${what} may not read the verdict's ${String(f)}`);
    return f as RerankFeature;
  });
  if (new Set(features).size !== features.length) throw invalidArgument(`re-ranker: ${what}.features repeat (${features.join(", ")})`);
  const list = (k: string) => {
    const xs = o[k];
    if (!Array.isArray(xs) || xs.length !== features.length) throw invalidArgument(`re-ranker: ${what}.${k} must hold ${features.length} numbers`);
    return Object.freeze(xs.map((x, i) => finite(x, `${what}.${k}[${i}]`)));
  };
  const scale = list("scale");
  if (scale.some((v) => v <= 0)) throw invalidArgument(`re-ranker: every ${what}.scale must be > 0`);
  return Object.freeze({ features: Object.freeze(features), weights: list("weights"), mean: list("mean"), scale });
}

/**
 * Checks a re-ranker and returns a frozen copy of it, or null for null/undefined.
 *
 * @throws GavelError `INVALID_ARGUMENT` naming what is wrong
 */
export function checkRerankModel(m: unknown): RerankModel | null {
  if (m === null || m === undefined) return null;
  if (typeof m !== "object") throw invalidArgument("re-ranker must be an object or null");
  const o = m as Record<string, unknown>;
  if (o.kind !== "cascade") throw invalidArgument(`re-ranker: kind must be "cascade", got ${JSON.stringify(o.kind)}`);
  const lucene = o.lucene as Record<string, unknown> | null | undefined;
  if (lucene === null || typeof lucene !== "object") throw invalidArgument("re-ranker: lucene must be an object { k1, b }");
  const k1 = finite(lucene.k1, "lucene.k1"), b = finite(lucene.b, "lucene.b");
  if (k1 < 0 || b < 0 || b > 1) throw invalidArgument(`re-ranker: lucene needs k1 ≥ 0 and b in [0, 1], got k1 ${k1}, b ${b}`);
  const poolGlance = count(o.poolGlance, "poolGlance", 0, RERANK_MAX_POOL);
  const poolLexical = count(o.poolLexical, "poolLexical", 0, RERANK_MAX_POOL);
  if (poolGlance + poolLexical === 0) throw invalidArgument("re-ranker: the pool is empty (poolGlance + poolLexical = 0)");
  return Object.freeze({
    kind: "cascade",
    poolGlance,
    poolLexical,
    lucene: Object.freeze({ k1, b }),
    verdictTop: count(o.verdictTop, "verdictTop", 1, RERANK_MAX_VERDICT),
    cheap: stage(o.cheap, "cheap", false),
    full: stage(o.full, "full", true),
    minSkills: o.minSkills === undefined ? 0 : count(o.minSkills, "minSkills", 0, 2 ** 31 - 1),
    verdictMinSkills: o.verdictMinSkills === undefined ? 0 : count(o.verdictMinSkills, "verdictMinSkills", 0, 2 ** 31 - 1),
    ...(o.verdictMargin === undefined ? {} : { verdictMargin: margin(o.verdictMargin) }),
  });
}

function margin(x: unknown): number {
  const v = finite(x, "verdictMargin");
  if (v < 0) throw invalidArgument(`re-ranker: verdictMargin must be ≥ 0, got ${v}`);
  return v;
}

/** A stage's score of one candidate's feature values (indexed by {@link RERANK_FEATURES} name). */
export function stageScore(s: RerankStage, x: Readonly<Record<RerankFeature, number>>): number {
  let z = 0;
  for (let i = 0; i < s.features.length; i++) z += (s.weights[i] * (x[s.features[i]] - s.mean[i])) / s.scale[i];
  return z;
}
