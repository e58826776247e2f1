/**
 * The gate (paper, end-to-end deployment and discussion): a linear classifier over summary
 * features of a live context's accumulated glance scores and a hidden state at the current position,
 * that fires once it has been positive for two consecutive tokens.
 *
 * The paper reads the final-layer state. `Model.generate` captures the router's ℓ* for every token
 * (the live context needs it) and, with `finalState: true`, the final layer's state of the current
 * position from the same decode; both are in the decode loop with no second pass. `gavel train-gate`
 * trains on ℓ* by default (`--state-layer final` for the paper's layer) and records the layer it used
 * (`stateLayer`); {@link Gate.stateSource} says which of a chunk's states a gate reads and
 * {@link Gate.stepChunk} feeds it that one. A host that has another layer's state (e.g. from
 * `hiddenStatesAt`) can train for it and use {@link Gate.stepLive}. Weights come from `fitGate` (lab/eval/gate-fit.ts, over the rows that lab/gate/gate-train.ts
 * collects), or from the caller; a gate file is JSON with the weights as base64 little-endian float64
 * ({@link saveGate}, {@link Gate.load}).
 *
 * @module
 */
import { GavelError, invalidArgument, clip } from "../errors.js";
import { describeMismatch, isModelFingerprint, sameModel, type ModelFingerprint } from "../model/fingerprint.js";
import { writeFileDurable } from "../util/durable-file.js";
import { errnoError, errnoReason, PERMISSION_ERRNOS } from "../util/errno.js";
import { readRegularFile, RegularFileError } from "../util/regular-file.js";
import { describeValue, optionsObject } from "../util/validate.js";

/** The largest gate file read (its weights are a few nEmbd float64 values in base64: far smaller). */
const MAX_GATE_FILE_BYTES = 64 << 20;

/** An array of numbers or a typed array of numbers (not a DataView, nor a BigInt array): what the gate's vectors may be. */
function isNumberList(v: unknown): v is ArrayLike<number> {
  return Array.isArray(v) || (ArrayBuffer.isView(v) && !(v instanceof DataView) && !(v instanceof BigInt64Array) && !(v instanceof BigUint64Array));
}

/** `v` as a list of numbers, or INVALID_ARGUMENT naming `what`. */
function numberList(v: unknown, what: string): ArrayLike<number> {
  if (!isNumberList(v)) throw invalidArgument(`${what} must be an array or a typed array of numbers, got ${describeValue(v)}`);
  return v;
}

/** A live context as the gate reads it, or INVALID_ARGUMENT; DISPOSED when it was disposed (or its router closed), as its append is. */
function liveScores(live: unknown): Float64Array {
  if (typeof live !== "object" || live === null || typeof (live as { scores?: unknown }).scores !== "function") {
    throw invalidArgument(`live must be a live context (router.live()), got ${describeValue(live)}`);
  }
  const open = live as { checkOpen?: unknown };
  if (typeof open.checkOpen === "function") (open.checkOpen as (what: string) => void).call(live, "gate.stepLive");
  return (live as { scores(): { g: Float64Array } }).scores().g;
}

/** Summary features of the accumulated scores g over the library (order fixed: {@link GATE_SCORE_FEATURES}). */
export const GATE_SCORE_FEATURES = ["max", "margin", "mean", "std", "top5mean", "entropy"] as const;

/**
 * The score summary: max g, the margin of the best over the second, mean and standard deviation of
 * g, the mean of the five best, and the entropy of softmax(g) over the library (float64).
 */
