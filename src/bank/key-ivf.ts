/**
 * The key IVF glance (native/src/kivf): an inverted file over a {@link KeyBank}'s token keys,
 * searched per task row, that approximates the exact glance while reading a few percent of the keys.
 *
 * - **Index.** Spherical k-means centroids trained on a sample of the keys (the glance index's
 *   steps: `ivfSampleRows`, `ivfKMeans`); every key is assigned to its nearest centroid, and list c
 *   holds the ids of its keys (int32). The keys themselves stay in the bank's own storage (float32
 *   or f16) and are read in place, so the index costs about 8 bytes a key plus the centroids.
 *   From 1,024 centroids the k-means is two-level: ≈ √C coarse groups, each holding its share of
 *   the fine centroids.
 * - **Search.** Each task row scores the centroids, probes its `nprobe` best lists, scores every
 *   key found there with the exact glance's own max-sim kernel (so each score is the very float32
 *   the exact glance computes), keeps its top k skills by (max-sim desc, column asc) as the native
 *   vote does, and credits them w_i · m as the exact glance does. Opt-in on a two-level index
 *   (`probeGroups`): a row scores the coarse groups first, then only the fine centroids of its best
 *   groups, several times fewer products, but it misses lists the full scoring finds. With
 *   `probeSpread: "weight"` (the route's) `nprobe` is the rows' mean, each row's share following its
 *   weight in the vote.
 * - **Exactness knob.** `nprobe: "all"` (or ≥ the centroids) probes every list: the result is the
 *   exact glance's g, bit for bit. Below it, a row whose true top-k skill has its best key outside
 *   the probed lists credits another skill instead.
 * - **List bound** (`prune`, opt-in). Each list keeps an upper bound on its keys' distance to its
 *   centroid; after its 8 best lists, a row skips every list whose keys cannot reach its k-th best
 *   so far. Nothing changes but the pairs scored, so `nprobe: "all"` with it is still the exact
 *   glance, bit for bit.
 * - **Int8 list codes** (`i8`). Each list also holds its keys in int8 and each key's residual in 4
 *   bits (two scales per key; 0.40× the float32 keys' memory), coded when a glance first scans a list
 *   and extended as lists grow. A row takes a floor under its k-th best from its best lists (scored
 *   in int8, then its 2k best skills' best keys refined by their residuals, at a proven lower bound),
 *   scores every probed list in int8, refines the keys whose proven error bound (the exact glance
 *   prefilter's, `GAVEL_GLANCE_EXACT8`) reaches its k-th best so far, and rescans in float32 only those
 *   whose refined bound still does. Nothing changes but the work, bit for bit; with `prune` the list
 *   bound first skips whole lists.
 * - **Following the bank.** Every glance first syncs: skills added since are assigned to the
 *   current centroids, removed ones dropped. Centroids change only at {@link KeyIvf.train}; an
 *   install retrains when the bank outgrew them ({@link KeyIvf.needsRetrain}) or a training would
 *   now make about twice as many ({@link KeyIvf.coarserThanDefault}: with the default probe capped at
 *   1,024 lists, a finer index reads fewer keys for the same agreement).
 *
 * @module
 */
import { GavelError, invalidArgument } from "../errors.js";
import { checkFloat32, checkInt, checkRows, resolveWeights } from "../kernels/args.js";
import { voteK } from "../kernels/kernels.js";
import { loadBinding, type NativeBank } from "../native/binding.js";
import type { KeyBank } from "./key-bank.js";
import { valueText } from "../util/validate.js";

/** Training options of a {@link KeyIvf}. */
export interface KeyIvfTrainOptions {
  /** Centroids (lists); default: the power of two nearest 8·√keys, within [16, 65536], ≤ keys / 8. */
  centroids?: number;
  /** Lloyd steps of the k-means (default 6). */
  iters?: number;
  /** Key rows sampled for training (default 16 per centroid, at most every key). */
  sample?: number;
  /** Sample seed (default 1). */
  seed?: number;
  /**
   * Coarse groups of the two-level k-means and assignment (default: flat below 1,024 centroids,
   * else ≈ √centroids; 1: flat). Two-level assigns a key to the best centroid of its 4 best groups.
   */
  groups?: number;
}

