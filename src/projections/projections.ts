/**
 * The glance head's two maps, W_q and W_s (paper section 3.2), with everything needed to use them:
 * the layer ℓ* they read, the ε of the bank cover (3.3), the ruling's coefficients α, γ and shortlist
 * margin Δ (3.5), and the fingerprint of the model they were trained on. All of it lives in one GGUF
 * file (file.ts) so that a projections file can be copied around and still say what it is.
 */
import { createHash } from "node:crypto";
import { GavelError, invalidArgument, clip } from "../errors.js";
import { Model } from "../model/Model.js";
import { describeMismatch, describeModel, isModelFingerprint, modelFingerprint, type ModelFingerprint } from "../model/fingerprint.js";
import { gaussian } from "../util/prng.js";
import { quoteForMessage } from "../util/regular-file.js";
import { checkFinite, checkLayer, describeValue, type FiniteBounds, optionsObject, valueText } from "../util/validate.js";
import { firstNonFinite, readProjectionsFile, writeProjectionsFile } from "./file.js";
import { checkAbstentionModel, checkAbstentionReference, needsVerdict, readsFeature, type AbstentionModel, type AbstentionReference } from "./abstention-model.js";
import { ReferenceIdf } from "../lexical/reference-idf.js";
import { DomainModel } from "../lexical/domain.js";
import { checkRerankModel, type RerankModel } from "./rerank-model.js";
import { defaultLayer, MAX_BUDGET, PROJECTION_DEFAULTS, type Calibration, type GlanceRowWeights, type ProjectionsInit, type ProjectionsMeta, type RandomProjectionsOptions } from "./meta.js";

export { defaultLayer, PROJECTION_DEFAULTS, type Calibration, type GlanceRowWeights, type ProjectionsInit, type ProjectionsMeta, type RandomProjectionsOptions } from "./meta.js";
export { ABSTAIN_KEY, PROJECTIONS_ARCHITECTURE, PROJECTIONS_VERSION, TENSOR_WQ, TENSOR_WS } from "./file.js";
export {
  ABSTENTION_FEATURES,
  checkAbstentionModel,
  checkAbstentionReference,
  modelFeatures,
  needsLexical,
  needsVerdict,
  type AbstentionFeature,
  type AbstentionModel,
  type AbstentionReference,
  type BandAbstention,
  type BySizeAbstention,
  type LogisticAbstention,
  type ThresholdAbstention,
} from "./abstention-model.js";
export { checkRerankModel, RERANK_FEATURES, type RerankFeature, type RerankModel, type RerankStage } from "./rerank-model.js";

/** Largest ruling constant accepted (α, γ, Δ, β, τ, T): larger is damage, not a setting. */
export const MAX_CONSTANT = 1e9;
/** Largest maxShortlist accepted (the verdict runs one pass per candidate). */
export const MAX_SHORTLIST = 1024;
/** Widest random projections ({@link Projections.random}'s dim). */
export const MAX_RANDOM_DIM = 4096;

/** A ruling constant: finite, within its bounds and at most {@link MAX_CONSTANT}. */
function constant(value: unknown, name: string, bounds: FiniteBounds): number {
  const v = checkFinite(value, `Projections: ${name}`, bounds);
  if (v > MAX_CONSTANT) throw invalidArgument(`Projections: ${name} must be ≤ ${MAX_CONSTANT}, got ${v}`);
  return v;
}

/**
 * W_q and W_s (each dim × nEmbd, row-major float32, no bias) and their metadata.
 *
 * Instances are immutable by contract: the weight arrays are exposed for the kernels without a copy,
 * and {@link Projections.hash} is computed once, so do not write into `wq` or `ws`; build a new
 * instance instead.
 */