export function gateScoreFeatures(g: ArrayLike<number>): Float64Array {
  const n = numberList(g, "the scores g").length;
  if (n === 0) throw invalidArgument("the gate needs at least one score");
  // Linear in the library, no sort: it runs on every token of a live context (a sort of 30K scores
  // took 3.2 ms a token on the dev CPU, more than the GPU's whole live append).
  const top = Math.min(5, n);
  const best = new Float64Array(top).fill(-Infinity); // the `top` largest, descending
  let sum = 0;
  for (let i = 0; i < n; i++) {
    const x = g[i];
    if (!Number.isFinite(x)) throw invalidArgument(`the scores g must be finite numbers: g[${i}] is ${describeValue(x)}`);
    sum += x;
    if (x > best[top - 1]) {
      let j = top - 1;
      while (j > 0 && best[j - 1] < x) {
        best[j] = best[j - 1];
        j--;
      }
      best[j] = x;
    }
  }
  const mean = sum / n;
  const max = best[0];
  // Variance about the mean (two passes, as before); entropy of softmax(g) as log z − E_p[g − max],
  // with z = Σ exp(g − max): the same quantity as −Σ p log p, without a log per skill.
  let v = 0, z = 0, ez = 0;
  for (let i = 0; i < n; i++) {
    const x = g[i];
    v += (x - mean) ** 2;
    const e = Math.exp(x - max);
    z += e;
    ez += e * (x - max);
  }
  let t5 = 0;
  for (let i = 0; i < top; i++) t5 += best[i];
  const h = Math.max(0, Math.log(z) - ez / z);
  return Float64Array.of(max, n > 1 ? max - best[1] : 0, mean, Math.sqrt(v / n), t5 / top, h);
}

/** A linear gate: weights over [score features…, state…] and a bias. */
export interface GateModel {
  /** Length {@link GATE_SCORE_FEATURES}.length + the state's width (0: score features only). */
  weights: Float64Array | number[];
  bias: number;
}

/** What a gate file records besides the weights: what they were trained on. */
export interface GateInfo {
  /** The layer whose state the weights read (the router's ℓ* by default); null when they read none. */
  stateLayer: number | null;
  /** The glance's layer ℓ* of the projections the scores came from. */
  glanceLayer: number;
  /** The model the features came from. */
  model: ModelFingerprint;
  /** {@link Projections.hash} of the projections that scored the library. */
  projections: string;
  /** Routable skills in the library it was trained over (the score features depend on its size). */
  librarySize: number;
  /** Free-form: the command, data, figures of the held-out split. */
  training?: Record<string, unknown>;
}

/** The format tag of a gate file. */
export const GATE_FILE_FORMAT = "gavel-gate";
/** The version of the gate file this code writes and reads. */
export const GATE_FILE_VERSION = 1;

/**
 * The gate over a stream of tokens: `step` scores one position and reports whether the gate fires
 * (positive at this token and the one before). After a firing the streak starts again.
 */
export class Gate {
  readonly #w: Float64Array;
  readonly #b: number;
  #streak = 0;

  /** @throws GavelError INVALID_ARGUMENT (not a `{ weights, bias }` object, weights of the wrong length or not finite, a bias not finite) */
  constructor(model: GateModel) {
    if (typeof model !== "object" || model === null) throw invalidArgument(`a gate model must be an object { weights, bias }, got ${describeValue(model)}`);
    const w = Float64Array.from(numberList(model.weights, "gate weights"));
    if (w.length < GATE_SCORE_FEATURES.length || !w.every(Number.isFinite)) {
      throw invalidArgument(`gate weights must be ${GATE_SCORE_FEATURES.length} score weights plus the state's, all finite`);
    }
    if (!Number.isFinite(model.bias)) throw invalidArgument("gate bias must be finite");
    this.#w = w;
    this.#b = model.bias;
  }

  /** What the gate file recorded (null for a gate built from weights alone). */
  info: GateInfo | null = null;

  /** The state's width the weights expect (0: none). */
  get stateDim(): number {
    return this.#w.length - GATE_SCORE_FEATURES.length;
  }

