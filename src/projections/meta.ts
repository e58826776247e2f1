/**
 * What a {@link Projections} is made of, apart from the class: the paper's defaults, the metadata
 * fields, the constructor's arguments and the calibration a copy can take. Shared by the class and
 * the projections file format (file.ts).
 */
import type { ModelFingerprint } from "../model/fingerprint.js";
import type { AbstentionModel, AbstentionReference } from "./abstention-model.js";
import type { RerankModel } from "./rerank-model.js";
import type { ReferenceIdf } from "../lexical/reference-idf.js";
import type { DomainModel } from "../lexical/domain.js";

/** Defaults of the paper's setup (section 4.1). */
export const PROJECTION_DEFAULTS = Object.freeze({
  dim: 768,
  tau: 40,
  eps: 0.83,
  alpha: 1.0,
  gamma: 0.025,
  delta: 0.133,
  maxShortlist: 20,
  /** β: weight of the lexical expert B; 0 leaves it out, the paper's ruling. */
  beta: 0,
  /** T of B = log softmax(BM25 / T) over the library (BM25 points per nat). */
  lexicalTemperature: 1,
  /** BM25's term-frequency saturation k1 in B (Lucene's 1.2 for files without it). */
  lexicalK1: 1.2,
  /** BM25's length normalisation b in B (Lucene's 0.75 for files without it). */
  lexicalB: 0.75,
  /** The verdict's pool also takes the glance's best k skills (0: only the first stage's Δ-shortlist). */
  shortlistGlance: 0,
  /** The verdict's pool also takes the lexical expert's best k skills (0: none). */
  shortlistLexical: 0,
  /** The vote weight of a written task's tokens in the glance: the paper's uniform vote. */
  glanceRowWeights: "uniform" as GlanceRowWeights,
  /** The glance's vote share s: each written task's token votes for max(k, round(s·N)) skills (0: the paper's k). */
  glanceVoteShare: 0,
  /** The skill budget a router opens with (0: the router's own rule, min(30,720, ¾ of the context)). */
  skillBudget: 0,
  /** The key budget a router installs with (0: the skill budget, i.e. keys from r(s) alone). */
  keyBudget: 0,
});

/** The largest skill or key budget a projections file may carry (the router's own bound on keyBudget). */
export const MAX_BUDGET = 1 << 20;

/**
 * How a written task's tokens weigh in the glance's vote: `uniform` (the paper's), or `idf`, each
 * token's ln((N + 1) / (df + 0.5)) over the N routable skills' kept key tokens.
 */
export type GlanceRowWeights = "uniform" | "idf";

/** Metadata of a {@link Projections} (everything but the weights). */
export interface ProjectionsMeta {
  /** ℓ*: 0-based index of the block whose output (residual stream) both maps read. */
  readonly layer: number;
  /** Rows of W_q and W_s: the width of queries and keys. */
  readonly dim: number;
  /** Contrastive temperature τ the maps were trained at. */
  readonly tau: number;
  /** ε of the farthest-first cover that thins each skill's keys. */
  readonly eps: number;
  /** α: weight of the verdict's likelihood L in S = g + αL + γV. */
  readonly alpha: number;
  /** γ: weight of the verdict's yes/no log-odds V. */
  readonly gamma: number;
  /** Δ: skills whose glance g is within Δ of the best are shortlisted. */
  readonly delta: number;
  /** β: weight of the lexical expert B in S = g + αL + γV + βB (0: not used; files without it read as 0). */
  readonly beta: number;
  /** T of the lexical expert B = log softmax(BM25 / T) over the installed skills, in [1e-9, 1e9]. */
  readonly lexicalTemperature: number;
  /** BM25's k1 in the lexical expert. */
  readonly lexicalK1: number;
  /** BM25's b in the lexical expert. */
  readonly lexicalB: number;
  /** The glance's best k join the verdict's pool (0: none beyond the Δ-shortlist). */
  readonly shortlistGlance: number;
  /** The lexical expert's best k join the verdict's pool (0: none). */
  readonly shortlistLexical: number;
  /** Most skills the verdict examines. */
  readonly maxShortlist: number;
  /** How a written task's tokens weigh in the glance's vote (files without it: uniform). */
  readonly glanceRowWeights: GlanceRowWeights;
  /** The glance's vote share for written tasks, in [0, 1] (0, and files without it: the paper's k). */
  readonly glanceVoteShare: number;
  /**
   * Most tokens of a skill render r(s) that a router opened with these projections uses when the
   * caller gives none (`RouterOpenOptions.skillBudget`); 0 (and files without it): the router's rule.
   */
  readonly skillBudget: number;
  /**
   * Most tokens of a skill that such a router's install reads keys from when the caller gives none
   * (`RouterOpenOptions.keyBudget`); 0 (and files without it): the skill budget.
   */
  readonly keyBudget: number;
  /**
   * The calibrated abstention decision (src/route/abstention.ts applies it), or null: never
   * abstain on it. Files without the `gavel.abstain.*` keys read as null.
   */
  readonly abstention: AbstentionModel | null;
  /**
   * The off-domain prompts a library of few skills sets its own abstention cut with (src/route/library-cut.ts),
   * or null: the model's cut alone. Files without `gavel.abstain.reference.json` read as null.
   */
  readonly abstentionReference: AbstentionReference | null;
  /**
   * The learned re-ranking of the first stage's leaders (src/route/rerank.ts applies it), or null:
   * the ruling decides. Files without `gavel.rerank.json` read as null.
   */
  readonly rerank: RerankModel | null;
  /** The model the maps were trained on. */
  readonly model: ModelFingerprint;
  /** Free text: who or what trained these (a command line, `random(seed=…)`, …). */
  readonly trainedBy?: string;
  /** ISO 8601 creation time. */
  readonly createdAt: string;
}

