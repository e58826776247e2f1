/**
 * The projections file: one GGUF file holding W_q and W_s as F32 tensors and every metadata field
 * of a {@link ProjectionsMeta} as typed GGUF keys, so that a copied file still says what it is.
 * Writing is atomic and durable; reading checks every key, shape and weight.
 */
import { GavelError, clip } from "../errors.js";
import {
  GgmlType,
  GgufWriter,
  arr,
  f64,
  ggufMetaNumber,
  ggufMetaString,
  quoteForMessage,
  readGgufHeader,
  readGgufTensor,
  str,
  u32,
  type GgufHeader,
} from "../gguf/index.js";
import { isModelFingerprint, type ModelFingerprint } from "../model/fingerprint.js";
import { MAX_BUDGET, PROJECTION_DEFAULTS, type GlanceRowWeights, type ProjectionsInit, type ProjectionsMeta } from "./meta.js";
import { checkAbstentionModel, checkAbstentionReference, modelFeatures, type AbstentionModel, type BandAbstention } from "./abstention-model.js";
import { checkRerankModel } from "./rerank-model.js";
import type { ReferenceIdf } from "../lexical/reference-idf.js";
import type { DomainModel } from "../lexical/domain.js";
import { readDomain, readReference, writeWordTables } from "./word-tables.js";

/** `general.architecture` of a projections file. */
export const PROJECTIONS_ARCHITECTURE = "gavel-projections";
/** Version of the projections file layout this code writes (and the newest it reads). */
export const PROJECTIONS_VERSION = 1;

const KEY = {
  version: "gavel.version",
  layer: "gavel.layer",
  dim: "gavel.dim",
  tau: "gavel.tau",
  eps: "gavel.eps",
  alpha: "gavel.alpha",
  gamma: "gavel.gamma",
  delta: "gavel.delta",
  beta: "gavel.beta",
  lexicalTemperature: "gavel.lexical_temperature",
  lexicalK1: "gavel.lexical_k1",
  lexicalB: "gavel.lexical_b",
  shortlistGlance: "gavel.shortlist_glance",
  shortlistLexical: "gavel.shortlist_lexical",
  maxShortlist: "gavel.max_shortlist",
  glanceRowWeights: "gavel.glance_row_weights",
  glanceVoteShare: "gavel.glance_vote_share",
  skillBudget: "gavel.skill_budget",
  keyBudget: "gavel.key_budget",
  trainedBy: "gavel.trained_by",
  createdAt: "gavel.created_at",
  modelArchitecture: "gavel.model.architecture",
  modelNLayer: "gavel.model.n_layer",
  modelNEmbd: "gavel.model.n_embd",
  modelNVocab: "gavel.model.n_vocab",
  modelVocabHash: "gavel.model.vocab_hash",
} as const;

/**
 * The abstention model's keys. A file without `gavel.abstain.kind` has no model (null).
 * Numbers are f64 and lists f64 arrays, so a model reads back exactly as it was fitted.
 */
export const ABSTAIN_KEY = {
  /** "threshold" | "logistic" */
  kind: "gavel.abstain.kind",
  /** The features read, in order (a threshold model: one). */
  features: "gavel.abstain.features",
  threshold: "gavel.abstain.threshold",
  marginCap: "gavel.abstain.margin_cap",
  /** Logistic only: weights, bias, and the standardisation's mean and scale. */
  weights: "gavel.abstain.weights",
  bias: "gavel.abstain.bias",
  mean: "gavel.abstain.mean",
  scale: "gavel.abstain.scale",
  /** Optional: the off-domain trigger rate the model was fitted for. */
  targetTriggerRate: "gavel.abstain.target_trigger_rate",
  /**
   * A by-size model: the smallest library its large band decides for. The small band's keys are the
   * ones above (a reader that knows no bands reads the small model alone); the large band's are the
   * same names under `gavel.abstain.large.` (e.g. `gavel.abstain.large.kind`). With a middle band,
   * this is where the middle band starts.
   */
  largeFrom: "gavel.abstain.large_from",
  /**
   * A by-size model with a middle band: the smallest library the large band decides for. The middle
   * band's keys are the same names under `gavel.abstain.mid.`. A reader that knows no middle band
   * reads the large band from `large_from`.
   */
  midUntil: "gavel.abstain.mid_until",
} as const;