/** What a train or sync did. */
export interface KeyIvfSyncStats {
  added: number;
  removed: number;
  assignedRows: number;
  ms: number;
}

/** A key IVF glance: g over the indexed skills (columns follow `handles`) and its costs. */
export interface KeyIvfGlance {
  g: Float32Array;
  handles: Int32Array;
  /** Lists scanned for some row (with `prune`, per pass: a list may count twice). */
  lists: number;
  /** Coarse groups each row probed for its lists (0: every centroid scored, the flat probe). */
  probeGroups: number;
  /** (row, key) pairs scored in float32: against nq × bankRows for the exact glance. */
  scored: number;
  /** (row, key) pairs scored in int8 (`i8`), before the bound sends some to float32. */
  coded: number;
  /**
   * (row, key) pairs that passed the int8 bound (`i8`) and were refined by their keys' residual codes
   * before the float32 scan: only those the refined bound keeps are scored in float32.
   */
  refined: number;
  /** `i8`: ms spent coding keys the lists gained since the last such glance (all of them, the first time). */
  codeMs: number;
  /** Keys indexed. */
  bankRows: number;
  centroidMs: number;
  probeMs: number;
  scanMs: number;
  voteMs: number;
  sync: KeyIvfSyncStats;
}

/** Size and drift figures of a {@link KeyIvf}. */
export interface KeyIvfStats {
  dim: number;
  centroids: number;
  skills: number;
  rows: number;
  trainedRows: number;
  trainMeanSim: number;
  meanSim: number;
  /**
   * The centroids a training now would make for the indexed keys: the power of two nearest 8·√keys,
   * within [16, 65,536] and at most keys / 8.
   */
  defaultCentroids: number;
  /** Native memory the index holds beyond the bank's keys, in bytes. */
  bytes: number;
}

/** Options of a {@link KeyIvf.glance}. */
export interface KeyIvfGlanceOptions {
  /** Per-row weights (default uniform). */
  weights?: Float32Array;
  /** Skills each row credits (default voteK(skills), as the exact glance). */
  k?: number;
  /**
   * Lists each row probes, or "all" for the exact glance (default {@link defaultNprobe}); with
   * `probeSpread: "weight"`, the mean over the rows.
   */
  nprobe?: number | "all";
  /**
   * How the probed lists are shared among the rows (default `"even"`): `"even"`, every row probes
   * `nprobe`; `"weight"`, row i probes ⌊nprobe·nq·wᵢ/Σw + ½⌋ lists, clamped to [⌈nprobe/4⌉, 4·nprobe]
   * and to the centroids, since the vote credits a row's top k with wᵢ·m and a heavy row's missed
   * skill costs more. The route uses `"weight"`: over the real 30,593-skill bank it kept more of the
   * exact glance's top 20 for the lists scanned (docs/BENCHMARKS.md, "The key IVF"). Either way
   * `nprobe: "all"` probes every list for every row (the exact glance).
   */
  probeSpread?: "even" | "weight";
  /**
   * On a two-level index (≥ 1,024 centroids by default): pick each row's lists among the fine
   * centroids of its `probeGroups` best coarse groups only (≥ 1), instead of scoring every centroid
   * (the default). Cheaper, but it misses lists: on a real 3K-skill bank, 24 of 91 groups kept 0.965
   * of the exact glance's top 20 at nprobe C/16 against 0.993 (docs/BENCHMARKS.md, "The key IVF").
   * Ignored with `nprobe: "all"` and on a flat index.
   */
  probeGroups?: number;
  /**
   * The list bound (default off): each row first scans its 8 best lists, then skips every probed
   * list whose keys cannot reach its k-th best so far (q·c + |q|·radius(c), radius(c) the list's
   * farthest key from c, plus float slack). The result is unchanged, bit for bit (so with
   * `nprobe: "all"` it is still the exact glance); only the pairs scored drop. Scores every
   * centroid (`probeGroups` unused).
   */
  prune?: boolean;
  /**
   * The int8 list codes (default off): a row scores its probed lists' keys in int8, refines those
   * whose error bound reaches its k-th best so far by their residuals' 4-bit codes, and scores in
   * float32 only those whose refined bound still does (a floor first taken from its best lists:
   * their keys in int8, then a proven lower bound of its 2k best skills' best keys, refined).
   * The result is unchanged, bit for bit. A list is coded when a glance first scans it so (then
   * only the keys it gains); the codes add up to 0.40× the float32 keys' memory to the index. With
   * `prune`, the list bound first skips whole lists.
   */
  i8?: boolean;
  /**
   * Only these skills take part (default every skill), as {@link KeyBank.glance}'s `handles`: the
   * others are in no row's top k, so they take no vote, and the result holds only these (in the
   * bank's handle order); handles the bank does not hold are left out. With `nprobe: "all"`, g is the
   * exact glance's over these skills alone, bit for bit. `k` then defaults to voteK of their number.
   * Needs an addon that has it ({@link KeyIvf.restricts}); otherwise `NATIVE_UNAVAILABLE`.
   */
  handles?: Int32Array;
}

