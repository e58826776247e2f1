/**
 * Backbone states at ℓ* of token spans, computed once with `model.hiddenStates` and kept on disk
 * (appendix C: "computed once and stored"): the trainer's states pass (train/pipeline-states.ts) fills
 * it, so that reruns and resumes skip the forward passes, and `gavel install --states-cache` reads it
 * back (route/install.ts), so that installing the library just trained on skips them too. It lives in
 * model/ (not train/) because both the route stage and the trainer use it.
 *
 * Layout: `<dir>/<key>/w-<weights>/<entry>.f16`, where `<key>` hashes the model fingerprint, the layer
 * and {@link STATES_CACHE_VERSION} (bumped whenever the renders or the encoder change what tokens a
 * skill or task becomes), `<weights>` is the sha256 of the model file's bytes, and `<entry>` hashes
 * the token ids and the span kept. The fingerprint alone (shapes + vocabulary) does not tell two
 * fine-tunes of one base apart, so the states sit under the weights' hash: an entry is found only for
 * the same tokens, span and layer of the same model file. The trainer's prepared inputs (masks, BM25
 * lists: train/pipeline-states.ts) depend on the tokenizer only and stay in `<dir>/<key>/`, where a
 * CPU machine's `--prepare-only` puts them for the GPU machine.
 *
 * An entry is a 16-byte header (magic, rows, nEmbd) and rows × nEmbd IEEE half floats: f16 halves the
 * disk against f32 and the states' own precision (backbones run in bf16/f16) makes the rounding
 * immaterial.
 *
 * Disk cost: bytes ≈ tokens × nEmbd × 2. A 4,000-skill library at ~2,000 keyed tokens each on a
 * 5,120-wide backbone is 4,000 × 2,000 × 5,120 × 2 ≈ 82 GB; with the 8,192-token cap of appendix C
 * the worst case is 4,000 × 8,192 × 5,120 × 2 ≈ 335 GB. 60 skills of stories260K (nEmbd 64, ≤ 192
 * tokens) are under 1.5 MB.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, stat } from "node:fs/promises";
import { readCacheFile } from "../util/framed-file.js";
import { join } from "node:path";
import { GavelError, invalidArgument, clip, clipMessage } from "../errors.js";
import { writeFileDurable } from "../util/durable-file.js";
import { fromHalf, toHalf } from "../util/half.js";
import { loadBinding } from "../native/binding.js";
import { checkLayer } from "../util/validate.js";
import type { Model } from "./Model.js";
import { modelFingerprint } from "./fingerprint.js";

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

/** How {@link StatesCache.open} opens a cache folder. */
export interface StatesCacheOpenOptions {
  /**
   * Only read entries (`gavel install --states-cache`): nothing is created or written, the root must
   * be an existing folder, and {@link StatesCache.get} computes a miss without storing it.
   */
  readOnly?: boolean;
}