  /** The weights and bias (copies). */
  get model(): { weights: Float64Array; bias: number } {
    return { weights: Float64Array.from(this.#w), bias: this.#b };
  }

  /** The logit w·[features(g), state] + b. */
  logit(g: ArrayLike<number>, state: ArrayLike<number>): number {
    return this.logitOfFeatures(gateScoreFeatures(g), state);
  }

  /** The logit from precomputed score features ({@link gateScoreFeatures}) and the state. */
  logitOfFeatures(f: ArrayLike<number>, state: ArrayLike<number>): number {
    const nf = GATE_SCORE_FEATURES.length;
    numberList(f, "score features");
    numberList(state, "state");
    if (f.length !== nf) throw invalidArgument(`score features must have ${nf} values, got ${f.length}`);
    if (state.length !== this.#w.length - nf) throw invalidArgument(`state must have ${this.#w.length - nf} values, got ${state.length}`);
    let z = this.#b;
    for (let i = 0; i < nf; i++) z += this.#w[i] * f[i];
    for (let i = 0; i < state.length; i++) z += this.#w[nf + i] * state[i];
    if (!Number.isFinite(z)) throw invalidArgument("the gate's inputs are not finite");
    return z;
  }

  /**
   * One token of a live context: {@link Gate.step} over the context's current scores g
   * (`live.scores().g`, after the token was appended) and the token's state (the chunk's `state` of
   * `model.generate(…, { captureLayer: live.layer })` when the gate reads ℓ*, its `finalState` with
   * `finalState: true` when it reads the final layer; {@link Gate.stepChunk} picks). A gate that
   * reads no state takes an empty one.
   */
  stepLive(live: { scores(): { g: Float64Array } }, state: ArrayLike<number>): boolean {
    return this.step(liveScores(live), this.stateDim === 0 ? [] : state);
  }

  /**
   * Which state of a `model.generate` chunk this gate reads: "none" (score features only), "star"
   * (the chunk's `state`, with `captureLayer: live.layer`: the file's state layer is its glance
   * layer ℓ*, or the gate has no file info), "final" (the chunk's `finalState`, with
   * `finalState: true`: the file's state layer is the model's last), or null: another layer, which
   * generate does not capture (feed it with {@link Gate.stepLive}).
   */
  get stateSource(): "none" | "star" | "final" | null {
    if (this.stateDim === 0) return "none";
    const info = this.info;
    if (info === null || info.stateLayer === info.glanceLayer) return "star";
    return info.stateLayer === info.model.nLayer - 1 ? "final" : null;
  }

  /**
   * One generated token of a live context: {@link Gate.stepLive} with the chunk's state this gate
   * reads ({@link Gate.stateSource}): `chunk.state` (ℓ*) or `chunk.finalState` (generate's
   * `finalState: true`).
   *
   * @throws GavelError INVALID_ARGUMENT when the chunk lacks that state (a final-layer gate over a
   *   generation without `finalState`, or a gate of a layer generate does not capture)
   */
  stepChunk(live: { scores(): { g: Float64Array } }, chunk: { state: ArrayLike<number>; finalState?: ArrayLike<number> }): boolean {
    const source = this.stateSource;
    if (typeof chunk !== "object" || chunk === null) throw invalidArgument(`chunk must be a generate chunk { state, finalState? }, got ${describeValue(chunk)}`);
    if (source === null) throw invalidArgument(`this gate reads layer ${this.info?.stateLayer}, which generate does not capture: use stepLive with that layer's state`);
    if (source === "final" && chunk.finalState === undefined) throw invalidArgument("this gate reads the final layer: generate with finalState: true");
    return this.stepLive(live, source === "final" ? chunk.finalState! : chunk.state);
  }

  /**
   * Reads a gate file ({@link saveGate}). With `router`, checks that it was trained for the router's
   * model and projections and that its state layer exists.
   *
   * @throws GavelError INVALID_ARGUMENT (a bad path or options), FILE_NOT_FOUND (no file there, not
   *   a regular file: a directory, a FIFO, a device; or it cannot be read for another reason than
   *   permission, the message naming the errno: EMFILE, EIO, ELOOP, …), PERMISSION_DENIED, CORRUPT_FILE (not JSON, not a
   *   gate file, a bad field, weights of the wrong length or not finite, above 64 MiB),
   *   PROJECTIONS_MISMATCH (another model or projections than the router's)
   */
  static async load(path: string, options?: { router?: GateRouterView }): Promise<Gate> {
    return loadGate(path, options);
  }

  /** One token: true when the gate has been positive (logit > 0) for this token and the previous one. */
  step(g: ArrayLike<number>, state: ArrayLike<number>): boolean {
    return this.stepDecision(this.logit(g, state) > 0);
  }

  /** The two-token rule alone, given whether the gate is on at this token (for precomputed logits). */
  stepDecision(on: boolean): boolean {
    this.#streak = on ? this.#streak + 1 : 0;
    if (this.#streak >= 2) {
      this.#streak = 0;
      return true;
    }
    return false;
  }

  /** Forgets the streak. */
  reset(): void {
    this.#streak = 0;
  }
}

/** What {@link Gate.load} checks a gate against: a `Router` has it. */
export interface GateRouterView {
  readonly model: { readonly info: { nLayer: number; nEmbd: number } };
  readonly projections: { readonly hash: string; readonly layer: number; readonly model: ModelFingerprint };
}

function toBase64Float64(w: ArrayLike<number>): string {
  const buf = Buffer.alloc(w.length * 8);
  for (let i = 0; i < w.length; i++) buf.writeDoubleLE(w[i], i * 8);
  return buf.toString("base64");
}

function fromBase64Float64(s: string): Float64Array | null {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s)) return null;
  const buf = Buffer.from(s, "base64");
  if (buf.length % 8 !== 0) return null;
  const out = new Float64Array(buf.length / 8);
  for (let i = 0; i < out.length; i++) out[i] = buf.readDoubleLE(i * 8);
  return out;
}

/**
 * What is wrong with a gate file's record of its training (`o`: {@link GateInfo}'s fields) for
 * weights that read `stateDim` state values; null when nothing is. The writer and the reader check
 * the same rules, so {@link saveGate} never writes a file {@link Gate.load} refuses.
 */
function gateInfoProblem(o: Record<string, unknown>, stateDim: number): string | null {
  const int = (v: unknown, min: number) => typeof v === "number" && Number.isInteger(v) && v >= min;
  if (!(o.stateLayer === null ? stateDim === 0 : int(o.stateLayer, 0) && stateDim > 0)) return "stateLayer must be a layer ≥ 0 (null exactly when stateDim is 0)";
  if (!int(o.glanceLayer, 0)) return "glanceLayer must be an integer ≥ 0";
  if (!isModelFingerprint(o.model)) return "model must be a model fingerprint";
  if (typeof o.projections !== "string" || o.projections === "") return "projections must be the projections' hash";
  if (!int(o.librarySize, 1)) return "librarySize must be an integer ≥ 1";
  if (o.training !== undefined && (typeof o.training !== "object" || o.training === null || Array.isArray(o.training))) return "training must be an object";
  return null;
}

/**
 * The JSON of a gate file.
 *
 * @throws GavelError INVALID_ARGUMENT (bad weights, or `info` not what {@link Gate.load} reads back)
 */
export function gateFileJson(model: GateModel, info: GateInfo): string {
  const gate = new Gate(model); // checks the weights
  const { weights, bias } = gate.model;
  const stateDim = weights.length - GATE_SCORE_FEATURES.length;
  if (typeof info !== "object" || info === null || Array.isArray(info)) throw invalidArgument(`the gate's info must be an object { stateLayer, glanceLayer, model, projections, librarySize, training? }, got ${describeValue(info)}`);
  const problem = gateInfoProblem(info as unknown as Record<string, unknown>, stateDim);
  if (problem !== null) throw invalidArgument(`the gate's info: ${problem}`);
  let training: unknown;
  try {
    training = info.training === undefined ? undefined : JSON.parse(JSON.stringify(info.training)) as unknown;
  } catch (err) {
    throw invalidArgument(`the gate's info: training must be JSON (${(err as Error).message})`);
  }
  if (training !== undefined && (typeof training !== "object" || training === null || Array.isArray(training))) throw invalidArgument("the gate's info: training must be an object");
  return `${JSON.stringify({
    format: GATE_FILE_FORMAT,
    version: GATE_FILE_VERSION,
    features: [...GATE_SCORE_FEATURES],
    stateLayer: info.stateLayer,
    stateDim,
    glanceLayer: info.glanceLayer,
    model: info.model,
    projections: info.projections,
    librarySize: info.librarySize,
    bias,
    weights: toBase64Float64(weights),
    ...(training !== undefined ? { training } : {}),
  }, null, 2)}\n`;
}

/**
 * Writes a gate file (JSON, weights as base64 float64), durably (temp file, fsync, rename).
 *
 * @throws GavelError INVALID_ARGUMENT (a bad path, bad weights, `info` not what {@link Gate.load}
 *   reads back, a folder in the file's place), FILE_NOT_FOUND (its folder is missing),
 *   PERMISSION_DENIED, NO_SPACE
 */
export async function saveGate(path: string, model: GateModel, info: GateInfo): Promise<void> {
  if (typeof path !== "string" || path === "") throw invalidArgument(`the gate's path must be a non-empty string, got ${describeValue(path)}`);
  const text = gateFileJson(model, info);
  try {
    await writeFileDurable(path, text);
  } catch (err) {
    throw errnoError(err, `cannot write the gate file ${clip(path)}`);
  }
}

/** Parses the JSON of a gate file; `where` names it in errors. */
export function parseGateFile(text: string, where = "gate file"): Gate {
  const bad = (why: string) => new GavelError(`${clip(where)} is not a valid gate file: ${why}`, "CORRUPT_FILE");
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(text) as Record<string, unknown>;
  } catch (err) {
    throw new GavelError(`${clip(where)} is not JSON: ${(err as Error).message}`, "CORRUPT_FILE", { cause: err });
  }
  if (typeof o !== "object" || o === null || Array.isArray(o)) throw bad("not a JSON object");
  if (o.format !== GATE_FILE_FORMAT) throw bad(`format is ${JSON.stringify(o.format)}, not "${GATE_FILE_FORMAT}"`);
  if (o.version !== GATE_FILE_VERSION) throw bad(`version ${JSON.stringify(o.version)} (this code reads version ${GATE_FILE_VERSION})`);
  if (!Array.isArray(o.features) || o.features.join(",") !== GATE_SCORE_FEATURES.join(",")) throw bad(`features must be ${GATE_SCORE_FEATURES.join(", ")}`);
  if (!(typeof o.stateDim === "number" && Number.isInteger(o.stateDim) && o.stateDim >= 0)) throw bad("stateDim must be an integer ≥ 0");
  const problem = gateInfoProblem(o, o.stateDim);
  if (problem !== null) throw bad(problem);
  if (typeof o.bias !== "number" || !Number.isFinite(o.bias)) throw bad("bias must be a finite number");
  const w = typeof o.weights === "string" ? fromBase64Float64(o.weights) : null;
  if (w === null) throw bad("weights must be base64 of little-endian float64 values");
  if (w.length !== GATE_SCORE_FEATURES.length + (o.stateDim as number)) throw bad(`weights hold ${w.length} values, not ${GATE_SCORE_FEATURES.length} + stateDim ${o.stateDim as number}`);
  if (!w.every(Number.isFinite)) throw bad("weights must be finite");
  const gate = new Gate({ weights: w, bias: o.bias });
  gate.info = {
    stateLayer: o.stateLayer as number | null,
    glanceLayer: o.glanceLayer as number,
    model: o.model as ModelFingerprint,
    projections: o.projections as string,
    librarySize: o.librarySize as number,
    ...(o.training ? { training: o.training as Record<string, unknown> } : {}),
  };
  return gate;
}

