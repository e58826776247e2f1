/**
 * The glance index: a sublinear CPU glance with an exactness knob, in the manner of late-interaction
 * retrieval's centroid pruning. Spherical k-means centroids over every key of a {@link KeyBank}, each
 * skill's distinct centroid codes, and a staged search (native/src/index) that picks the few skills
 * on which the exact glance then runs:
 *
 * 1. the task rows against the centroids; each row's `nprobe` best centroids; the skills holding a
 *    key there are the stage-1 candidates;
 * 2. when they exceed `maxCandidates`, each one's centroid interaction
 *    `ĝ(s) = Σ_i w_i · max_{c ∈ codes(s)} ⟨q_i, c⟩⁺`, a row crediting only the centroids it probed,
 *    keeps the `maxCandidates` best;
 * 3. the exact max-sim and vote ({@link KeyBank.glance}) over the survivors, with the vote size of
 *    the whole library.
 *
 * At full exactness (`nprobe: "all"`, `maxCandidates: 0`) every skill survives and the result is
 * the exact glance's, bit for bit. The exact glance stays the reference and the CPU twin of the
 * device kernel; the index only chooses which skills it reads.
 *
 * The index is derived from the bank: it follows it (skills added since are assigned to the existing
 * centroids, removed ones dropped) at every {@link GlanceIndex.sync} and candidate search, and its
 * file ({@link saveGlanceIndex}) is a cache written whole (temp file, rename): a missing, corrupt or
 * stale file is rebuilt from the bank, with the reason as a typed outcome ({@link openGlanceIndex}).
 *
 * @module
 */
import { GavelError, invalidArgument } from "../errors.js";
import { checkFloat32, checkInt, checkRows, resolveWeights } from "../kernels/args.js";
import { voteK } from "../kernels/kernels.js";
import { functionOption, optionsObject } from "../util/validate.js";
import { loadBinding, type NativeBank } from "../native/binding.js";
import { readCacheFile, saveCache, writeFramedFile } from "../util/framed-file.js";
import { MAGIC, parseIndexFile } from "./glance-index-parse.js";
import type { KeyBank, KeyBankGlanceOptions, KeyBankGlanceResult } from "./key-bank.js";

/** How an index is trained (defaults in parentheses; each an integer up to 2^31 − 1: centroids and sample ≥ 1, iters and seed ≥ 0). Deterministic for a seed and a bank. */
export interface GlanceIndexTrainOptions {
  /** Centroids (the power of two nearest √keys, within 1 … 4096). */
  centroids?: number;
  /** Lloyd iterations (8). */
  iters?: number;
  /** Key rows sampled for training (min(keys, 32 × centroids)). */
  sample?: number;
  /** Seed of the sample (1). */
  seed?: number;
}

/** The exactness knob of a pruned glance. */
export interface GlanceIndexKnob {
  /** Centroids probed per task row: an integer ≥ 1, or `"all"` (default {@link DEFAULT_NPROBE}). */
  nprobe?: number | "all";
  /** Skills the exact glance reads at most: an integer ≥ 1, or 0 for no cap (default {@link defaultMaxCandidates} of the bank's size). */
  maxCandidates?: number;
}

/** The knob at full exactness: every skill is a candidate, and the glance is the exact one. */
export const FULL_EXACTNESS: Readonly<Required<GlanceIndexKnob>> = Object.freeze({ nprobe: "all", maxCandidates: 0 });
/** Default centroids probed per task row (docs/BENCHMARKS.md, "The glance index", says why). */
export const DEFAULT_NPROBE = 16;
/**
 * The default cap on the skills the exact glance reads, for a library of `skills`: 1% of it, within
 * 128 … 1024 (top-20 agreement with the exact glance 0.99 at 10K and 1.0 at 100K skills on the
 * synthetic bench).
 */
export function defaultMaxCandidates(skills: number): number {
  return Math.min(1024, Math.max(128, Math.ceil(skills / 100)));
}

/** What a candidate search did. */
export interface GlanceIndexSearch {
  /** The surviving handles, ascending (the bank's glance order). */
  handles: Int32Array;
  /** Distinct centroids probed by some task row. */
  probed: number;
  /** Skills after stage 1 (probing). */
  stage1: number;
  /** Skills after stage 2 (the cap): handles.length. */
  survivors: number;
  probeMs: number;
  stage1Ms: number;
  stage2Ms: number;
  /** The sync with the bank that ran first: skills assigned and dropped. */
  sync: GlanceIndexSyncStats;
}

