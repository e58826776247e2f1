/**
 * The glance head's two maps, W_q and W_s (paper section 3.2), with everything needed to use them:
 * the layer ℓ* they read, the ε of the bank cover (3.3), the ruling's coefficients α, γ and shortlist
 * margin Δ (3.5), and the fingerprint of the model they were trained on. All of it lives in one GGUF
 * file so that a projections file can be copied around and still say what it is.
 */
import { createHash, randomBytes } from "node:crypto";
import { open, rename, rm } from "node:fs/promises";
import { dirname } from "node:path";
import { GavelError, invalidArgument } from "../errors.js";
import {
  GgmlType,
  GgufWriter,
  f64,
  ggufMetaNumber,
  ggufMetaString,
  readGgufHeader,
  readGgufTensor,
  str,
  u32,
  type GgufHeader,
} from "../gguf/index.js";
import { fsyncDir } from "../util/durable-file.js";
import { Model } from "../model/Model.js";
import { describeMismatch, describeModel, isModelFingerprint, modelFingerprint, type ModelFingerprint } from "../model/fingerprint.js";

/** `general.architecture` of a projections file. */
export const PROJECTIONS_ARCHITECTURE = "gavel-projections";
/** Version of the projections file layout this code writes (and the newest it reads). */
export const PROJECTIONS_VERSION = 1;

/** Defaults of the paper's setup (section 4.1). */
export const PROJECTION_DEFAULTS = Object.freeze({
  dim: 768,
  tau: 40,
  eps: 0.83,
  alpha: 1.0,
  gamma: 0.025,
  delta: 0.133,
  maxShortlist: 20,
});

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
  /** Most skills the verdict examines. */
  readonly maxShortlist: number;
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
  maxShortlist?: number;
  trainedBy?: string;
  /** Defaults to now. */
  createdAt?: string;
}

/** The ruling's coefficients, which calibration fits after training. */
export interface Calibration {
  alpha?: number;
  gamma?: number;
  delta?: number;
}

/** Options of {@link Projections.random}. */
export interface RandomProjectionsOptions {
  /** PRNG seed (default 0, so two calls give the same maps). */
  seed?: number;
  /** Rows of each map (default 768). */
  dim?: number;
  /** ℓ* (default floor(0.7 × nLayer), the paper's ~70% depth). */
  layer?: number;
}

const KEY = {
  version: "gavel.version",
  layer: "gavel.layer",
  dim: "gavel.dim",
  tau: "gavel.tau",
  eps: "gavel.eps",
  alpha: "gavel.alpha",
  gamma: "gavel.gamma",
  delta: "gavel.delta",
  maxShortlist: "gavel.max_shortlist",
  trainedBy: "gavel.trained_by",
  createdAt: "gavel.created_at",
  modelArchitecture: "gavel.model.architecture",
  modelNLayer: "gavel.model.n_layer",
  modelNEmbd: "gavel.model.n_embd",
  modelNVocab: "gavel.model.n_vocab",
  modelVocabHash: "gavel.model.vocab_hash",
} as const;

/** Name of the W_q tensor in a projections file. */
export const TENSOR_WQ = "gavel.w_q";
/** Name of the W_s tensor in a projections file. */
export const TENSOR_WS = "gavel.w_s";

/**
 * W_q and W_s (each dim × nEmbd, row-major float32, no bias) and their metadata.
 *
 * Instances are immutable by contract: the weight arrays are exposed for the kernels without a copy,
 * and {@link Projections.hash} is computed once, so do not write into `wq` or `ws`; build a new
 * instance instead.
 */