/**
 * Reads and checks a gate file ({@link Gate.load}). Only a regular file is read (symbolic links
 * followed): a directory, a FIFO or a device is refused before a byte is read.
 *
 * @throws GavelError INVALID_ARGUMENT, FILE_NOT_FOUND, PERMISSION_DENIED, CORRUPT_FILE, PROJECTIONS_MISMATCH
 */
export async function loadGate(path: string, options?: { router?: GateRouterView }): Promise<Gate> {
  if (typeof path !== "string" || path === "") throw invalidArgument(`the gate's path must be a non-empty string, got ${describeValue(path)}`);
  if (options !== undefined && (typeof options !== "object" || options === null || Array.isArray(options))) {
    throw invalidArgument(`loadGate options must be an object { router? }, got ${describeValue(options)}`);
  }
  const router = optionsObject(options, "loadGate options", { router: true }).router;
  if (router !== undefined && !isGateRouterView(router)) throw invalidArgument("options.router must be a Router (its model and projections)");
  let text: string;
  try {
    text = (await readRegularFile(path, MAX_GATE_FILE_BYTES)).toString("utf8");
  } catch (err) {
    throw gateReadError(path, err);
  }
  const gate = parseGateFile(text, path);
  if (router !== undefined) checkGateFor(gate, router, path);
  return gate;
}