/** What bringing an index to the bank's current snapshot did: skills assigned and dropped, key rows assigned. */
export interface GlanceIndexSyncStats {
  added: number;
  removed: number;
  assignedRows: number;
}

/** The state of an index ({@link GlanceIndex.stats}). */
export interface GlanceIndexStats {
  dim: number;
  centroids: number;
  skills: number;
  /** Key rows of the skills indexed. */
  rows: number;
  /** Key rows of the bank the centroids were trained on. */
  trainedRows: number;
  /** Mean inner product of a trained key with its centroid, at training. */
  trainMeanSim: number;
  /** The same over every key indexed now (NaN without keys): drift shows as a drop. */
  meanSim: number;
  /** Native memory held (centroids, codes, lists), in bytes. */
  bytes: number;
}

interface NativeGlanceIndex {
  train(bank: NativeBank, options: GlanceIndexTrainOptions): Promise<GlanceIndexSyncStats>;
  sync(bank: NativeBank): Promise<GlanceIndexSyncStats>;
  candidates(bank: NativeBank, queries: Float32Array, weights: Float32Array, nprobe: number, maxCandidates: number): Promise<GlanceIndexSearch>;
  reset(centroids: Float32Array, trainedRows: number, trainMeanSim: number): void;
  put(handle: number, codes: Int32Array, rows: number, simSum: number): void;
  exportCodes(): { centroids: Float32Array; handles: Int32Array; offsets: Int32Array; codes: Int32Array; rows: Int32Array; simSums: Float64Array };
  stats(): GlanceIndexStats;
}

interface IndexBinding {
  NativeGlanceIndex?: new (dim: number) => NativeGlanceIndex;
  ivfKMeans?: (x: Float32Array, dim: number, c: number, iters: number) => Promise<{ centroids: Float32Array; codes: Int32Array; scores: Float32Array }>;
  ivfSampleRows?: (n: number, count: number, seed: number) => Int32Array;
}

function indexBinding(): Required<IndexBinding> {
  const b = loadBinding() as unknown as IndexBinding;
  if (!b.NativeGlanceIndex || !b.ivfKMeans || !b.ivfSampleRows) {
    throw new GavelError("the native addon predates the glance index: rebuild it (npm run build:native)", "NATIVE_UNAVAILABLE");
  }
  return b as Required<IndexBinding>;
}

/** Retrain when the bank holds this many times the keys the centroids were trained on. */
export const RETRAIN_GROWTH = 4;
/** Retrain when the mean key-to-centroid similarity fell this far below the trained one. */
export const RETRAIN_DRIFT = 0.05;

const TRAIN_KEYS: Readonly<Record<keyof GlanceIndexTrainOptions, true>> = { centroids: true, iters: true, sample: true, seed: true };

/**
 * A glance index over one {@link KeyBank} (same dim). Holds centroids and codes in native memory
 * (a few bytes per key); never the keys, which it reads from the bank's snapshot when it assigns.
 * Its jobs (train, sync, candidates) run on worker threads under one native lock, which the
 * synchronous reads ({@link stats}, {@link exportCodes}: O(centroids)) take on the JavaScript thread,
 * waiting there for a job under way (a train: seconds). {@link statsAsync} and {@link exportAsync}
 * read once no job is in flight (each job still starts at its call): they never wait on the thread.
 */
export class GlanceIndex {
  readonly dim: number;
  readonly #native: NativeGlanceIndex;
  #jobs = 0; // native jobs in flight; #settled settles once those started so far have
  #settled: Promise<unknown> = Promise.resolve();

  /** Counts a native job while it runs. */
  #job<T>(start: () => Promise<T>): Promise<T> {
    const p = start();
    this.#jobs++;
    const done = p.finally(() => this.#jobs--);
    this.#settled = Promise.all([this.#settled, done.catch(() => undefined)]);
    return done;
  }

  /** `read()` once no job is in flight: it then takes the native lock without waiting. */
  async #whenIdle<T>(read: () => T): Promise<T> {
    while (this.#jobs > 0) await this.#settled;
    return read();
  }

  private constructor(dim: number) {
    this.dim = dim;
    this.#native = new (indexBinding().NativeGlanceIndex)(dim);
  }