/** Arguments of the {@link Projections} constructor: weights plus metadata, defaults filled in. */
export interface ProjectionsInit {
  /** W_q, dim × nEmbd row-major. */
  wq: Float32Array;
  /** W_s, dim × nEmbd row-major. */
  ws: Float32Array;
  layer: number;
  model: ModelFingerprint;
  dim?: number;
  tau?: number;
  eps?: number;
  alpha?: number;
  gamma?: number;
  delta?: number;
  beta?: number;
  lexicalTemperature?: number;
  lexicalK1?: number;
  lexicalB?: number;
  shortlistGlance?: number;
  shortlistLexical?: number;
  maxShortlist?: number;
  glanceRowWeights?: GlanceRowWeights;
  glanceVoteShare?: number;
  skillBudget?: number;
  keyBudget?: number;
  /** The abstention model (default null: none). */
  abstention?: AbstentionModel | null;
  /** The abstention reference (default null: none); needs an abstention model. */
  abstentionReference?: AbstentionReference | null;
  /** The re-ranker (default null: none). */
  rerank?: RerankModel | null;
  /** The reference idf the abstention feature `gcov` reads (default null: none). */
  referenceIdf?: ReferenceIdf | null;
  /** The word table the abstention feature `domain` reads (default null: none). */
  domain?: DomainModel | null;
  trainedBy?: string;
  /** Defaults to now. */
  createdAt?: string;
}

/** The ruling's coefficients, which calibration fits after training. */
export interface Calibration {
  alpha?: number;
  gamma?: number;
  delta?: number;
  beta?: number;
  lexicalTemperature?: number;
  lexicalK1?: number;
  lexicalB?: number;
  shortlistGlance?: number;
  shortlistLexical?: number;
  maxShortlist?: number;
  glanceRowWeights?: GlanceRowWeights;
  glanceVoteShare?: number;
  skillBudget?: number;
  keyBudget?: number;
  /** A new abstention model; null removes it, undefined keeps the current one. */
  abstention?: AbstentionModel | null;
  /**
   * A new abstention reference; null removes it, undefined keeps the current one (removed with the
   * abstention model, `abstention: null`).
   */
  abstentionReference?: AbstentionReference | null;
  /** A new re-ranker; null removes it, undefined keeps the current one. */
  rerank?: RerankModel | null;
  /** A new reference idf; null removes it, undefined keeps the current one. */
  referenceIdf?: ReferenceIdf | null;
  /** A new domain table; null removes it, undefined keeps the current one. */
  domain?: DomainModel | null;
}

/** Options of {@link Projections.random}. */
export interface RandomProjectionsOptions {
  /** PRNG seed, a safe integer of which the low 32 bits count (default 0, so two calls give the same maps). */
  seed?: number;
  /** Rows of each map, an integer from 1 to 4096 (default 768). */
  dim?: number;
  /** ℓ*, an integer in [0, nLayer) (default floor(0.7 × nLayer), the paper's ~70% depth). */
  layer?: number;
}

/** floor(0.7 × nLayer) clamped to [0, nLayer − 1]: the paper's ℓ* sits ~70% of the way through. */
export function defaultLayer(nLayer: number): number {
  return Math.min(Math.max(Math.floor(0.7 * nLayer), 0), nLayer - 1);
}