interface NativeKeyIvf {
  train(bank: NativeBank, options: KeyIvfTrainOptions): Promise<KeyIvfSyncStats>;
  sync(bank: NativeBank): Promise<KeyIvfSyncStats>;
  glance(bank: NativeBank, queries: Float32Array, weights: Float32Array, k: number, nprobe: number, probeGroups: number, prune: boolean, i8: boolean, spread: boolean, only?: Int32Array): Promise<KeyIvfGlance>;
  /** The same verb, present where the addon reads `only` (older addons ignore a tenth argument). */
  glanceOnly?: unknown;
  stats(): KeyIvfStats;
  exportCodes(): KeyIvfCodes;
  restore(centroids: Float32Array, coarse: Float32Array, groupStart: Int32Array, trainedRows: number, trainMeanSim: number): void;
  load(bank: NativeBank, handles: Int32Array, offsets: Int32Array, codes: Int32Array, simSums: Float64Array): number;
}

/** The centroids and every indexed skill's key codes, by handle: what the index file holds. */
export interface KeyIvfCodes {
  centroids: Float32Array;
  /** The two-level k-means' coarse centroids (empty: flat). */
  coarse: Float32Array;
  /** Group g's centroids are [groupStart[g], groupStart[g+1]) (empty: flat). */
  groupStart: Int32Array;
  handles: Int32Array;
  /** Skill i's keys' codes are codes[offsets[i] … offsets[i+1]), key by key. */
  offsets: Int32Array;
  codes: Int32Array;
  simSums: Float64Array;
}

function binding(): { NativeKeyIvf: new (dim: number) => NativeKeyIvf } {
  const b = loadBinding() as unknown as { NativeKeyIvf?: new (dim: number) => NativeKeyIvf };
  if (!b.NativeKeyIvf) throw new GavelError("the native addon predates the key IVF glance: rebuild it (npm run build:native)", "NATIVE_UNAVAILABLE");
  return b as { NativeKeyIvf: new (dim: number) => NativeKeyIvf };
}

/** Retrain when the bank holds this many times the keys the centroids were trained on. */
export const RETRAIN_GROWTH = 4;
/** Retrain when the mean key-to-centroid similarity fell this far below the trained one. */
export const RETRAIN_DRIFT = 0.05;

/** The most lists a row probes by default ({@link defaultNprobe}). */
export const NPROBE_CAP = 1024;

/**
 * The default lists probed per row: 1/16 of the centroids, at least 1 and at most
 * {@link NPROBE_CAP}. On a real 3K-skill bank (gavel-mini ℓ1, 8,194 centroids) 1/16 kept 0.993 of the
 * exact glance's top 20 and every top 1 over 40 tasks, scoring 6% of the (row, key) pairs; 1/32 kept
 * 0.982. Over the 30,593-skill default bank (10.8M keys) 1,024 lists kept 0.998-1.000 of it at 16K, 32K
 * and 65K centroids, while a finer index's lists hold fewer keys: more lists than that cost reads
 * without agreement (docs/BENCHMARKS.md, "The key IVF").
 */
export function defaultNprobe(centroids: number): number {
  return Math.max(1, Math.min(NPROBE_CAP, Math.round(centroids / 16)));
}