type BandField = Exclude<keyof typeof ABSTAIN_KEY, "largeFrom" | "midUntil">;

/** The key of one field of the abstention model's small band (or only model), or of its middle or large band. */
function abstainKey(field: BandField, band: "small" | "mid" | "large"): string {
  return band === "small" ? ABSTAIN_KEY[field] : ABSTAIN_KEY[field].replace(/^gavel\.abstain\./, `gavel.abstain.${band}.`);
}

/** The re-ranker (src/projections/rerank-model.ts), as one JSON text; absent: none. */
export const RERANK_KEY = "gavel.rerank.json";

/** The abstention reference (a small library's own cut: `AbstentionReference`) as one JSON text; only with `gavel.abstain.kind`. */
export const ABSTAIN_REFERENCE_KEY = "gavel.abstain.reference.json";

/** Name of the W_q tensor in a projections file. */
export const TENSOR_WQ = "gavel.w_q";
/** Name of the W_s tensor in a projections file. */
export const TENSOR_WS = "gavel.w_s";


/** What a projections file holds: the metadata and both maps (dim × nEmbd row-major). */
export type ProjectionsContent = ProjectionsMeta & { readonly wq: Float32Array; readonly ws: Float32Array; readonly referenceIdf?: ReferenceIdf | null; readonly domain?: DomainModel | null };

/**
 * Writes `p` to one GGUF file, atomically: a temporary file in the same directory is written,
 * fsynced and renamed over `path`, and the directory is fsynced, so a crash leaves either the old
 * file or the new one, never a torn one.
 */
export async function writeProjectionsFile(path: string, p: ProjectionsContent): Promise<void> {
  const w = new GgufWriter();
  w.set("general.architecture", str(PROJECTIONS_ARCHITECTURE));
  w.set("general.name", str("gavel projections"));
  w.set(KEY.version, u32(PROJECTIONS_VERSION));
  w.set(KEY.layer, u32(p.layer));
  w.set(KEY.dim, u32(p.dim));
  // f64, not f32: 0.83 must read back as 0.83, or ε would differ from what banks recorded.
  w.set(KEY.tau, f64(p.tau));
  w.set(KEY.eps, f64(p.eps));
  w.set(KEY.alpha, f64(p.alpha));
  w.set(KEY.gamma, f64(p.gamma));
  w.set(KEY.delta, f64(p.delta));
  w.set(KEY.beta, f64(p.beta));
  w.set(KEY.lexicalTemperature, f64(p.lexicalTemperature));
  w.set(KEY.lexicalK1, f64(p.lexicalK1));
  w.set(KEY.lexicalB, f64(p.lexicalB));
  w.set(KEY.shortlistGlance, u32(p.shortlistGlance));
  w.set(KEY.shortlistLexical, u32(p.shortlistLexical));
  w.set(KEY.maxShortlist, u32(p.maxShortlist));
  w.set(KEY.glanceRowWeights, str(p.glanceRowWeights));
  w.set(KEY.glanceVoteShare, f64(p.glanceVoteShare));
  w.set(KEY.skillBudget, u32(p.skillBudget));
  w.set(KEY.keyBudget, u32(p.keyBudget));
  w.set(KEY.modelArchitecture, str(p.model.architecture));
  w.set(KEY.modelNLayer, u32(p.model.nLayer));
  w.set(KEY.modelNEmbd, u32(p.model.nEmbd));
  w.set(KEY.modelNVocab, u32(p.model.nVocab));
  w.set(KEY.modelVocabHash, str(p.model.vocabHash));
  if (p.trainedBy !== undefined) w.set(KEY.trainedBy, str(p.trainedBy));
  w.set(KEY.createdAt, str(p.createdAt));
  if (p.abstention) writeAbstention(w, p.abstention);
  if (p.abstentionReference) w.set(ABSTAIN_REFERENCE_KEY, str(JSON.stringify(p.abstentionReference)));
  // one JSON text: every number is written in the shortest form that reads back as the same double
  if (p.rerank) w.set(RERANK_KEY, str(JSON.stringify(p.rerank)));
  writeWordTables(w, p);
  // ggml `ne` order: the contiguous dimension first, so a row-major dim × nEmbd matrix is [nEmbd, dim].
  w.addTensor(TENSOR_WQ, [p.model.nEmbd, p.dim], p.wq, GgmlType.F32);
  w.addTensor(TENSOR_WS, [p.model.nEmbd, p.dim], p.ws, GgmlType.F32);
  // GgufWriter.write is atomic and durable itself (util/durable-file).
  await w.write(path);
}