/**
 * States of token spans at one layer of one model file, cached on disk (or only in this process when
 * no directory is given).
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
    /** The folder of this model's fingerprint and layer (prepared inputs live here), or undefined (no disk). */
    readonly dir: string | undefined,
    /** The folder of this model file's entries (under `dir`), or undefined (no disk). */
    readonly statesDir: string | undefined,
    /** Whether entries are only read (see {@link StatesCacheOpenOptions.readOnly}). */
    readonly readOnly: boolean,
    /** Whether `statesDir` existed when the cache was opened (false: every lookup will miss). */
    readonly present: boolean,
  ) {
    this.#workers = [{ model, busy: 0 }];
  }

  /**
   * Adds instances of the same model file that compute states beside the first: one llama.cpp context
   * runs one forward pass at a time, and on a GPU a small model's pass is bound by launches and host
   * work rather than by the device, so several contexts keep it busier.
   * @throws GavelError `INVALID_ARGUMENT` when a model is not the cache's model (another fingerprint or other weights).
   */
  async addWorkers(models: readonly Model[]): Promise<void> {
    const fp = JSON.stringify(await modelFingerprint(this.model));
    const weights = await modelFileHash(this.model);
    for (const m of models) {
      if (JSON.stringify(await modelFingerprint(m)) !== fp || (await modelFileHash(m)) !== weights) throw invalidArgument("a states worker must load the same model file as the cache's model");
      this.#workers.push({ model: m, busy: 0 });
    }
  }

  /** How many models compute states. */
  get workers(): number {
    return this.#workers.length;
  }

  /**
   * @param root - cache root (created when missing unless read-only), or undefined to compute without storing.
   * @throws GavelError `LAYER_OUT_OF_RANGE` for a layer outside the model; `INVALID_ARGUMENT` for a
   * root that is not a non-empty string (or, read-only, not a folder); `FILE_NOT_FOUND` for a
   * read-only root that does not exist.
   */
  static async open(root: string | undefined, model: Model, layer: number, options: StatesCacheOpenOptions = {}): Promise<StatesCache> {
    checkLayer(layer, model.info.nLayer);
    const readOnly = options.readOnly === true;
    if (root === undefined) return new StatesCache(model, layer, undefined, undefined, readOnly, false);
    if (typeof root !== "string" || root === "") throw invalidArgument("cache dir must be a non-empty string");
    if (readOnly) await checkFolder(root);
    const fp = await modelFingerprint(model);
    const key = createHash("sha256").update(JSON.stringify({ fp, layer, version: STATES_CACHE_VERSION })).digest("hex").slice(0, 24);
    const dir = join(root, key);
    const weights = await modelFileHash(model);
    const statesDir = join(dir, `w-${weights.slice(0, 24)}`);
    const present = await isFolder(statesDir);
    if (readOnly) return new StatesCache(model, layer, dir, statesDir, true, present);
    await mkdir(dir, { recursive: true });
    // Informational only (nothing reads it back), and a cache: atomic is enough, no fsync.
    await writeFileDurable(join(dir, "about.json"), JSON.stringify({ model: fp, layer, version: STATES_CACHE_VERSION }, null, 2), { sync: false });
    return new StatesCache(model, layer, dir, statesDir, false, present);
  }

  /** Creates the states folder before the first entry is written (a prepare-only pass writes none). */
  #made: Promise<void> | undefined;
  #makeStatesDir(statesDir: string): Promise<void> {
    this.#made ??= (async () => {
      await mkdir(statesDir, { recursive: true });
      await writeFileDurable(join(statesDir, "about.json"), JSON.stringify({ path: this.model.path, sha256: await modelFileHash(this.model) }, null, 2), { sync: false });
    })();
    return this.#made;
  }

  /** The entry's file: it names the token ids and the span. */
  #entryPath(tokens: Int32Array, start: number, end: number): string | undefined {
    if (!(0 <= start && start <= end && end <= tokens.length)) throw invalidArgument(`span [${start}, ${end}) is outside the ${tokens.length} tokens`);
    if (!this.statesDir) return undefined;
    const name = createHash("sha256").update(new Uint8Array(tokens.buffer, tokens.byteOffset, tokens.byteLength)).update(`${start}:${end}`).digest("hex");
    return join(this.statesDir, `${name}.f16`);
  }

  /**
   * Rows [start, end) × nEmbd of the states of `tokens` at the layer when an entry holds them (a
   * hit), else undefined (a miss; nothing is computed). Counted in {@link StatesCache.stats}.
   */
  async lookup(tokens: Int32Array, start: number, end: number): Promise<Float32Array | undefined> {
    const path = this.#entryPath(tokens, start, end);
    const hit = path ? await readEntry(path, end - start, this.model.info.nEmbd) : undefined;
    if (hit) this.stats.hits++;
    else this.stats.misses++;
    return hit;
  }

  /**
   * Rows [start, end) × nEmbd of the states of `tokens` at the layer, from disk or one forward pass
   * (rounded through f16 either way; stored unless the cache is read-only).
   */
  async get(tokens: Int32Array, start: number, end: number): Promise<Float32Array> {
    const hit = await this.lookup(tokens, start, end);
    if (hit) return hit;
    const nEmbd = this.model.info.nEmbd;
    const rows = end - start;
    const states = rows === 0 ? new Float32Array(0) : (await this.#hiddenStates(tokens)).slice(start * nEmbd, end * nEmbd);
    // Round through f16 even on a miss, so a first run and a cached rerun see the same numbers.
    // Natively (F16C, 0.2 ns a value): the per-value loop here took 8–15 ns a value, 3–6 ms a skill
    // of gavel-large's 491 × 768 states, i.e. 90–175 s of the JS thread's time in a 30.5K-skill
    // states pass (bench/half.bench.ts).
    const half = new Uint16Array(states.length);
    loadBinding().roundToHalf(states, half);
    const path = this.readOnly ? undefined : this.#entryPath(tokens, start, end);
    if (path) {
      await this.#makeStatesDir(this.statesDir!);
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
  // bounded, never a blocking read: anything but a regular file of the right size is recomputed
  const buf = await readCacheFile(path, 16 + rows * nEmbd * 2).catch(() => null);
  if (buf === null || typeof buf === "string") return undefined;
  if (buf.length !== 16 + rows * nEmbd * 2 || buf.readUInt32LE(0) !== MAGIC || buf.readUInt32LE(4) !== rows || buf.readUInt32LE(8) !== nEmbd) {
    return undefined; // damaged or foreign: recompute (and overwrite)
  }
  // The payload as f16 words (little-endian, as written; copied when the buffer is not 2-aligned)
  const n = rows * nEmbd;
  const words = buf.byteOffset % 2 === 0 ? new Uint16Array(buf.buffer, buf.byteOffset + 16, n) : new Uint16Array(buf.buffer.slice(buf.byteOffset + 16, buf.byteOffset + 16 + 2 * n));
  const out = new Float32Array(n);
  loadBinding().halfToFloat(words, out);
  return out;
}

async function isFolder(path: string): Promise<boolean> {
  return stat(path).then((st) => st.isDirectory(), () => false);
}

/** A read-only cache's root must exist and be a folder: a mistyped path is an error, not a silent miss. */
async function checkFolder(root: string): Promise<void> {
  let st;
  try {
    st = await stat(root);
  } catch {
    throw new GavelError(`states cache ${clip(root)} does not exist`, "FILE_NOT_FOUND");
  }
  if (!st.isDirectory()) throw invalidArgument(`states cache ${clip(root)} is not a folder`);
}

// The model file's sha256, per path, size and mtime (a file replaced in place is hashed afresh).
const weightHashes = new Map<string, Promise<string>>();

/**
 * sha256 (hex) of the model file's bytes: what tells two fine-tunes of one base apart, which share
 * the fingerprint. Streamed (~1 s a GB), once per file in a process.
 */
export async function modelFileHash(model: Model): Promise<string> {
  const st = await stat(model.path).catch((err: unknown) => {
    throw new GavelError(`cannot read the model file ${clip(model.path)} to key its states: ${clipMessage(err)}`, "FILE_NOT_FOUND", { cause: err });
  });
  const key = `${model.path}\0${st.size}\0${st.mtimeMs}`;
  let p = weightHashes.get(key);
  if (!p) {
    p = new Promise<string>((resolve, reject) => {
      const h = createHash("sha256");
      createReadStream(model.path)
        .on("data", (chunk) => h.update(chunk))
        .on("error", reject)
        .on("end", () => resolve(h.digest("hex")));
    });
    weightHashes.set(key, p);
    p.catch(() => weightHashes.delete(key)); // a failed read must not poison the memo
  }
  return p;
}