  /**
   * Trains centroids on a sample of `bank`'s keys and assigns every key (seconds at 100K skills:
   * an install-time or explicit rebuild, on worker threads).
   *
   * @throws GavelError `INVALID_ARGUMENT` when the bank holds no key or an option is out of range;
   *   `NATIVE_UNAVAILABLE` with an addon older than the index.
   */
  static async build(bank: KeyBank, options: GlanceIndexTrainOptions = {}): Promise<GlanceIndex> {
    const index = new GlanceIndex(bank.dim);
    await index.train(bank, options);
    return index;
  }

  /** Retrains in place (new centroids, every skill assigned again). */
  async train(bank: KeyBank, options: GlanceIndexTrainOptions = {}): Promise<GlanceIndexSyncStats> {
    this.#checkBank(bank);
    optionsObject(options, "GlanceIndex.train options", TRAIN_KEYS);
    for (const key of ["centroids", "iters", "sample", "seed"] as const) {
      const v = options[key];
      if (v !== undefined) checkInt(v, key, key === "centroids" || key === "sample" ? 1 : 0);
    }
    return this.#job(() => this.#native.train(bank._native, options));
  }

  /**
   * Follows the bank: skills added since the last sync are assigned to the current centroids,
   * removed ones dropped. Candidate searches sync first by themselves.
   */
  async sync(bank: KeyBank): Promise<GlanceIndexSyncStats> {
    this.#checkBank(bank);
    return this.#job(() => this.#native.sync(bank._native));
  }

  /**
   * True when the centroids no longer fit the bank: it holds {@link RETRAIN_GROWTH} times the keys
   * they were trained on, or the keys sit {@link RETRAIN_DRIFT} further from their centroids on
   * average than at training. Pruning stays correct either way (the exact glance decides); only
   * its agreement with the whole-bank glance degrades, which a {@link GlanceIndex.train} restores.
   */
  needsRetrain(s: GlanceIndexStats = this.stats()): boolean {
    if (s.rows > RETRAIN_GROWTH * Math.max(1, s.trainedRows)) return true;
    return s.rows > 0 && s.trainMeanSim - s.meanSim > RETRAIN_DRIFT;
  }

  /** The index's size and drift figures; waits, on this thread, for a job under way ({@link statsAsync} never does). */
  stats(): GlanceIndexStats {
    return this.#native.stats();
  }

  /** {@link stats} once no job is in flight: never waits on the JavaScript thread. */
  statsAsync(): Promise<GlanceIndexStats> {
    return this.#whenIdle(() => this.#native.stats());
  }

  /**
   * The skills a pruned glance reads (stages 1 and 2 above), after syncing with `bank`.
   *
   * @param queries - nq × dim task rows, finite.
   * @throws GavelError `INVALID_ARGUMENT` (as a rejection) on a bad argument or another bank's dim.
   */
  async candidates(bank: KeyBank, queries: Float32Array, options: GlanceIndexKnob & { weights?: Float32Array } = {}): Promise<GlanceIndexSearch> {
    this.#checkBank(bank);
    checkFloat32(queries, "queries");
    const nq = checkRows(queries, this.dim, "queries");
    if (nq === 0) throw invalidArgument("queries hold no token");
    const weights = resolveWeights(options.weights, nq);
    const { nprobe, maxCandidates } = resolveKnob(options, bank.size);
    return this.#job(() => this.#native.candidates(bank._native, queries, weights, nprobe, maxCandidates));
  }

  /** The centroids and every indexed skill's codes, by handle (what {@link saveGlanceIndex} writes); waits, as {@link stats}, for a job under way. */
  exportCodes(): ReturnType<NativeGlanceIndex["exportCodes"]> {
    return this.#native.exportCodes();
  }

  /** {@link exportCodes} and {@link stats} of one moment, once no job is in flight. */
  exportAsync(): Promise<{ codes: ReturnType<NativeGlanceIndex["exportCodes"]>; stats: GlanceIndexStats }> {
    return this.#whenIdle(() => ({ codes: this.#native.exportCodes(), stats: this.#native.stats() }));
  }

  #checkBank(bank: KeyBank): void {
    if (bank.dim !== this.dim) throw invalidArgument(`the bank's dim (${bank.dim}) differs from the index's (${this.dim})`);
  }

  /** @internal An index with these centroids and no skill (the file loader's). */
  static _fromCentroids(dim: number, centroids: Float32Array, trainedRows: number, trainMeanSim: number): GlanceIndex {
    const index = new GlanceIndex(dim);
    index.#native.reset(centroids, trainedRows, trainMeanSim);
    return index;
  }

  /** @internal One skill's codes, as a file holds them. */
  _put(handle: number, codes: Int32Array, rows: number, simSum: number): void {
    this.#native.put(handle, codes, rows, simSum);
  }
}