/**
 * Reads a projections file into the arguments of the Projections constructor (which then checks
 * the values' ranges).
 *
 * @throws GavelError `FILE_NOT_FOUND` (no such file), `NOT_GGUF` (not a GGUF file), `CORRUPT_FILE`
 *   (a GGUF file that is not projections, from a newer version, with missing or ill-typed keys,
 *   missing tensors, wrong shapes or non-finite weights)
 */
export async function readProjectionsFile(path: string): Promise<ProjectionsInit> {
  const header = await readGgufHeader(path);
  const { num, text, corrupt } = metadataReader(path, header);
  const arch = ggufMetaString(header, "general.architecture");
  if (arch !== PROJECTIONS_ARCHITECTURE) {
    throw corrupt(`not a gavel projections file (general.architecture is ${arch === undefined ? "missing" : quoteForMessage(arch)})`);
  }
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
  if (!isModelFingerprint(model)) throw corrupt(`the model fingerprint is malformed: ${quoteForMessage(JSON.stringify(model), 200)}`);
  const dim = num(KEY.dim, "uint");
  const wq = await readWeights(path, header, TENSOR_WQ, dim, model.nEmbd, corrupt);
  const ws = await readWeights(path, header, TENSOR_WS, dim, model.nEmbd, corrupt);
  if (header.metadata.has(ABSTAIN_REFERENCE_KEY) && !header.metadata.has(ABSTAIN_KEY.kind)) throw corrupt(`metadata key ${ABSTAIN_REFERENCE_KEY} is set without ${ABSTAIN_KEY.kind}`);
  return {
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
    // Files written before the lexical expert existed lack them: no lexical expert (β = 0) at the default temperature.
    beta: header.metadata.has(KEY.beta) ? num(KEY.beta, "float") : 0,
    lexicalTemperature: header.metadata.has(KEY.lexicalTemperature) ? num(KEY.lexicalTemperature, "float") : PROJECTION_DEFAULTS.lexicalTemperature,
    // Files without them score B with Lucene's BM25 and shortlist by the first stage alone.
    lexicalK1: header.metadata.has(KEY.lexicalK1) ? num(KEY.lexicalK1, "float") : PROJECTION_DEFAULTS.lexicalK1,
    lexicalB: header.metadata.has(KEY.lexicalB) ? num(KEY.lexicalB, "float") : PROJECTION_DEFAULTS.lexicalB,
    shortlistGlance: header.metadata.has(KEY.shortlistGlance) ? num(KEY.shortlistGlance, "uint") : 0,
    shortlistLexical: header.metadata.has(KEY.shortlistLexical) ? num(KEY.shortlistLexical, "uint") : 0,
    maxShortlist: num(KEY.maxShortlist, "uint"),
    glanceRowWeights: rowWeightsOf(text(KEY.glanceRowWeights, true), corrupt),
    // Files without it: the paper's vote size.
    glanceVoteShare: header.metadata.has(KEY.glanceVoteShare) ? num(KEY.glanceVoteShare, "float") : PROJECTION_DEFAULTS.glanceVoteShare,
    // Files without them: the router's own budgets.
    skillBudget: header.metadata.has(KEY.skillBudget) ? budgetOf(num(KEY.skillBudget, "uint"), KEY.skillBudget, corrupt) : PROJECTION_DEFAULTS.skillBudget,
    keyBudget: header.metadata.has(KEY.keyBudget) ? budgetOf(num(KEY.keyBudget, "uint"), KEY.keyBudget, corrupt) : PROJECTION_DEFAULTS.keyBudget,
    trainedBy: text(KEY.trainedBy, true),
    createdAt: text(KEY.createdAt)!,
    abstention: readAbstention(header, corrupt),
    abstentionReference: readJson(header, ABSTAIN_REFERENCE_KEY, checkAbstentionReference, corrupt),
    rerank: readJson(header, RERANK_KEY, checkRerankModel, corrupt),
    referenceIdf: readReference(header, corrupt),
    domain: readDomain(header, corrupt),
  };
}