export class Projections implements ProjectionsMeta {
  /** W_q: dim × nEmbd, row-major (maps the task's states to queries). */
  readonly wq: Float32Array;
  /** W_s: dim × nEmbd, row-major (maps a skill's states to keys). */
  readonly ws: Float32Array;
  readonly layer: number;
  readonly dim: number;
  readonly tau: number;
  readonly eps: number;
  readonly alpha: number;
  readonly gamma: number;
  readonly delta: number;
  readonly beta: number;
  readonly lexicalTemperature: number;
  readonly lexicalK1: number;
  readonly lexicalB: number;
  readonly shortlistGlance: number;
  readonly shortlistLexical: number;
  readonly maxShortlist: number;
  /** How a written task's tokens weigh in the glance's vote (`GAVEL_GLANCE_ROW_WEIGHTS` overrides it). */
  readonly glanceRowWeights: GlanceRowWeights;
  /** The glance's vote share for written tasks (`GAVEL_GLANCE_VOTE_SHARE` overrides it; 0: the paper's k). */
  readonly glanceVoteShare: number;
  /** The skill budget a router opens with by default (0: the router's rule). */
  readonly skillBudget: number;
  /** The key budget a router installs with by default (0: the skill budget). */
  readonly keyBudget: number;
  /** The calibrated abstention decision, or null (never abstains on it). */
  readonly abstention: AbstentionModel | null;
  /** The prompts a small library sets its own abstention cut with (src/route/library-cut.ts), or null. */
  readonly abstentionReference: AbstentionReference | null;
  /** The learned re-ranking of the first stage's leaders, or null (the ruling decides). */
  readonly rerank: RerankModel | null;
  /**
   * The reference idf (src/lexical/reference-idf.ts) the abstention feature `gcov` reads, or null.
   * Not part of {@link meta} (it holds tens of thousands of words); files without the
   * `gavel.reference.*` keys read as null.
   */
  readonly referenceIdf: ReferenceIdf | null;
  /**
   * The word table (src/lexical/domain.ts) the abstention feature `domain` reads, or null. Not part
   * of {@link meta}; files without the `gavel.domain.*` keys read as null.
   */
  readonly domain: DomainModel | null;
  readonly model: ModelFingerprint;
  readonly trainedBy?: string;
  readonly createdAt: string;
  #hash: string | undefined;
  #keysHash: string | undefined;