/**
 * A key IVF over one {@link KeyBank} (same dim); see the module comment.
 *
 * The native index runs one job at a time (train, sync and glance on worker threads under one lock),
 * and its synchronous reads (`stats`, `exportCodes`) wait on the JavaScript thread for the job under
 * way: a route's glance that read the centroid count while an install retrained the index froze the
 * event loop for the whole training. So every job is queued here, in call order, and the reads the
 * runtime makes go through the queue too ({@link statsAsync}, {@link exportAsync}); the glance
 * reads the default nprobe when its turn comes. The synchronous reads stay for a caller that holds
 * no job in flight (tests, tools).
 */
export class KeyIvf {
  readonly dim: number;
  readonly #native: NativeKeyIvf;
  /** The last job queued (settled either way): the next one starts after it. */
  #tail: Promise<unknown> = Promise.resolve();

  /** Runs `f` once every job queued before it has settled. */
  #queued<T>(f: () => T | Promise<T>): Promise<T> {
    const p = this.#tail.then(f, f);
    this.#tail = p.catch(() => undefined);
    return p;
  }

  private constructor(dim: number) {
    this.dim = dim;
    this.#native = new (binding().NativeKeyIvf)(dim);
  }

  /**
   * Trains centroids on a sample of `bank`'s keys and assigns every key (on worker threads).
   *
   * @throws GavelError `INVALID_ARGUMENT` when the bank holds no key or an option is out of range.
   */
  static async build(bank: KeyBank, options: KeyIvfTrainOptions = {}): Promise<KeyIvf> {
    const index = new KeyIvf(bank.dim);
    await index.train(bank, options);
    return index;
  }

  /** Retrains in place (new centroids, every key assigned again). */
  async train(bank: KeyBank, options: KeyIvfTrainOptions = {}): Promise<KeyIvfSyncStats> {
    this.#checkBank(bank);
    for (const key of ["centroids", "iters", "sample", "seed", "groups"] as const) {
      const v = options[key];
      if (v !== undefined) checkInt(v, key, key === "centroids" || key === "sample" || key === "groups" ? 1 : 0);
    }
    return this.#queued(() => this.#native.train(bank._native, options));
  }

  /** Follows the bank: skills added since the last sync assigned, removed ones dropped. */
  async sync(bank: KeyBank): Promise<KeyIvfSyncStats> {
    this.#checkBank(bank);
    return this.#queued(() => this.#native.sync(bank._native));
  }

  /** The index's size and drift figures (waits, on this thread, for a job under way: see the class comment). */
  stats(): KeyIvfStats {
    return this.#native.stats();
  }

  /** {@link stats} once the jobs queued before it are done: never waits on the JavaScript thread. */
  statsAsync(): Promise<KeyIvfStats> {
    return this.#queued(() => this.#native.stats());
  }

  /**
   * True when the centroids no longer fit the bank: it holds {@link RETRAIN_GROWTH} times the keys
   * they were trained on, or the keys sit {@link RETRAIN_DRIFT} further from their centroids on
   * average than at training. Probing every list stays exact either way; only the agreement at a
   * partial nprobe degrades, which a {@link KeyIvf.train} restores.
   */
  needsRetrain(s: KeyIvfStats = this.stats()): boolean {
    if (s.rows > RETRAIN_GROWTH * Math.max(1, s.trainedRows)) return true;
    return s.rows > 0 && s.trainMeanSim - s.meanSim > RETRAIN_DRIFT;
  }

  /**
   * True when a training now would make about twice the centroids or more (`stats().defaultCentroids`
   * ≥ 1.5× the index's: a two-level training makes a few more than the power of two it aims at):
   * the index still serves (it is not {@link needsRetrain stale}), but a retrained one reads fewer
   * keys for the same agreement, since the default probe caps the lists at {@link NPROBE_CAP}. An
   * install retrains then (src/route/glance-index-use.ts, `refreshKeyIvf`); a route never does.
   */
  coarserThanDefault(s: KeyIvfStats = this.stats()): boolean {
    return s.defaultCentroids >= 1.5 * s.centroids;
  }

  /** The centroids and every indexed skill's key codes (what {@link saveKeyIvf} writes). */
  exportCodes(): KeyIvfCodes {
    return this.#native.exportCodes();
  }

  /** {@link exportCodes} and {@link stats} of one moment, once the jobs queued before are done. */
  exportAsync(): Promise<{ codes: KeyIvfCodes; stats: KeyIvfStats }> {
    return this.#queued(() => ({ codes: this.#native.exportCodes(), stats: this.#native.stats() }));
  }

  /** @internal An index with these centroids and no skill (the file loader's). */
  static _restore(dim: number, c: Pick<KeyIvfCodes, "centroids" | "coarse" | "groupStart">, trainedRows: number, trainMeanSim: number): KeyIvf {
    const index = new KeyIvf(dim);
    index.#native.restore(c.centroids, c.coarse, c.groupStart, trainedRows, trainMeanSim);
    return index;
  }

  /** @internal Skills of `bank` with their codes as a file held them; returns how many were taken. */
  _load(bank: KeyBank, handles: Int32Array, offsets: Int32Array, codes: Int32Array, simSums: Float64Array): number {
    this.#checkBank(bank);
    return this.#native.load(bank._native, handles, offsets, codes, simSums);
  }

  /**
   * The key IVF glance over `bank` (synced first). With `nprobe: "all"` it is the exact glance
   * ({@link KeyBank.glance}'s g over every skill), bit for bit.
   *
   * @param queries - nq × dim task rows, finite.
   * @throws GavelError (as a rejection) `INVALID_ARGUMENT` on a bad argument or another bank's dim.
   */
  async glance(bank: KeyBank, queries: Float32Array, options: KeyIvfGlanceOptions = {}): Promise<KeyIvfGlance> {
    this.#checkBank(bank);
    checkFloat32(queries, "queries");
    const nq = checkRows(queries, this.dim, "queries");
    if (nq === 0) throw invalidArgument("queries hold no token");
    const weights = resolveWeights(options.weights, nq);
    const only = options.handles;
    if (only !== undefined) {
      if (!(only instanceof Int32Array)) throw invalidArgument("handles must be an Int32Array");
      if (!this.restricts) throw new GavelError("the native addon predates the key IVF glance over some skills: rebuild it (npm run build:native)", "NATIVE_UNAVAILABLE");
    }
    const k = options.k ?? voteK(only ? only.length : bank.size);
    checkInt(k, "k", 1);
    if (options.nprobe !== undefined && options.nprobe !== "all") checkInt(options.nprobe, "nprobe", 1);
    const probeGroups = options.probeGroups ?? 0;
    if (options.probeGroups !== undefined) checkInt(probeGroups, "probeGroups", 1);
    if (options.prune !== undefined && typeof options.prune !== "boolean") throw invalidArgument("prune must be a boolean");
    if (options.i8 !== undefined && typeof options.i8 !== "boolean") throw invalidArgument("i8 must be a boolean");
    const spread = options.probeSpread ?? "even";
    if (spread !== "even" && spread !== "weight") throw invalidArgument(`probeSpread must be "even" or "weight", got ${valueText(spread)}`);
    return this.#queued(() => {
      // the default reads the centroids as they are when this glance's turn comes (after a training queued before it)
      const np = options.nprobe ?? defaultNprobe(this.#native.stats().centroids);
      const nprobe = np === "all" ? 0x7fffffff : np;
      return this.#native.glance(bank._native, queries, weights, k, nprobe, probeGroups, options.prune ?? false, options.i8 ?? false, spread === "weight", only);
    }).then((r) => (only ? keepColumns(r, only) : r));
  }

  /** Whether the addon's glance takes {@link KeyIvfGlanceOptions.handles} (older addons glance every skill). */
  get restricts(): boolean {
    return typeof this.#native.glanceOnly === "function";
  }

  #checkBank(bank: KeyBank): void {
    if (bank.dim !== this.dim) throw invalidArgument(`the bank's dim (${bank.dim}) differs from the index's (${this.dim})`);
  }
}

/** A glance's columns of the listed handles only (the others took no vote: g 0), in column order. */
function keepColumns(r: KeyIvfGlance, only: Int32Array): KeyIvfGlance {
  const listed = new Set(only);
  let n = 0;
  for (const h of r.handles) if (listed.has(h)) n++;
  const g = new Float32Array(n);
  const handles = new Int32Array(n);
  for (let i = 0, j = 0; i < r.handles.length; i++) {
    if (!listed.has(r.handles[i])) continue;
    g[j] = r.g[i];
    handles[j++] = r.handles[i];
  }
  return { ...r, g, handles };
}