/** A stored skill or key budget: 0 (unset) up to MAX_BUDGET. */
function budgetOf(v: number, key: string, corrupt: (m: string) => GavelError): number {
  if (v > MAX_BUDGET) throw corrupt(`${key} is ${v}, above the largest budget ${MAX_BUDGET}`);
  return v;
}

/** The glance's row weights as stored; files written before the key read as the paper's uniform vote. */
function rowWeightsOf(v: string | undefined, corrupt: (m: string) => GavelError): GlanceRowWeights {
  if (v === undefined) return PROJECTION_DEFAULTS.glanceRowWeights;
  if (v !== "uniform" && v !== "idf") throw corrupt(`${KEY.glanceRowWeights} is ${quoteForMessage(v)}, expected "uniform" or "idf"`);
  return v;
}

function writeAbstention(w: GgufWriter, model: AbstentionModel): void {
  const bands: [BandAbstention, "small" | "mid" | "large"][] =
    model.kind === "bySize" ? [[model.small, "small"], ...(model.mid ? [[model.mid, "mid"] as [BandAbstention, "mid"]] : []), [model.large, "large"]] : [[model, "small"]];
  if (model.kind === "bySize") w.set(ABSTAIN_KEY.largeFrom, f64(model.from));
  if (model.kind === "bySize" && model.midUntil !== undefined) w.set(ABSTAIN_KEY.midUntil, f64(model.midUntil));
  for (const [m, band] of bands) {
    const k = (field: BandField) => abstainKey(field, band);
    w.set(k("kind"), str(m.kind));
    w.set(k("features"), arr("str", modelFeatures(m)));
    w.set(k("threshold"), f64(m.threshold));
    w.set(k("marginCap"), f64(m.marginCap));
    if (m.targetTriggerRate !== undefined) w.set(k("targetTriggerRate"), f64(m.targetTriggerRate));
    if (m.kind === "logistic") {
      w.set(k("weights"), arr("f64", m.weights));
      w.set(k("bias"), f64(m.bias));
      w.set(k("mean"), arr("f64", m.mean));
      w.set(k("scale"), arr("f64", m.scale));
    }
  }
}

/** The abstention model of a header, or null when the file has none (`gavel.abstain.kind` absent). */
function readAbstention(header: GgufHeader, corrupt: (why: string) => GavelError): AbstentionModel | null {
  const meta = header.metadata;
  if (meta.get(ABSTAIN_KEY.kind) === undefined) {
    for (const key of [ABSTAIN_KEY.largeFrom, ABSTAIN_KEY.midUntil]) if (meta.get(key) !== undefined) throw corrupt(`metadata key ${key} is set without ${ABSTAIN_KEY.kind}`);
    return null;
  }
  const small = readBand(header, "small", corrupt);
  const from = meta.get(ABSTAIN_KEY.largeFrom);
  const midUntil = meta.get(ABSTAIN_KEY.midUntil);
  if (from === undefined) {
    if (midUntil !== undefined) throw corrupt(`metadata key ${ABSTAIN_KEY.midUntil} is set without ${ABSTAIN_KEY.largeFrom}`);
    return small;
  }
  if (from.type !== "f64") throw corrupt(`metadata key ${ABSTAIN_KEY.largeFrom} is not an f64`);
  if (midUntil !== undefined && midUntil.type !== "f64") throw corrupt(`metadata key ${ABSTAIN_KEY.midUntil} is not an f64`);
  try {
    const mid = midUntil === undefined ? {} : { mid: readBand(header, "mid", corrupt), midUntil: midUntil.value };
    return checkAbstentionModel({ kind: "bySize", from: from.value, small, ...mid, large: readBand(header, "large", corrupt) });
  } catch (err) {
    if (err instanceof GavelError && err.code !== "INVALID_ARGUMENT") throw err;
    throw corrupt(err instanceof Error ? err.message : String(err));
  }
}