export class Projections implements ProjectionsMeta {
  readonly wq: Float32Array;
  readonly ws: Float32Array;
  readonly layer: number;
  readonly dim: number;
  readonly tau: number;
  readonly eps: number;
  readonly alpha: number;
  readonly gamma: number;
  readonly delta: number;
  readonly maxShortlist: number;
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
    if (!Number.isInteger(init.layer) || init.layer < 0 || init.layer >= model.nLayer) {
      throw new GavelError(
        `Projections: layer ${init.layer} is out of range: the model has ${model.nLayer} layers (0..${model.nLayer - 1})`,
        "LAYER_OUT_OF_RANGE",
      );
    }
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
    this.tau = positive("tau", init.tau ?? d.tau);
    this.eps = init.eps ?? d.eps;
    // Unit keys are at most 2 apart, so an ε above 2 would keep one key per skill; 0 keeps all of them
    // but the kernel needs a positive radius.
    if (!(Number.isFinite(this.eps) && this.eps > 0 && this.eps <= 2)) throw invalidArgument(`Projections: eps must be in (0, 2], got ${this.eps}`);
    this.alpha = finite("alpha", init.alpha ?? d.alpha);
    this.gamma = finite("gamma", init.gamma ?? d.gamma);
    this.delta = finiteNonNegative("delta", init.delta ?? d.delta);
    this.maxShortlist = init.maxShortlist ?? d.maxShortlist;
    if (!Number.isInteger(this.maxShortlist) || this.maxShortlist < 1) {
      throw invalidArgument(`Projections: maxShortlist must be a positive integer, got ${this.maxShortlist}`);
    }
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
    const seed = opts.seed ?? 0;
    if (!Number.isInteger(seed)) throw invalidArgument(`Projections.random: seed must be an integer, got ${seed}`);
    const dim = opts.dim ?? PROJECTION_DEFAULTS.dim;
    if (!Number.isInteger(dim) || dim < 1) throw invalidArgument(`Projections.random: dim must be a positive integer, got ${dim}`);
    const layer = opts.layer ?? defaultLayer(fp.nLayer);
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
      maxShortlist: this.maxShortlist,
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
    const w = new GgufWriter();
    w.set("general.architecture", str(PROJECTIONS_ARCHITECTURE));
    w.set("general.name", str("gavel projections"));
    w.set(KEY.version, u32(PROJECTIONS_VERSION));
    w.set(KEY.layer, u32(this.layer));
    w.set(KEY.dim, u32(this.dim));
    // f64, not f32: 0.83 must read back as 0.83, or ε would differ from what banks recorded.
    w.set(KEY.tau, f64(this.tau));
    w.set(KEY.eps, f64(this.eps));
    w.set(KEY.alpha, f64(this.alpha));
    w.set(KEY.gamma, f64(this.gamma));
    w.set(KEY.delta, f64(this.delta));
    w.set(KEY.maxShortlist, u32(this.maxShortlist));
    w.set(KEY.modelArchitecture, str(this.model.architecture));
    w.set(KEY.modelNLayer, u32(this.model.nLayer));
    w.set(KEY.modelNEmbd, u32(this.model.nEmbd));
    w.set(KEY.modelNVocab, u32(this.model.nVocab));
    w.set(KEY.modelVocabHash, str(this.model.vocabHash));
    if (this.trainedBy !== undefined) w.set(KEY.trainedBy, str(this.trainedBy));
    w.set(KEY.createdAt, str(this.createdAt));
    // ggml `ne` order: the contiguous dimension first, so a row-major dim × nEmbd matrix is [nEmbd, dim].
    w.addTensor(TENSOR_WQ, [this.model.nEmbd, this.dim], this.wq, GgmlType.F32);
    w.addTensor(TENSOR_WS, [this.model.nEmbd, this.dim], this.ws, GgmlType.F32);