function resolveKnob(knob: GlanceIndexKnob, skills: number): { nprobe: number; maxCandidates: number } {
  const np = knob.nprobe === undefined ? DEFAULT_NPROBE : knob.nprobe; // null is refused, not a default
  const nprobe = np === "all" ? 0x7fffffff : np;
  checkInt(nprobe, "nprobe", 1);
  const maxCandidates = knob.maxCandidates === undefined ? defaultMaxCandidates(skills) : knob.maxCandidates;
  checkInt(maxCandidates, "maxCandidates", 0);
  return { nprobe, maxCandidates };
}

/** Options of {@link glancePruned}: a bank glance's (without `handles`) plus the knob. */
export interface PrunedGlanceOptions extends Omit<KeyBankGlanceOptions, "handles">, GlanceIndexKnob {
  /** Only skills this keeps take part (the router's excluded sources and flags). */
  keep?: (handle: number) => boolean;
}

const PRUNED_KEYS: Readonly<Record<keyof PrunedGlanceOptions, true>> = { signal: true, detail: true, weights: true, k: true, nprobe: true, maxCandidates: true, keep: true };

/** A pruned glance's result: the exact glance over the candidates, and what the search did. */
export interface PrunedGlanceResult extends KeyBankGlanceResult {
  search: GlanceIndexSearch;
}

/**
 * The glance through the index: the exact glance ({@link KeyBank.glance}) over the skills the
 * index picks, with the vote size of every skill taking part (`k` defaults to voteK of them, as
 * the whole-bank glance's). A skill left out takes no vote: it is absent from `handles`, as a skill
 * with g = 0 would rank. At {@link FULL_EXACTNESS} (and no `keep`) the result equals
 * `bank.glance(queries, options)` bit for bit.
 *
 * @throws GavelError (as a rejection) as {@link KeyBank.glance}, and `INVALID_ARGUMENT` on a bad knob.
 */
export async function glancePruned(bank: KeyBank, index: GlanceIndex, queries: Float32Array, options: PrunedGlanceOptions = {}): Promise<PrunedGlanceResult> {
  optionsObject(options, "glancePruned options", PRUNED_KEYS);
  functionOption(options.keep, "keep");
  const { keep, nprobe, maxCandidates, ...glanceOptions } = options;
  let k = options.k;
  if (k === undefined) k = voteK(keep ? bank.handles().filter((h) => keep(h)).length : bank.size);
  const search = await index.candidates(bank, queries, { weights: options.weights, nprobe, maxCandidates });
  const handles = keep ? search.handles.filter((h) => keep(h)) : search.handles;
  let res: KeyBankGlanceResult;
  try {
    res = await bank.glance(queries, { ...glanceOptions, k, handles });
  } catch (err) {
    // The bank may have dropped a skill while the search ran: glance those it still holds.
    if (!(err instanceof GavelError) || err.code !== "INVALID_ARGUMENT") throw err;
    const held = new Set(bank.handles());
    if (handles.every((h) => held.has(h))) throw err;
    res = await bank.glance(queries, { ...glanceOptions, k, handles: handles.filter((h) => held.has(h)) });
  }
  return { ...res, search };
}

// ---- the index file ------------------------------------------------------------------------------

/** One indexed skill as the file names it: its id and content hash in the bank. */
export interface IndexedSkill {
  id: string;
  contentHash: string;
}

/**
 * Writes the index to `path` whole or not at all (temp file, fsync, rename): the centroids and
 * every skill's codes under its id and content hash (`skillOf(handle)`; skills it returns nothing
 * for are left out), then a SHA-256 of everything before it. A cache: the bank stays the truth.
 */
export async function saveGlanceIndex(path: string, index: GlanceIndex, skillOf: (handle: number) => IndexedSkill | undefined): Promise<void> {
  const { codes: e, stats: s } = await index.exportAsync();
  const ids: string[] = [], hashes: string[] = [];
  const offsets: number[] = [0], codes: number[] = [], rows: number[] = [], sims: number[] = [];
  for (let i = 0; i < e.handles.length; i++) {
    const skill = skillOf(e.handles[i]);
    if (!skill) continue;
    ids.push(skill.id);
    hashes.push(skill.contentHash);
    for (let j = e.offsets[i]; j < e.offsets[i + 1]; j++) codes.push(e.codes[j]);
    offsets.push(codes.length);
    rows.push(e.rows[i]);
    sims.push(e.simSums[i]);
  }
  const header = { version: 1, dim: index.dim, centroids: s.centroids, trainedRows: s.trainedRows, trainMeanSim: s.trainMeanSim, skills: ids.length, codes: codes.length, ids, hashes };
  await writeFramedFile(path, MAGIC, header, [e.centroids, Int32Array.from(offsets), Int32Array.from(codes), Int32Array.from(rows), Float64Array.from(sims)]);
}

