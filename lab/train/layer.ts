/**
 * Choosing the glance's layer ℓ* (paper, section 3.2 and appendix B): the floor of the model's
 * compression valley, where the matrix entropy of a rendered skill's token states bottoms out.
 *
 * For a seeded sample of skills, each skill is rendered as r(s) and run through the model once; the
 * states of every layer come out of that one pass ({@link Model.hiddenStatesAt}). For each layer the
 * states of the skill's keyed span ("name: …\ndescription: …\n\n{body}", the tokens the glance reads)
 * are stacked into Z, the top-norm token is dropped, and S₁ of Z's spectrum is taken. The median over
 * skills gives one entropy per layer; ℓ* is the layer of the minimum median, excluding layer 0 and the
 * last layer (see {@link pickLayer}).
 *
 * The paper measures "the token states of a rendered skill"; we take the keyed span rather than every
 * token of r(s) because the glance keys exactly those tokens: the chat scaffolding and the fixed
 * "Here is an agent skill" line are the same for every skill and are never read.
 *
 * The result is written where training reads it: a small JSON bound to the model's fingerprint
 * ({@link writeLayerChoice}, {@link readLayerChoice}).
 */
import { mkdir, readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { GavelError, type Model, modelFingerprint, type ModelFingerprint } from "gavel-router";
import { checkLayer, describeMismatch, errnoError, describeModel, inOrder, INT32_MAX, intOption, invalidArgument, isModelFingerprint, mulberry32, type RenderableSkill, RenderEncoder, writeFileDurable } from "gavel-router/internal";
import { matrixEntropy } from "./entropy.js";

/** Skills sampled by default (the paper's figure uses 500). */
export const DEFAULT_LAYER_SAMPLE = 500;
/** Keyed tokens per skill by default: keeps each Gram matrix at most 512 wide. */
export const DEFAULT_LAYER_MAX_TOKENS = 512;
/** File name the layer choice is written under by default, next to the projections or bank. */
export const DEFAULT_LAYER_FILE = "gavel-layer.json";

/** A skill for the scan: what r(s) needs, plus an id for reports. */
export type LayerScanSkill = RenderableSkill & { id?: string };

/** Progress of {@link scanLayers}: after each skill. */
export interface LayerScanProgress {
  done: number;
  total: number;
  skill: string;
}

/** Options of {@link scanLayers}. */
export interface ScanLayersOptions {
  /** Skills to sample from the library (all of them if it has fewer). Default 500. */
  sample?: number;
  /**
   * Most keyed tokens per skill (the first ones of the span). Default 512. Also bounded by the model's
   * context size and trained context length, minus the scaffolding before the span.
   */
  maxTokens?: number;
  /** Seed of the sample. Default 0. */
  seed?: number;
  /** Drop each skill's top-norm token before the spectrum (the sink). Default true. */
  dropTopNorm?: boolean;
  signal?: AbortSignal;
  onProgress?: (p: LayerScanProgress) => void;
}

/** What {@link scanLayers} measured. */
export interface LayerScan {
  /** Median S₁ over the scanned skills, one per layer (index = layer, 0-based block output). */
  curve: Float64Array;
  /** First and third quartiles per layer, for the spread. */
  q25: Float64Array;
  q75: Float64Array;
  /** One curve per scanned skill (same order as `ids`). */
  perSkill: Float64Array[];
  /** The pick, see {@link pickLayer}. */
  layer: number;
  /** Ids (or names) of the scanned skills, in library order. */
  ids: string[];
  /** Keyed tokens each scanned skill contributed (before the top-norm drop). */
  tokens: Int32Array;
  /** Sampled skills that could not be scanned, with why (e.g. a span too short for a spectrum). */
  skipped: { id: string; reason: string }[];
  maxTokens: number;
  dropTopNorm: boolean;
  seconds: number;
}

/**
 * The floor of the compression valley: the layer of minimum median entropy, excluding layer 0 and the
 * last layer. The edges are excluded because the paper's curve is not a plain valley: it climbs,
 * collapses, bottoms out and recovers toward the output, and the first block's states (barely past the
 * embeddings) can sit low for reasons unrelated to compression. Ties go to the shallower layer (cheaper
 * to reach). NaN entries are ignored. With fewer than 3 layers there is no interior, and every layer
 * is a candidate.
 *
 * @throws GavelError `INVALID_ARGUMENT` when the curve is empty or all NaN in the candidate range.
 */
export function pickLayer(curve: ArrayLike<number>): number {
  const n = curve.length;
  if (n === 0) throw invalidArgument("pickLayer: empty curve");
  const [lo, hi] = n >= 3 ? [1, n - 2] : [0, n - 1];
  let best = -1;
  for (let l = lo; l <= hi; l++) {
    if (Number.isNaN(curve[l])) continue;
    if (best < 0 || curve[l] < curve[best]) best = l;
  }
  if (best < 0) throw invalidArgument("pickLayer: no finite entropy among the candidate layers");
  return best;
}

/** k distinct indices of [0, n), seeded (a partial Fisher–Yates shuffle), returned in ascending order. */
export function sampleIndices(n: number, k: number, seed: number): number[] {
  const idx = Array.from({ length: n }, (_, i) => i);
  const m = Math.min(n, k);
  const rand = mulberry32(seed);
  for (let i = 0; i < m; i++) {
    const j = i + Math.floor(rand() * (n - i));
    [idx[i], idx[j]] = [idx[j], idx[i]];
  }
  return idx.slice(0, m).sort((a, b) => a - b);
}

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const pos = q * (sorted.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}


/** Characters of body kept before rendering: far more than maxTokens tokens need (see below). */
const CHARS_PER_TOKEN_BOUND = 32;
/** Keep one pass's states (layers × tokens × width float32) under this; more layers take more passes. */
const STATES_BYTES_PER_PASS = 1 << 30;

/** The settings of one scan, resolved from its options and the model. */
interface ScanPlan {
  sample: number;
  maxTokens: number;
  seed: number;
  dropTopNorm: boolean;
  nLayer: number;
  nEmbd: number;
  /** Positions at or past this are never read (see {@link scanPlan}). */
  lastPosition: number;
  /** Body characters kept before rendering. */
  bodyChars: number;
  /** Fewest keyed rows that give a spectrum (one more when the top-norm token is dropped). */
  minRows: number;
}

function scanPlan(model: Model, options: ScanLayersOptions): ScanPlan {
  const maxTokens = intOption(options.maxTokens, "maxTokens", 2, INT32_MAX, DEFAULT_LAYER_MAX_TOKENS);
  const dropTopNorm = options.dropTopNorm ?? true;
  const { nLayer, nEmbd, contextSize, contextLength } = model.info;
  return {
    sample: intOption(options.sample, "sample", 1, INT32_MAX, DEFAULT_LAYER_SAMPLE),
    maxTokens,
    seed: intOption(options.seed, "seed", 0, INT32_MAX, 0),
    dropTopNorm,
    nLayer,
    nEmbd,
    // Positions past the length the model was trained on give out-of-distribution states (a loaded
    // context may be larger): never read them.
    lastPosition: Math.min(contextSize, contextLength > 0 ? contextLength : contextSize),
    // The body is cut to a generous character budget before rendering: tokenising a 100 kB body to
    // keep 512 tokens wastes time, and a token is rarely longer than a few characters. Since the model
    // is causal, cutting tokens after the span's first maxTokens cannot change the states we read.
    bodyChars: maxTokens * CHARS_PER_TOKEN_BOUND,
    minRows: dropTopNorm ? 3 : 2,
  };
}

/** One skill's forward pass(es) done: every layer's states of its tokens up to the span's cut. */
interface SkillPass {
  id: string;
  keyStart: number;
  rows: number;
  states: Float32Array[];
}

/** A sampled skill whose keyed span is too short to scan. */
interface SkillSkip {
  id: string;
  reason: string;
}

/**
 * Renders one skill and runs the forward pass(es) reading every layer of its keyed span (several
 * passes only when all layers' states would exceed {@link STATES_BYTES_PER_PASS}).
 */
async function skillPass(model: Model, encoder: RenderEncoder, plan: ScanPlan, s: LayerScanSkill, signal?: AbortSignal): Promise<SkillPass | SkillSkip> {
  const id = s.id ?? s.name;
  const body = s.body.length > plan.bodyChars ? s.body.slice(0, plan.bodyChars) : s.body;
  const enc = encoder.encodeSkill({ name: s.name, description: s.description, body });
  const end = Math.min(enc.keyEnd, enc.keyStart + plan.maxTokens, plan.lastPosition);
  const rows = end - enc.keyStart;
  if (rows < plan.minRows) return { id, reason: `${Math.max(0, rows)} keyed tokens fit (need ${plan.minRows})` };
  const tokens = enc.tokens.subarray(0, end);
  const perPass = Math.max(1, Math.floor(STATES_BYTES_PER_PASS / (end * plan.nEmbd * 4)));
  const passes: Promise<Float32Array[]>[] = [];
  for (let l = 0; l < plan.nLayer; l += perPass) {
    const layers = Array.from({ length: Math.min(perPass, plan.nLayer - l) }, (_, i) => l + i);
    passes.push(model.hiddenStatesAt(tokens, layers, { signal }));
  }
  return { id, keyStart: enc.keyStart, rows, states: (await Promise.all(passes)).flat() };
}

/** S₁ per layer of the keyed span's states of one skill. */
function skillCurve(plan: ScanPlan, pass: SkillPass): Float64Array {
  const curve = new Float64Array(plan.nLayer);
  for (let l = 0; l < plan.nLayer; l++) {
    const z = pass.states[l].subarray(pass.keyStart * plan.nEmbd, (pass.keyStart + pass.rows) * plan.nEmbd);
    curve[l] = matrixEntropy(z, pass.rows, plan.nEmbd, { dropTopNorm: plan.dropTopNorm });
  }
  return curve;
}

/** The median curve and its quartiles, per layer, over the skills' curves (NaN entries ignored). */
function summarizeCurves(perSkill: readonly Float64Array[], nLayer: number): { curve: Float64Array; q25: Float64Array; q75: Float64Array } {
  const curve = new Float64Array(nLayer);
  const q25 = new Float64Array(nLayer);
  const q75 = new Float64Array(nLayer);
  for (let l = 0; l < nLayer; l++) {
    const vals = perSkill.map((c) => c[l]).filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
    curve[l] = quantile(vals, 0.5);
    q25[l] = quantile(vals, 0.25);
    q75[l] = quantile(vals, 0.75);
  }
  return { curve, q25, q75 };
}

/**
 * Scans every layer of `model` over a seeded sample of `skills`: one forward pass per skill (more
 * only when the states of every layer would exceed 1 GiB), S₁ per layer of the keyed span's states,
 * and the median curve with its pick.
 *
 * Entropies of skill i are computed while the model runs skill i + 1, so the JavaScript-side
 * eigenproblems overlap the native forward passes.
 *
 * @throws GavelError `INVALID_ARGUMENT` for bad options or an empty list, `EMPTY_LIBRARY` when no
 *   sampled skill could be scanned, `ABORTED` when the signal fires, and whatever the model throws.
 */
export async function scanLayers(model: Model, skills: readonly LayerScanSkill[], options: ScanLayersOptions = {}): Promise<LayerScan> {
  if (!Array.isArray(skills) || skills.length === 0) throw invalidArgument("scanLayers: skills must be a non-empty array");
  const plan = scanPlan(model, options);
  const signal = options.signal;
  const t0 = performance.now();
  // No budget cut inside the encoder: we truncate the token sequence ourselves (see scanPlan).
  const encoder = new RenderEncoder(model, Number.MAX_SAFE_INTEGER);
  const picked = sampleIndices(skills.length, plan.sample, plan.seed).map((i) => skills[i]);
  const ids: string[] = [];
  const perSkill: Float64Array[] = [];
  const tokenCounts: number[] = [];
  const skipped: SkillSkip[] = [];
  const checkAbort = () => {
    if (signal?.aborted) throw new GavelError("the layer scan was aborted", "ABORTED");
  };
  let done = 0;
  // Width 2: skill i + 1's forward pass runs while skill i's entropies are computed.
  await inOrder(picked, { width: 2, beforeEach: checkAbort }, (s) => skillPass(model, encoder, plan, s, signal), async (_s, outcome) => {
    if (!outcome.ok) throw outcome.error;
    const job = outcome.value;
    if ("reason" in job) skipped.push(job);
    else {
      perSkill.push(skillCurve(plan, job));
      ids.push(job.id);
      tokenCounts.push(job.rows);
    }
    options.onProgress?.({ done: ++done, total: picked.length, skill: job.id });
    // Let an abort (e.g. SIGINT) and progress output through between skills.
    await new Promise<void>((r) => setImmediate(r));
  });
  checkAbort();
  if (perSkill.length === 0) throw new GavelError(`no sampled skill could be scanned (${skipped.length} skipped: ${skipped[0]?.reason})`, "EMPTY_LIBRARY");
  const { curve, q25, q75 } = summarizeCurves(perSkill, plan.nLayer);
  return {
    curve,
    q25,
    q75,
    perSkill,
    layer: pickLayer(curve),
    ids,
    tokens: Int32Array.from(tokenCounts),
    skipped,
    maxTokens: plan.maxTokens,
    dropTopNorm: plan.dropTopNorm,
    seconds: (performance.now() - t0) / 1000,
  };
}

/** The layer choice as written to disk, for the trainer. */
export interface LayerChoice {
  /** Fingerprint of the model the scan ran on; {@link readLayerChoice} refuses another model. */
  model: ModelFingerprint;
  /** ℓ*: 0-based index of the block whose output the glance reads. */
  layer: number;
  /** Median S₁ per layer. */
  curve: number[];
  /** Skills scanned. */
  skills: number;
  /** The cap on keyed tokens per skill. */
  tokensPerSkill: number;
  /** Whether the top-norm token was dropped. */
  dropTopNorm: boolean;
  /** Which tokens of r(s) were measured: the keyed span (header + body). */
  span: "keyed";
  /** ISO 8601. */
  createdAt: string;
}

/** The {@link LayerChoice} for a scan on `model`. */
export async function layerChoiceOf(model: Model | ModelFingerprint, scan: LayerScan): Promise<LayerChoice> {
  const fp = isModelFingerprint(model) ? model : await modelFingerprint(model as Model);
  return {
    model: fp,
    layer: scan.layer,
    curve: Array.from(scan.curve),
    skills: scan.perSkill.length,
    tokensPerSkill: scan.maxTokens,
    dropTopNorm: scan.dropTopNorm,
    span: "keyed",
    createdAt: new Date().toISOString(),
  };
}

/**
 * Where the layer choice goes when the user names no file: next to the projections (the trainer writes
 * them and reads ℓ* from beside them), else next to the bank directory, else the working directory.
 */
export function defaultLayerChoicePath(at: { projections?: string; bank?: string } = {}): string {
  if (at.projections) return join(dirname(at.projections), DEFAULT_LAYER_FILE);
  if (at.bank) return join(dirname(at.bank.replace(/[/\\]+$/, "")), DEFAULT_LAYER_FILE);
  return DEFAULT_LAYER_FILE;
}

/**
 * Writes `choice` as JSON, atomically (a temporary file renamed over the target), making its folder
 * when missing; a file-system failure is typed (util/errno.ts: PERMISSION_DENIED, NO_SPACE, …).
 */
export async function writeLayerChoice(path: string, choice: LayerChoice): Promise<void> {
  try {
    await mkdir(dirname(path), { recursive: true });
    await writeFileDurable(path, JSON.stringify(choice, null, 2) + "\n");
  } catch (err) {
    throw errnoError(err, `cannot write the layer choice ${path}`);
  }
}

function isLayerChoice(v: unknown): v is LayerChoice {
  if (typeof v !== "object" || v === null) return false;
  const o = v as Record<string, unknown>;
  return (
    isModelFingerprint(o.model) &&
    typeof o.layer === "number" &&
    Number.isInteger(o.layer) &&
    o.layer >= 0 &&
    Array.isArray(o.curve) &&
    o.curve.every((x) => typeof x === "number" || x === null) &&
    typeof o.skills === "number" &&
    typeof o.tokensPerSkill === "number" &&
    typeof o.createdAt === "string"
  );
}

/**
 * Reads a layer choice written by `gavel layer` and checks that it was measured on `model` (a loaded
 * model or its fingerprint).
 *
 * @throws GavelError `FILE_NOT_FOUND` when the file cannot be read, `CORRUPT_FILE` when it is not a
 *   layer choice, `PROJECTIONS_MISMATCH` when it belongs to another model (the message says how the
 *   models differ), `LAYER_OUT_OF_RANGE` when its layer does not exist in this model.
 */
export async function readLayerChoice(path: string, model: Model | ModelFingerprint): Promise<LayerChoice> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    throw new GavelError(`layer choice not found: ${path} (run \`gavel layer\` first)`, "FILE_NOT_FOUND", { cause: err });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new GavelError(`${path} is not JSON`, "CORRUPT_FILE", { cause: err });
  }
  if (!isLayerChoice(parsed)) throw new GavelError(`${path} is not a layer choice written by \`gavel layer\``, "CORRUPT_FILE");
  const fp = isModelFingerprint(model) ? model : await modelFingerprint(model as Model);
  const diff = describeMismatch(parsed.model, fp);
  if (diff !== undefined) {
    throw new GavelError(
      `the layer choice ${path} was measured on ${describeModel(parsed.model)}; this model is ${describeModel(fp)} ` +
        `(differs in: ${diff}). Run \`gavel layer\` on this model.`,
      "PROJECTIONS_MISMATCH",
    );
  }
  checkLayer(parsed.layer, fp.nLayer, `${path}: layer`);
  return parsed;
}
