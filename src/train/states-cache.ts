/**
 * Backbone states at ℓ* for training, computed once with `model.hiddenStates` and kept on disk
 * (appendix C: "computed once and stored"), so that reruns and resumes skip the forward passes.
 *
 * Layout: `<dir>/<key>/<entry>.f16`, where `<key>` hashes the model fingerprint, the layer and
 * {@link STATES_CACHE_VERSION} (bumped whenever the renders or the encoder change what tokens a skill or
 * task becomes), and `<entry>` hashes the token ids and the span kept. An entry is a 16-byte header
 * (magic, rows, nEmbd) and rows × nEmbd IEEE half floats: f16 halves the disk against f32 and the
 * states' own precision (backbones run in bf16/f16) makes the rounding immaterial.
 *
 * Disk cost: bytes ≈ tokens × nEmbd × 2. A 4,000-skill library at ~2,000 keyed tokens each on a
 * 5,120-wide backbone is 4,000 × 2,000 × 5,120 × 2 ≈ 82 GB; with the 8,192-token cap of appendix C
 * the worst case is 4,000 × 8,192 × 5,120 × 2 ≈ 335 GB. 60 skills of stories260K (nEmbd 64, ≤ 192
 * tokens) are under 1.5 MB.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { invalidArgument } from "../errors.js";
import { writeFileDurable } from "../util/durable-file.js";
import { fromHalf, halfToFloat, toHalf } from "../util/half.js";
import { checkLayer } from "../util/validate.js";
import type { Model } from "../model/Model.js";
import { modelFingerprint } from "../model/fingerprint.js";

/** Bump when renders/encoding change the tokens of a skill or a task (old entries are then ignored). */
export const STATES_CACHE_VERSION = 1;
const MAGIC = 0x31534c47; // "GLS1"

/** The f16 conversions live in util/half.ts; re-exported for callers of this module. */
export { toHalf, fromHalf };

// ---- the cache ---------------------------------------------------------------------------------

/** Counters of a {@link StatesCache}. */
export interface StatesCacheStats {
  hits: number;
  misses: number;
  /** Bytes written this session. */
  bytesWritten: number;
}

/**
 * States of token spans at one layer of one model, cached on disk (or only in this process when no
 * directory is given).
 */
export class StatesCache {
  readonly stats: StatesCacheStats = { hits: 0, misses: 0, bytesWritten: 0 };

  /**
   * Models that compute states (the first is `model`; others are extra instances of the same file,
   * see {@link StatesCache.addWorkers}); each miss goes to the one with the fewest passes in flight.
   */
  readonly #workers: { model: Model; busy: number }[];

  private constructor(
    readonly model: Model,
    readonly layer: number,
    /** The folder holding this model's and layer's entries, or undefined (no disk). */
    readonly dir: string | undefined,
  ) {
    this.#workers = [{ model, busy: 0 }];
  }

  /**
   * Adds instances of the same model (same fingerprint) that compute states beside the first: one
   * llama.cpp context runs one forward pass at a time, and on a GPU a small model's pass is bound by
   * launches and host work rather than by the device, so several contexts keep it busier.
   * @throws GavelError `INVALID_ARGUMENT` when a model is not the cache's model (another fingerprint).
   */
  async addWorkers(models: readonly Model[]): Promise<void> {
    const fp = JSON.stringify(await modelFingerprint(this.model));
    for (const m of models) {
      if (JSON.stringify(await modelFingerprint(m)) !== fp) throw invalidArgument("a states worker must load the same model file as the cache's model");
      this.#workers.push({ model: m, busy: 0 });
    }
  }

  /** How many models compute states. */
  get workers(): number {
    return this.#workers.length;
  }