/**
 * The typed error of a gate file that could not be read: PERMISSION_DENIED (EACCES, EPERM),
 * CORRUPT_FILE (above the size cap), FILE_NOT_FOUND "no gate file" (missing, or not a regular file),
 * and for any other errno (EMFILE, EIO, ENAMETOOLONG, ELOOP, …) FILE_NOT_FOUND "cannot read", naming
 * it: the file may well exist. FILE_NOT_FOUND is what the model and projections loaders give a file
 * they cannot read. Anything else is returned as it is.
 */
function gateReadError(path: string, err: unknown): unknown {
  const file = err instanceof RegularFileError ? err : undefined;
  // an errno of the open (the RegularFileError's cause) or of a read after it
  const io = (file ? file.cause : err) as NodeJS.ErrnoException | undefined;
  const errno = typeof io?.code === "string" ? io.code : undefined;
  if (file === undefined && errno === undefined) return err;
  if (errno !== undefined && PERMISSION_ERRNOS.includes(errno)) return new GavelError(`cannot read the gate file ${clip(path)}: ${errnoReason(errno)![1]} (${errno})`, "PERMISSION_DENIED", { cause: err });
  if (file?.reason === "too-large") return new GavelError(`not a gate file: ${file.message}`, "CORRUPT_FILE", { cause: err });
  if (file?.reason === "missing") return new GavelError(`no gate file at ${clip(path)}`, "FILE_NOT_FOUND", { cause: err });
  if (errno === undefined) return new GavelError(`no gate file at ${clip(path)}: ${file?.message}`, "FILE_NOT_FOUND", { cause: err });
  // Node's errno messages read "ECODE: what it means, syscall 'path'"
  const what = /^[A-Z0-9]+: ([^,]+)/.exec(io?.message ?? "")?.[1];
  return new GavelError(`cannot read the gate file ${clip(path)}: ${what ?? "an I/O error"} (${errno})`, "FILE_NOT_FOUND", { cause: err });
}

