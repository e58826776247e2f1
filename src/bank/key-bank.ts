/**
 * The in-memory half of the bank: every installed skill's ε-cover keys held in native memory
 * (native/src/bank), glanced at without copying the library from JavaScript.
 *
 * @module
 */
import { invalidArgument } from "../errors.js";
import { loadBinding, type NativeBank, type NativeBankGlanceResult } from "../native/binding.js";
import { checkFloat32, checkInt, checkRows, resolveWeights } from "../kernels/args.js";
import { voteK, type GlanceOptions } from "../kernels/kernels.js";
import { abortable, enumOption, optionsObject, signalOption, untilAborted } from "../util/validate.js";

/** Every key of {@link KeyBankGlanceOptions}. */
const KEY_BANK_GLANCE_KEYS: Record<keyof KeyBankGlanceOptions, true> = { handles: true, signal: true, detail: true, weights: true, k: true };

/** Results of {@link KeyBank.glance}: a flat glance's result plus the handle of each column. */
export type KeyBankGlanceResult = NativeBankGlanceResult;

/** Options of {@link KeyBank.glance}. */
export interface KeyBankGlanceOptions extends GlanceOptions {
  /**
   * Glance only these skills, in this order (distinct handles held by the bank); default every
   * skill, in {@link KeyBank.handles} order. The default k is then {@link voteK}(handles.length).
   */
  handles?: Int32Array;
  /** Cancels the glance: it rejects at once with a GavelError `ABORTED`, the signal's reason as its `cause` (the bank stays usable). */
  signal?: AbortSignal;
  /**
   * Return m and argmax only for the `detail` best columns by g (integer ≥ 0), listed in
   * `result.columns`, instead of for every column (nq × N values: up to gigabytes at 100K skills,
   * and on a device the copy that dominates a glance). Default: every column.
   */
  detail?: number;
}

/** Options of the {@link KeyBank} constructor. */
export interface KeyBankOptions {
  /**
   * How the keys are held in host memory: `"f32"` (default; the CPU glance is then the float32
   * reference) or `"f16"` (IEEE half, rounded to nearest even: half the memory; each inner product
   * moves by at most 2⁻¹¹ ≈ 4.9e-4 for unit vectors, and the CPU max-sim reads them at the same
   * speed, converting as it packs). A device copy holds f16 keys either way.
   */
  keyType?: "f32" | "f16";
}

let nextTicket = 1;

/**
 * Where {@link KeyBank.glance} over the whole bank computes its max-sim: `"cuda"` when the addon was
 * built with CUDA (`GAVEL_CUDA=1 npm run build:native`) and a device answers, else `"cpu"`. The
 * environment variable `GAVEL_GLANCE_DEVICE` (`cpu` | `cuda` | `auto`, docs/configuration.md)
 * overrides it. On the device the bank's keys are held as f16 and follow bank changes incrementally
 * (only skills added since the last device glance are uploaded); the max-sim and each token's
 * top-k run there, and only the top-k pairs (plus m and argmax when asked) come back; the vote's
 * sum runs on the host in float64, as on the CPU. Glances over a handle subset run there too.
 *
 * @returns the device, whether CUDA is available, and if not, why.
 */
export function glanceDevice(): { device: "cuda" | "cpu"; cudaAvailable: boolean; reason?: string } {
  return loadBinding().glanceDevice();
}

/**
 * Every installed skill's ε-cover keys, held in native memory (float32) across glances, so a glance
 * over a 30K-skill library copies nothing but its queries from JS.
 *
 * Skills are added one at a time and named by the handle {@link KeyBank.add} returns (integers ≥ 1,
 * increasing, never reused). A glance sees the bank as it was when the glance was called:
 * `add` / `remove` / `clear` during a running glance neither wait for it nor change its result
 * (copy-on-write: the glance keeps the snapshot of the skill list it started with, and key
 * buffers are immutable and shared; the first mutation after a glance starts copies the list of
 * skills, not their keys).
 *
 * @example
 * ```ts
 * const bank = new KeyBank(768);
 * const h = bank.add(keysOfSkill);              // n × 768 unit keys
 * const { g, handles } = await bank.glance(queries, { weights: decayWeights(nq) });
 * ```
 */
export class KeyBank {
  /** Key dimension. */
  readonly dim: number;
  readonly #native: NativeBank;

  /**
   * @param dim - key dimension, integer ≥ 1.
   * @param options - {@link KeyBankOptions}: how the keys are held.
   * @throws GavelError `INVALID_ARGUMENT` on a bad dim or key type; `NATIVE_UNAVAILABLE` without the addon.
   */
  constructor(dim: number, options: KeyBankOptions = {}) {
    checkInt(dim, "dim", 1);
    const keyType = enumOption(optionsObject(options, "KeyBank options", { keyType: true }).keyType, "keyType", ["f32", "f16"] as const) ?? "f32";
    this.dim = dim;
    this.#native = new (loadBinding().NativeBank)(dim, keyType);
  }