/** One band's model (or the only model) of a header. */
function readBand(header: GgufHeader, band: "small" | "mid" | "large", corrupt: (why: string) => GavelError): BandAbstention {
  const meta = header.metadata;
  const K = (field: BandField) => abstainKey(field, band);
  const scalar = (key: string, optional = false): number | string | undefined => {
    const v = meta.get(key);
    if (v === undefined) {
      if (optional) return undefined;
      throw corrupt(`metadata key ${key} is missing (the file has ${K("kind")})`);
    }
    if (v.type === "arr") throw corrupt(`metadata key ${key} is an array, expected a scalar`);
    if (v.type === "u64" || v.type === "i64" || v.type === "bool") throw corrupt(`metadata key ${key} has type ${v.type}`);
    return v.value;
  };
  const list = (key: string, item: "f64" | "str"): unknown[] => {
    const v = meta.get(key);
    if (v === undefined) throw corrupt(`metadata key ${key} is missing (the file has ${K("kind")})`);
    if (v.type !== "arr" || v.itemType !== item) throw corrupt(`metadata key ${key} is not an array of ${item}`);
    return [...v.value];
  };
  const features = list(K("features"), "str");
  const common = { kind: scalar(K("kind")), threshold: scalar(K("threshold")), marginCap: scalar(K("marginCap")), targetTriggerRate: scalar(K("targetTriggerRate"), true) };
  if (common.kind === "bySize") throw corrupt(`metadata key ${K("kind")} is "bySize": the bands are stored apart (${ABSTAIN_KEY.largeFrom})`);
  const raw =
    common.kind === "logistic"
      ? { ...common, features, weights: list(K("weights"), "f64"), bias: scalar(K("bias")), mean: list(K("mean"), "f64"), scale: list(K("scale"), "f64") }
      : { ...common, feature: features.length === 1 ? features[0] : features };
  try {
    return checkAbstentionModel(raw) as BandAbstention;
  } catch (err) {
    throw corrupt(err instanceof Error ? err.message : String(err));
  }
}

/** The JSON text under `key` of a header, checked by `check` (null when the file has no such key). */
function readJson<T>(header: GgufHeader, key: string, check: (x: unknown) => T, corrupt: (why: string) => GavelError): T | null {
  const v = header.metadata.get(key);
  if (v === undefined) return null;
  if (v.type !== "str") throw corrupt(`metadata key ${key} is not a string (type ${v.type})`);
  try {
    return check(JSON.parse(v.value));
  } catch (err) {
    throw corrupt(`metadata key ${key}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Typed getters of a header's metadata that throw CORRUPT_FILE naming the key. */
function metadataReader(path: string, header: GgufHeader) {
  const corrupt = (why: string) => new GavelError(`${clip(path)}: ${why}`, "CORRUPT_FILE");
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
  return { num, text, corrupt };
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
  // A row of zeros among trained rows is a zeroed block of the file (trained or random weights are
  // never exactly 0 across a whole row); a map of zeros only is a placeholder, not damage.
  const zero = zeroRows(w, nEmbd);
  if (zero.first >= 0 && zero.count < dim) {
    throw corrupt(`tensor ${name} has ${zero.count} row${zero.count === 1 ? "" : "s"} of zeros among trained rows (first: row ${zero.first}): a zeroed block, the file is damaged`);
  }
  return w;
}

/** The rows (of `width` values) of `w` that are all zeros: how many, and the first (−1: none). */
function zeroRows(w: Float32Array, width: number): { first: number; count: number } {
  let first = -1;
  let count = 0;
  for (let r = 0, at = 0; at < w.length; r++, at += width) {
    let i = at;
    while (i < at + width && w[i] === 0) i++;
    if (i === at + width) {
      count++;
      if (first < 0) first = r;
    }
  }
  return { first, count };
}

/** Index of the first NaN or ±Inf in `w`, or −1. */
export function firstNonFinite(w: Float32Array): number {
  for (let i = 0; i < w.length; i++) if (!Number.isFinite(w[i])) return i;
  return -1;
}