  /**
   * @throws GavelError `INVALID_ARGUMENT` when shapes or values are out of range (weights of the
   *   wrong length or not finite, layer outside [0, nLayer), ε outside (0, 2], …)
   */
  constructor(init: ProjectionsInit) {
    if (typeof init !== "object" || init === null) throw invalidArgument("Projections: init must be an object");
    if (!isModelFingerprint(init.model)) throw invalidArgument("Projections: model must be a ModelFingerprint");
    const model = Object.freeze({ ...init.model });
    const d = PROJECTION_DEFAULTS;
    const dim = init.dim ?? d.dim;
    if (!Number.isInteger(dim) || dim < 1) throw invalidArgument(`Projections: dim must be a positive integer, got ${dim}`);
    checkLayer(init.layer, model.nLayer, "Projections: layer");
    for (const [name, w] of [["wq", init.wq], ["ws", init.ws]] as const) {
      if (!(w instanceof Float32Array)) throw invalidArgument(`Projections: ${name} must be a Float32Array`);
      if (w.length !== dim * model.nEmbd) {
        throw invalidArgument(`Projections: ${name} has ${w.length} values, expected dim × nEmbd = ${dim} × ${model.nEmbd}`);
      }
      const bad = firstNonFinite(w);
      if (bad >= 0) throw invalidArgument(`Projections: ${name}[${bad}] is ${w[bad]}`);
    }
    this.wq = init.wq;
    this.ws = init.ws;
    this.layer = init.layer;
    this.dim = dim;
    this.model = model;
    this.tau = constant(init.tau ?? d.tau, "tau", { above: 0 });
    this.eps = init.eps ?? d.eps;
    // Unit keys are at most 2 apart, so an ε above 2 would keep one key per skill; 0 keeps all of them
    // but the kernel needs a positive radius.
    if (!(Number.isFinite(this.eps) && this.eps > 0 && this.eps <= 2)) throw invalidArgument(`Projections: eps must be in (0, 2], got ${this.eps}`);
    // The ruling's weights are ≥ 0 (a negative weight inverts an expert) and finite, and none is
    // absurd (a bit flip in an f64 exponent gives 1e30; see MAX_CONSTANT).
    this.alpha = constant(init.alpha ?? d.alpha, "alpha", { min: 0 });
    this.gamma = constant(init.gamma ?? d.gamma, "gamma", { min: 0 });
    this.delta = constant(init.delta ?? d.delta, "delta", { min: 0 });
    this.beta = constant(init.beta ?? d.beta, "beta", { min: 0 });
    // T ≥ 1/MAX_CONSTANT: a smaller one is damage, and BM25 / T could overflow a double.
    this.lexicalTemperature = constant(init.lexicalTemperature ?? d.lexicalTemperature, "lexicalTemperature", { min: 1 / MAX_CONSTANT });
    this.lexicalK1 = constant(init.lexicalK1 ?? d.lexicalK1, "lexicalK1", { min: 0 });
    this.lexicalB = constant(init.lexicalB ?? d.lexicalB, "lexicalB", { min: 0 });
    if (this.lexicalB > 1) throw invalidArgument(`Projections: lexicalB must be in [0, 1], got ${this.lexicalB}`);
    this.maxShortlist = init.maxShortlist ?? d.maxShortlist;
    this.shortlistGlance = init.shortlistGlance ?? d.shortlistGlance;
    this.shortlistLexical = init.shortlistLexical ?? d.shortlistLexical;
    for (const [name, v] of [["shortlistGlance", this.shortlistGlance], ["shortlistLexical", this.shortlistLexical]] as const) {
      if (!Number.isInteger(v) || v < 0 || v > MAX_SHORTLIST) throw invalidArgument(`Projections: ${name} must be an integer in [0, ${MAX_SHORTLIST}], got ${v}`);
    }
    if (!Number.isInteger(this.maxShortlist) || this.maxShortlist < 1 || this.maxShortlist > MAX_SHORTLIST) {
      throw invalidArgument(`Projections: maxShortlist must be an integer in [1, ${MAX_SHORTLIST}], got ${this.maxShortlist}`);
    }
    this.glanceRowWeights = init.glanceRowWeights ?? d.glanceRowWeights;
    if (this.glanceRowWeights !== "uniform" && this.glanceRowWeights !== "idf") {
      throw invalidArgument(`Projections: glanceRowWeights must be "uniform" or "idf", got ${quoteForMessage(String(this.glanceRowWeights))}`);
    }
    this.glanceVoteShare = constant(init.glanceVoteShare ?? d.glanceVoteShare, "glanceVoteShare", { min: 0 });
    if (this.glanceVoteShare > 1) throw invalidArgument(`Projections: glanceVoteShare must be in [0, 1], got ${this.glanceVoteShare}`);
    this.skillBudget = init.skillBudget ?? d.skillBudget;
    this.keyBudget = init.keyBudget ?? d.keyBudget;
    for (const [name, v] of [["skillBudget", this.skillBudget], ["keyBudget", this.keyBudget]] as const) {
      if (!Number.isInteger(v) || v < 0 || v > MAX_BUDGET) throw invalidArgument(`Projections: ${name} must be an integer in [0, ${MAX_BUDGET}], got ${valueText(v)}`);
    }
    this.abstention = checkAbstentionModel(init.abstention);
    this.abstentionReference = checkAbstentionReference(init.abstentionReference);
    if (this.abstentionReference && !this.abstention) throw invalidArgument("Projections: an abstention reference needs an abstention model (it moves that model's cut)");
    this.rerank = checkRerankModel(init.rerank);
    const ref = init.referenceIdf ?? null;
    if (ref !== null && !(ref instanceof ReferenceIdf)) throw invalidArgument("Projections: referenceIdf must be a ReferenceIdf or null");
    this.referenceIdf = ref;
    for (const f of ["gcov", "gcov2"] as const) {
      if (!ref && readsFeature(this.abstention, f)) throw invalidArgument(`Projections: the abstention model reads ${f}, which needs a reference idf (referenceIdf)`);
    }
    const domain = init.domain ?? null;
    if (domain !== null && !(domain instanceof DomainModel)) throw invalidArgument("Projections: domain must be a DomainModel or null");
    this.domain = domain;
    if (!domain && readsFeature(this.abstention, "domain")) throw invalidArgument("Projections: the abstention model reads domain, which needs a domain table (domain)");
    // with a re-ranker, abstention is decided on the first stage, before any verdict
    if (this.rerank && needsVerdict(this.abstention)) throw invalidArgument("Projections: a re-ranker needs an abstention model that does not read the verdict's V");
    if (init.trainedBy !== undefined) {
      if (typeof init.trainedBy !== "string") throw invalidArgument("Projections: trainedBy must be a string");
      this.trainedBy = init.trainedBy;
    }
    this.createdAt = init.createdAt ?? new Date().toISOString();
    if (typeof this.createdAt !== "string") throw invalidArgument("Projections: createdAt must be an ISO string");
  }

  /** Width of the residual stream both maps read (= `model.nEmbd`). */
  get nEmbd(): number {
    return this.model.nEmbd;
  }