  /** @internal The native bank, for the glance index (./glance-index.ts), which reads its snapshot. */
  get _native(): NativeBank {
    return this.#native;
  }

  /** How the keys are held: `"f32"` or `"f16"` ({@link KeyBankOptions.keyType}). */
  get keyType(): "f32" | "f16" {
    return this.#native.keyType;
  }

  /**
   * Adds one skill: copies its n × dim keys in (n may be 0: such a skill scores m = −1).
   *
   * @param keys - n × dim row-major unit keys, finite (not renormalised).
   * @returns the skill's handle.
   * @throws GavelError `INVALID_ARGUMENT` on a wrong type, a length not a multiple of dim, NaN/Inf,
   *   or (in an f16 bank) a value beyond f16's range (|x| ≥ 65520).
   */
  add(keys: Float32Array): number {
    checkFloat32(keys, "keys");
    checkRows(keys, this.dim, "keys");
    return this.#native.add(keys);
  }

  /**
   * Removes one skill. A glance already running still sees it.
   *
   * @throws GavelError `INVALID_ARGUMENT` if the bank holds no skill with that handle.
   */
  remove(handle: number): void {
    checkInt(handle, "handle", 1);
    this.#native.remove(handle);
  }

  /** Removes every skill (running glances keep theirs). */
  clear(): void {
    this.#native.clear();
  }

  /**
   * Frees the native keys. Running glances reject with ABORTED (or resolve, if already past their
   * last check); any later use throws a GavelError `DISPOSED`. Idempotent.
   */
  dispose(): void {
    this.#native.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  /** The handles held, in the order a glance over the whole bank reports them (insertion order). */
  handles(): Int32Array {
    return this.#native.handles();
  }

  /** Number of skills held. */
  get size(): number {
    return this.#native.size;
  }

  /** Number of key rows held, all skills together. */
  get keys(): number {
    return this.#native.keys;
  }

  /** Native memory held for the current skills, in bytes (keys plus bookkeeping). */
  get bytes(): number {
    return this.#native.bytes;
  }

  /**
   * The glance (Eqs. 1 and 3) over the skills held, exactly as {@link glance} computes it over a
   * flat bank holding the same skills in the same order: same conventions (empty skill m = −1,
   * argmax −1), same ties (top-k to the lower column, argmax to the lower key index), same
   * float32 scores and float64 vote. Columns of g, m and argmax follow `result.handles`. In an f16
   * bank the scores are those of the f16-rounded keys; on a CUDA device (see {@link glanceDevice})
   * also of f16-rounded queries, with products summed in float32 on tensor cores: m within ~1e-3 of
   * the CPU's for unit vectors, g likewise, the top-k differing only on such near-ties.
   *
   * Runs on worker threads, split over skills. Queries and weights are copied at the call.
   *
   * @param queries - nq × dim row-major unit queries, nq ≥ 1, finite.
   * @returns g (N), m and argmax (nq × N, row-major by token), handles (N).
   * @throws GavelError (as a rejection) `INVALID_ARGUMENT` on a wrong type, length or value of any
   *   argument, an unknown or repeated handle; `ABORTED` once `options.signal` aborts.
   */
  async glance(queries: Float32Array, options: KeyBankGlanceOptions = {}): Promise<KeyBankGlanceResult> {
    checkFloat32(queries, "queries");
    const nq = checkRows(queries, this.dim, "queries");
    if (nq === 0) throw invalidArgument("queries hold no token");
    optionsObject(options, "glance options", KEY_BANK_GLANCE_KEYS);
    const { handles } = options;
    if (handles !== undefined && !(handles instanceof Int32Array)) throw invalidArgument("handles must be an Int32Array");
    const signal = signalOption(options.signal);
    const weights = resolveWeights(options.weights, nq);
    const k = options.k === undefined ? voteK(handles ? handles.length : this.size) : options.k;
    checkInt(k, "k", 1);
    if (options.detail !== undefined) checkInt(options.detail, "detail", 0);
    return abortable("KeyBank.glance", signal, () => this.#glance(queries, weights, k, handles, options.detail, signal));
  }

  #glance(queries: Float32Array, weights: Float32Array, k: number, handles: Int32Array | undefined, detail: number | undefined, signal: AbortSignal | undefined): Promise<KeyBankGlanceResult> {
    const ticket = nextTicket;
    nextTicket = nextTicket >= 0x7fffffff ? 1 : nextTicket + 1;
    const pending = this.#native.glance(queries, weights, k, handles ?? null, ticket, detail);
    // an abort rejects at once; the native glance stops at its next check, its result dropped
    return untilAborted(pending, "KeyBank.glance", signal, () => this.#native.abort(ticket));
  }
}