  /**
   * @param root - cache root (created when missing), or undefined to compute without storing.
   * @throws GavelError `LAYER_OUT_OF_RANGE` for a layer outside the model.
   */
  static async open(root: string | undefined, model: Model, layer: number): Promise<StatesCache> {
    checkLayer(layer, model.info.nLayer);
    if (root === undefined) return new StatesCache(model, layer, undefined);
    if (typeof root !== "string" || root === "") throw invalidArgument("cache dir must be a non-empty string");
    const fp = await modelFingerprint(model);
    const key = createHash("sha256").update(JSON.stringify({ fp, layer, version: STATES_CACHE_VERSION })).digest("hex").slice(0, 24);
    const dir = join(root, key);
    await mkdir(dir, { recursive: true });
    // Informational only (nothing reads it back), and a cache: atomic is enough, no fsync.
    await writeFileDurable(join(dir, "about.json"), JSON.stringify({ model: fp, layer, version: STATES_CACHE_VERSION }, null, 2), { sync: false });
    return new StatesCache(model, layer, dir);
  }

  /** Rows [start, end) × nEmbd of the states of `tokens` at the layer, from disk or one forward pass. */
  async get(tokens: Int32Array, start: number, end: number): Promise<Float32Array> {
    const nEmbd = this.model.info.nEmbd;
    if (!(0 <= start && start <= end && end <= tokens.length)) throw invalidArgument(`span [${start}, ${end}) is outside the ${tokens.length} tokens`);
    const rows = end - start;
    const name = createHash("sha256").update(new Uint8Array(tokens.buffer, tokens.byteOffset, tokens.byteLength)).update(`${start}:${end}`).digest("hex");
    const path = this.dir ? join(this.dir, `${name}.f16`) : undefined;
    if (path) {
      const hit = await readEntry(path, rows, nEmbd);
      if (hit) {
        this.stats.hits++;
        return hit;
      }
    }
    this.stats.misses++;
    const states = rows === 0 ? new Float32Array(0) : (await this.#hiddenStates(tokens)).slice(start * nEmbd, end * nEmbd);
    // Round through f16 even on a miss, so a first run and a cached rerun see the same numbers.
    const half = new Uint16Array(states.length);
    for (let i = 0; i < states.length; i++) {
      half[i] = toHalf(states[i]);
      states[i] = fromHalf(half[i]);
    }
    if (path) {
      const head = new Uint32Array([MAGIC, rows, nEmbd, 0]);
      const buf = Buffer.concat([Buffer.from(head.buffer), Buffer.from(half.buffer)]);
      // A crash leaves at worst a stray temp file; readers only ever see complete entries. No fsync:
      // an entry a power cut loses or tears fails readEntry's size and header check and is recomputed.
      await writeFileDurable(path, buf, { sync: false });
      this.stats.bytesWritten += buf.length;
    }
    return states;
  }

  /** The layer's states of `tokens`, on the least busy worker. */
  async #hiddenStates(tokens: Int32Array): Promise<Float32Array> {
    const w = this.#workers.reduce((a, b) => (b.busy < a.busy ? b : a));
    w.busy++;
    try {
      return await w.model.hiddenStates(tokens, this.layer);
    } finally {
      w.busy--;
    }
  }
}

async function readEntry(path: string, rows: number, nEmbd: number): Promise<Float32Array | undefined> {
  let buf: Buffer;
  try {
    buf = await readFile(path);
  } catch {
    return undefined;
  }
  if (buf.length !== 16 + rows * nEmbd * 2 || buf.readUInt32LE(0) !== MAGIC || buf.readUInt32LE(4) !== rows || buf.readUInt32LE(8) !== nEmbd) {
    return undefined; // damaged or foreign: recompute (and overwrite)
  }
  // The payload as f16 words (little-endian, as written; copied when the buffer is not 2-aligned)
  const n = rows * nEmbd;
  const words = buf.byteOffset % 2 === 0 ? new Uint16Array(buf.buffer, buf.byteOffset + 16, n) : new Uint16Array(buf.buffer.slice(buf.byteOffset + 16, buf.byteOffset + 16 + 2 * n));
  return halfToFloat(words);
}