  /**
   * Random maps for tests and bootstrapping until trained ones exist: i.i.d. Gaussian entries with
   * standard deviation 1/sqrt(nEmbd) (so W·h keeps the scale of h), from a seeded PRNG.
   *
   * @param model a loaded model, or its fingerprint
   * @throws GavelError `LAYER_OUT_OF_RANGE`, `INVALID_ARGUMENT`
   */
  static async random(model: Model | ModelFingerprint, opts: RandomProjectionsOptions = {}): Promise<Projections> {
    const fp = model instanceof Model ? await modelFingerprint(model) : model;
    if (!isModelFingerprint(fp)) throw invalidArgument("Projections.random: model must be a Model or a ModelFingerprint");
    const o = optionsObject(opts, "Projections.random options", { seed: true, dim: true, layer: true });
    const seed = o.seed === undefined ? 0 : o.seed;
    if (typeof seed !== "number" || !Number.isSafeInteger(seed)) throw invalidArgument(`Projections.random: seed must be a safe integer, got ${describeValue(seed)}`);
    const dim = o.dim === undefined ? PROJECTION_DEFAULTS.dim : o.dim;
    if (typeof dim !== "number" || !Number.isInteger(dim) || dim < 1 || dim > MAX_RANDOM_DIM) throw invalidArgument(`Projections.random: dim must be an integer from 1 to ${MAX_RANDOM_DIM}, got ${describeValue(dim)}`);
    const layer = o.layer === undefined ? defaultLayer(fp.nLayer) : checkLayer(o.layer, fp.nLayer, "Projections.random: layer");
    const next = gaussian(seed);
    const scale = 1 / Math.sqrt(fp.nEmbd);
    const wq = new Float32Array(dim * fp.nEmbd);
    const ws = new Float32Array(dim * fp.nEmbd);
    for (let i = 0; i < wq.length; i++) wq[i] = next() * scale;
    for (let i = 0; i < ws.length; i++) ws[i] = next() * scale;
    return new Projections({ wq, ws, layer, dim, model: fp, trainedBy: `random(seed=${seed})` });
  }

  /**
   * sha256 (hex) over the format version, layer, dim, nEmbd, W_s and W_q: everything that decides
   * what keys and queries look like. Banks record it, so a bank built with other maps is refused.
   * Calibration (α, γ, Δ), τ and the bookkeeping fields are left out on purpose, so that
   * recalibrating does not invalidate installed banks; ε is bound by the bank header separately.
   */
  get hash(): string {
    if (this.#hash === undefined) {
      const h = createHash("sha256");
      h.update(`gavel-projections-hash-v1\0layer=${this.layer}\0dim=${this.dim}\0n_embd=${this.model.nEmbd}\0`);
      // Weights are hashed as little-endian float32 bytes, exactly what the file stores, so the hash
      // survives save/load bit for bit.
      h.update(leBytes(this.ws));
      h.update(leBytes(this.wq));
      this.#hash = h.digest("hex");
    }
    return this.#hash;
  }

  /**
   * Hash of what the installed keys depend on: ℓ*, dim, nEmbd and W_s. Banks bind to this rather than
   * to {@link hash}, so the paper's W_q-only fine-tune (section 3.3) keeps every installed bank valid.
   */
  get keysHash(): string {
    if (this.#keysHash === undefined) {
      const h = createHash("sha256");
      h.update(`gavel-keys-hash-v1\0layer=${this.layer}\0dim=${this.dim}\0n_embd=${this.model.nEmbd}\0`);
      h.update(leBytes(this.ws));
      this.#keysHash = h.digest("hex");
    }
    return this.#keysHash;
  }

  /** Metadata only (no weights), e.g. for display or JSON. */
  get meta(): ProjectionsMeta {
    return {
      layer: this.layer,
      dim: this.dim,
      tau: this.tau,
      eps: this.eps,
      alpha: this.alpha,
      gamma: this.gamma,
      delta: this.delta,
      beta: this.beta,
      lexicalTemperature: this.lexicalTemperature,
      lexicalK1: this.lexicalK1,
      lexicalB: this.lexicalB,
      shortlistGlance: this.shortlistGlance,
      shortlistLexical: this.shortlistLexical,
      maxShortlist: this.maxShortlist,
      glanceRowWeights: this.glanceRowWeights,
      glanceVoteShare: this.glanceVoteShare,
      skillBudget: this.skillBudget,
      keyBudget: this.keyBudget,
      abstention: this.abstention,
      abstentionReference: this.abstentionReference,
      rerank: this.rerank,
      model: this.model,
      ...(this.trainedBy !== undefined ? { trainedBy: this.trainedBy } : {}),
      createdAt: this.createdAt,
    };
  }