/** Why {@link openGlanceIndex} rebuilt the index rather than loading it. */
export type GlanceIndexOpenOutcome =
  | { kind: "loaded"; kept: number; assigned: number; dropped: number }
  | { kind: "rebuilt"; reason: "missing" | "corrupt" | "stale"; detail: string };

/**
 * The index for `bank` from the file at `path`, or rebuilt from the bank (and written back) when the
 * file is missing, corrupt (wrong magic, truncated, checksum mismatch, malformed header, a row count
 * below a skill's codes) or stale (another dim, row counts that do not add up to the bank's keys, or
 * centroids the bank outgrew: {@link GlanceIndex.needsRetrain}). A loaded file's
 * skills are matched to the bank by id and content hash (`handleOf`); skills it lacks or holds
 * under another content are assigned anew, skills it holds that the bank does not are dropped.
 * `save: false` writes nothing back (a read-only reader of the bank).
 *
 * @throws GavelError `INVALID_ARGUMENT` when the bank holds no key (nothing to train on); file
 *   system errors other than a missing file.
 */
export async function openGlanceIndex(
  path: string,
  bank: KeyBank,
  handleOf: (skill: IndexedSkill) => number | undefined,
  skillOf: (handle: number) => IndexedSkill | undefined,
  options: GlanceIndexTrainOptions = {},
  { save = true }: { save?: boolean } = {},
): Promise<{ index: GlanceIndex; outcome: GlanceIndexOpenOutcome }> {
  const rebuild = async (reason: "missing" | "corrupt" | "stale", detail: string) => {
    const index = await GlanceIndex.build(bank, options);
    if (save) await saveCache(path, () => saveGlanceIndex(path, index, skillOf));
    return { index, outcome: { kind: "rebuilt", reason, detail } as const };
  };
  // bounded, and never a blocking read (a FIFO or a device in its place is rebuilt over)
  const bytes = await readCacheFile(path);
  if (bytes === null) return rebuild("missing", `${path} does not exist`);
  if (typeof bytes === "string") return rebuild("corrupt", bytes);
  const parsed = parseIndexFile(bytes);
  if (typeof parsed === "string") return rebuild("corrupt", parsed);
  if (parsed.dim !== bank.dim) return rebuild("stale", `the file's dim (${parsed.dim}) differs from the bank's (${bank.dim})`);
  const index = GlanceIndex._fromCentroids(bank.dim, parsed.centroids, parsed.trainedRows, parsed.trainMeanSim);
  const held = new Set(bank.handles());
  let kept = 0;
  for (let i = 0; i < parsed.ids.length; i++) {
    const h = handleOf({ id: parsed.ids[i], contentHash: parsed.hashes[i] });
    if (h === undefined || !held.has(h)) continue;
    index._put(h, parsed.codes.subarray(parsed.offsets[i], parsed.offsets[i + 1]), parsed.rows[i], parsed.sims[i]);
    kept++;
  }
  const sync = await index.sync(bank);
  const stats = await index.statsAsync();
  // every skill kept holds the keys of the bank's skill of that id and content: their counts agree
  if (stats.rows !== bank.keys) return rebuild("stale", `the file's row counts (${stats.rows} in all, once synced) differ from the bank's ${bank.keys} keys`);
  if (index.needsRetrain(stats)) return rebuild("stale", "the bank outgrew the centroids (growth or drift past the retrain bounds)");
  if (save && (sync.added > 0 || parsed.ids.length !== kept)) await saveGlanceIndex(path, index, skillOf);
  return { index, outcome: { kind: "loaded", kept, assigned: sync.added, dropped: parsed.ids.length - kept } };
}

/** @internal The training steps alone, for tests against a reference: spherical k-means and the sample. */
export const _ivf = {
  kmeans: (x: Float32Array, dim: number, c: number, iters: number) => indexBinding().ivfKMeans(x, dim, c, iters),
  sampleRows: (n: number, count: number, seed: number) => indexBinding().ivfSampleRows(n, count, seed),
};