/** Whether `v` has what {@link checkGateFor} reads of a router. */
function isGateRouterView(v: unknown): v is GateRouterView {
  const r = v as { model?: { info?: { nLayer?: unknown; nEmbd?: unknown } }; projections?: { hash?: unknown; layer?: unknown; model?: unknown } } | null;
  if (typeof r !== "object" || r === null) return false;
  const info = r.model?.info, p = r.projections;
  return typeof info?.nLayer === "number" && typeof info.nEmbd === "number" && typeof p?.hash === "string" && typeof p.layer === "number" && isModelFingerprint(p.model);
}

/** Refuses a gate trained for another model, projections or state width than the router's. */
export function checkGateFor(gate: Gate, router: GateRouterView, where = "the gate"): void {
  const info = gate.info;
  if (!info) return;
  const fp = router.projections.model;
  if (!sameModel(info.model, fp)) {
    throw new GavelError(`${clip(where)} was trained on another model (${describeMismatch(info.model, fp) ?? "different"}): retrain it (gavel train-gate)`, "PROJECTIONS_MISMATCH");
  }
  if (info.projections !== router.projections.hash) {
    throw new GavelError(`${clip(where)} was trained with other projections (hash ${info.projections.slice(0, 12)}, not ${router.projections.hash.slice(0, 12)}): retrain it (gavel train-gate)`, "PROJECTIONS_MISMATCH");
  }
  if (info.glanceLayer !== router.projections.layer) {
    throw new GavelError(`${clip(where)} was trained on scores of the glance at layer ${info.glanceLayer}, not the router's ${router.projections.layer}: retrain it (gavel train-gate)`, "PROJECTIONS_MISMATCH");
  }
  if (info.stateLayer !== null && (info.stateLayer >= router.model.info.nLayer || gate.stateDim !== router.model.info.nEmbd)) {
    throw new GavelError(`${clip(where)} reads layer ${info.stateLayer} with ${gate.stateDim} values; the model has ${router.model.info.nLayer} layers of ${router.model.info.nEmbd}`, "PROJECTIONS_MISMATCH");
  }
}