  /**
   * Throws unless these projections were trained on the model `fp` describes.
   *
   * @throws GavelError `PROJECTIONS_MISMATCH`, e.g. "projections were trained for qwen3 with 36 layers, …;
   *   this model is llama with 5 layers, … (differs in: …)"
   */
  checkModel(fp: ModelFingerprint): void {
    const diff = describeMismatch(this.model, fp);
    if (diff === undefined) return;
    throw new GavelError(
      `projections were trained for ${describeModel(this.model)}; this model is ${describeModel(fp)} (differs in: ${diff}). ` +
        `Use projections trained for this model (or \`gavel train\` new ones).`,
      "PROJECTIONS_MISMATCH",
    );
  }

  /**
   * A copy with new ruling coefficients (what calibration fits). Weights are shared, not copied, and
   * the hash is unchanged, so banks stay valid.
   */
  withCalibration(c: Calibration): Projections {
    if (typeof c !== "object" || c === null) throw invalidArgument("withCalibration: argument must be an object");
    const p = new Projections({
      ...this.meta,
      wq: this.wq,
      ws: this.ws,
      alpha: c.alpha ?? this.alpha,
      gamma: c.gamma ?? this.gamma,
      delta: c.delta ?? this.delta,
      beta: c.beta ?? this.beta,
      lexicalTemperature: c.lexicalTemperature ?? this.lexicalTemperature,
      lexicalK1: c.lexicalK1 ?? this.lexicalK1,
      lexicalB: c.lexicalB ?? this.lexicalB,
      shortlistGlance: c.shortlistGlance ?? this.shortlistGlance,
      shortlistLexical: c.shortlistLexical ?? this.shortlistLexical,
      maxShortlist: c.maxShortlist ?? this.maxShortlist,
      glanceRowWeights: c.glanceRowWeights ?? this.glanceRowWeights,
      glanceVoteShare: c.glanceVoteShare ?? this.glanceVoteShare,
      skillBudget: c.skillBudget ?? this.skillBudget,
      keyBudget: c.keyBudget ?? this.keyBudget,
      abstention: c.abstention === undefined ? this.abstention : c.abstention,
      // the cut a reference sets is read off whatever model decides; removing the model removes it
      abstentionReference: c.abstentionReference !== undefined ? c.abstentionReference : c.abstention === null ? null : this.abstentionReference,
      rerank: c.rerank === undefined ? this.rerank : c.rerank,
      referenceIdf: c.referenceIdf === undefined ? this.referenceIdf : c.referenceIdf,
      domain: c.domain === undefined ? this.domain : c.domain,
    });
    p.#hash = this.#hash;
    return p;
  }

  /**
   * Write to one GGUF file, atomically: a temporary file in the same directory is written, fsynced
   * and renamed over `path`, and the directory is fsynced, so a crash leaves either the old file or
   * the new one, never a torn one.
   */
  async save(path: string): Promise<void> {
    if (typeof path !== "string" || path.length === 0) throw invalidArgument("save: path must be a non-empty string");
    await writeProjectionsFile(path, this);
  }

  /**
   * Read a projections file.
   *
   * @throws GavelError `FILE_NOT_FOUND` (no such file), `NOT_GGUF` (not a GGUF file), `CORRUPT_FILE`
   *   (a GGUF file that is not projections, from a newer version, with missing or ill-typed keys,
   *   missing tensors, wrong shapes or non-finite weights)
   */
  static async load(path: string): Promise<Projections> {
    if (typeof path !== "string" || path.length === 0) throw invalidArgument("load: path must be a non-empty string");
    const init = await readProjectionsFile(path);
    try {
      return new Projections(init);
    } catch (err) {
      // Out-of-range values in a file are corruption, not a caller's bad argument.
      if (err instanceof GavelError && (err.code === "INVALID_ARGUMENT" || err.code === "LAYER_OUT_OF_RANGE")) {
        throw new GavelError(`${clip(path)}: ${err.message}`, "CORRUPT_FILE", { cause: err });
      }
      throw err;
    }
  }
}

function leBytes(a: Float32Array): Uint8Array {
  // Hosts are little-endian (the GGUF writer refuses others), so the view is the file's bytes.
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}