    // GgufWriter renames its own temp file into place but does not fsync; write to our temp name,
    // fsync it, then rename onto the target.
    const tmp = `${path}.${randomBytes(6).toString("hex")}.tmp`;
    try {
      await w.write(tmp);
      const fh = await open(tmp, "r+");
      try {
        await fh.sync();
      } finally {
        await fh.close();
      }
      await rename(tmp, path);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    await fsyncDir(dirname(path));
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
    const header = await readGgufHeader(path);
    const corrupt = (why: string) => new GavelError(`${path}: ${why}`, "CORRUPT_FILE");
    const arch = ggufMetaString(header, "general.architecture");
    if (arch !== PROJECTIONS_ARCHITECTURE) {
      throw corrupt(`not a gavel projections file (general.architecture is ${arch === undefined ? "missing" : JSON.stringify(arch)})`);
    }
    const num = (key: string, kind: "uint" | "float"): number => {
      const v = header.metadata.get(key);
      if (v === undefined) throw corrupt(`metadata key ${key} is missing`);
      const n = ggufMetaNumber(header, key);
      if (n === undefined || !Number.isFinite(n) || (kind === "uint" && !(Number.isInteger(n) && n >= 0))) {
        throw corrupt(`metadata key ${key} is not a${kind === "uint" ? "n unsigned integer" : " finite number"} (type ${v.type})`);
      }
      return n;
    };
    const text = (key: string, optional = false): string | undefined => {
      const v = header.metadata.get(key);
      if (v === undefined) {
        if (optional) return undefined;
        throw corrupt(`metadata key ${key} is missing`);
      }
      if (v.type !== "str") throw corrupt(`metadata key ${key} is not a string (type ${v.type})`);
      return v.value;
    };
    const version = num(KEY.version, "uint");
    if (version < 1 || version > PROJECTIONS_VERSION) {
      throw corrupt(`projections format version ${version} is not supported (this gavel-router reads up to ${PROJECTIONS_VERSION}; upgrade it)`);
    }
    const model: ModelFingerprint = {
      architecture: text(KEY.modelArchitecture)!,
      nLayer: num(KEY.modelNLayer, "uint"),
      nEmbd: num(KEY.modelNEmbd, "uint"),
      nVocab: num(KEY.modelNVocab, "uint"),
      vocabHash: text(KEY.modelVocabHash)!,
    };
    if (!isModelFingerprint(model)) throw corrupt(`the model fingerprint is malformed: ${JSON.stringify(model)}`);
    const dim = num(KEY.dim, "uint");
    const wq = await readWeights(path, header, TENSOR_WQ, dim, model.nEmbd, corrupt);
    const ws = await readWeights(path, header, TENSOR_WS, dim, model.nEmbd, corrupt);
    try {
      return new Projections({
        wq,
        ws,
        model,
        dim,
        layer: num(KEY.layer, "uint"),
        tau: num(KEY.tau, "float"),
        eps: num(KEY.eps, "float"),
        alpha: num(KEY.alpha, "float"),
        gamma: num(KEY.gamma, "float"),
        delta: num(KEY.delta, "float"),
        maxShortlist: num(KEY.maxShortlist, "uint"),
        trainedBy: text(KEY.trainedBy, true),
        createdAt: text(KEY.createdAt)!,
      });
    } catch (err) {
      // Out-of-range values in a file are corruption, not a caller's bad argument.
      if (err instanceof GavelError && (err.code === "INVALID_ARGUMENT" || err.code === "LAYER_OUT_OF_RANGE")) {
        throw new GavelError(`${path}: ${err.message}`, "CORRUPT_FILE", { cause: err });
      }
      throw err;
    }
  }
}

/** floor(0.7 × nLayer) clamped to [0, nLayer − 1]: the paper's ℓ* sits ~70% of the way through. */
export function defaultLayer(nLayer: number): number {
  return Math.min(Math.max(Math.floor(0.7 * nLayer), 0), nLayer - 1);
}

async function readWeights(
  path: string,
  header: GgufHeader,
  name: string,
  dim: number,
  nEmbd: number,
  corrupt: (why: string) => GavelError,
): Promise<Float32Array> {
  const info = header.tensors.find((t) => t.name === name);
  if (!info) throw corrupt(`tensor ${name} is missing`);
  if (info.type !== GgmlType.F32) throw corrupt(`tensor ${name} has type ${info.type}, expected F32`);
  if (info.dims.length !== 2 || info.dims[0] !== nEmbd || info.dims[1] !== dim) {
    throw corrupt(`tensor ${name} has shape [${info.dims}], expected [${nEmbd}, ${dim}] (n_embd × dim, ggml order)`);
  }
  const w = await readGgufTensor(path, header, name);
  const bad = firstNonFinite(w);
  if (bad >= 0) throw corrupt(`tensor ${name} holds a non-finite weight (${w[bad]} at ${bad})`);
  return w;
}

function firstNonFinite(w: Float32Array): number {
  for (let i = 0; i < w.length; i++) if (!Number.isFinite(w[i])) return i;
  return -1;
}

function finite(name: string, v: number): number {
  if (typeof v !== "number" || !Number.isFinite(v)) throw invalidArgument(`Projections: ${name} must be a finite number, got ${v}`);
  return v;
}
function finiteNonNegative(name: string, v: number): number {
  if (finite(name, v) < 0) throw invalidArgument(`Projections: ${name} must be ≥ 0, got ${v}`);
  return v;
}
function positive(name: string, v: number): number {
  if (finite(name, v) <= 0) throw invalidArgument(`Projections: ${name} must be > 0, got ${v}`);
  return v;
}

function leBytes(a: Float32Array): Uint8Array {
  // Hosts are little-endian (the GGUF writer refuses others), so the view is the file's bytes.
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

/** Standard normal samples from a mulberry32 stream (Box–Muller, both outputs used). */
function gaussian(seed: number): () => number {
  let a = seed >>> 0;
  const uniform = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  let spare: number | undefined;
  return () => {
    if (spare !== undefined) {
      const s = spare;
      spare = undefined;
      return s;
    }
    const u1 = 1 - uniform(); // (0, 1]: log stays finite
    const u2 = uniform();
    const r = Math.sqrt(-2 * Math.log(u1));
    spare = r * Math.sin(2 * Math.PI * u2);
    return r * Math.cos(2 * Math.PI * u2);
  };
}
