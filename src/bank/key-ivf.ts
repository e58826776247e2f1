/**
 * The key IVF glance (native/src/kivf): an inverted file over a {@link KeyBank}'s token keys,
 * searched per task row, that approximates the exact glance while reading a few percent of the keys.
 *
 * - **Index.** Spherical k-means centroids trained on a sample of the keys (the glance index's
 *   steps: `ivfSampleRows`, `ivfKMeans`); every key is assigned to its nearest centroid, and list c
 *   holds the ids of its keys (int32). The keys themselves stay in the bank's own storage (float32
 *   or f16) and are read in place, so the index costs about 8 bytes a key plus the centroids.
 * - **Search.** Each task row scores the centroids, probes its `nprobe` best lists, scores every
 *   key found there with the exact glance's own max-sim kernel (so each score is the very float32
 *   the exact glance computes), keeps its top k skills by (max-sim desc, column asc) as the native
 *   vote does, and credits them w_i · m as the exact glance does.
 * - **Exactness knob.** `nprobe: "all"` (or ≥ the centroids) probes every list: the result is the
 *   exact glance's g, bit for bit. Below it, a row whose true top-k skill has its best key outside
 *   the probed lists credits another skill instead.
 * - **Following the bank.** Every glance first syncs: skills added since are assigned to the
 *   current centroids, removed ones dropped. Centroids change only at {@link KeyIvf.train}.
 *
 * @module
 */
import { GavelError, invalidArgument } from "../errors.js";
import { checkFloat32, checkInt, checkRows, resolveWeights } from "../kernels/args.js";
import { voteK } from "../kernels/kernels.js";
import { loadBinding, type NativeBank } from "../native/binding.js";
import type { KeyBank } from "./key-bank.js";

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
  /** Lists probed by some row. */
  lists: number;
  /** (row, key) pairs scored: against nq × bankRows for the exact glance. */
  scored: number;
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
  /** Native memory the index holds beyond the bank's keys, in bytes. */
  bytes: number;
}

/** Options of a {@link KeyIvf.glance}. */
export interface KeyIvfGlanceOptions {
  /** Per-row weights (default uniform). */
  weights?: Float32Array;
  /** Skills each row credits (default voteK(skills), as the exact glance). */
  k?: number;
  /** Lists each row probes, or "all" for the exact glance (default {@link defaultNprobe}). */
  nprobe?: number | "all";
}

interface NativeKeyIvf {
  train(bank: NativeBank, options: KeyIvfTrainOptions): Promise<KeyIvfSyncStats>;
  sync(bank: NativeBank): Promise<KeyIvfSyncStats>;
  glance(bank: NativeBank, queries: Float32Array, weights: Float32Array, k: number, nprobe: number): Promise<KeyIvfGlance>;
  stats(): KeyIvfStats;
}

function binding(): { NativeKeyIvf: new (dim: number) => NativeKeyIvf } {
  const b = loadBinding() as unknown as { NativeKeyIvf?: new (dim: number) => NativeKeyIvf };
  if (!b.NativeKeyIvf) throw new GavelError("the native addon predates the key IVF glance: rebuild it (npm run build:native)", "NATIVE_UNAVAILABLE");
  return b as { NativeKeyIvf: new (dim: number) => NativeKeyIvf };
}

/** The default lists probed per row: 1/32 of the centroids, at least 1. */
export function defaultNprobe(centroids: number): number {
  return Math.max(1, Math.round(centroids / 32));
}

/** A key IVF over one {@link KeyBank} (same dim); see the module comment. */
export class KeyIvf {
  readonly dim: number;
  readonly #native: NativeKeyIvf;

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
    return this.#native.train(bank._native, options);
  }

  /** Follows the bank: skills added since the last sync assigned, removed ones dropped. */
  async sync(bank: KeyBank): Promise<KeyIvfSyncStats> {
    this.#checkBank(bank);
    return this.#native.sync(bank._native);
  }

  /** The index's size and drift figures. */
  stats(): KeyIvfStats {
    return this.#native.stats();
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
    const k = options.k ?? voteK(bank.size);
    checkInt(k, "k", 1);
    const np = options.nprobe ?? defaultNprobe(this.stats().centroids);
    const nprobe = np === "all" ? 0x7fffffff : np;
    checkInt(nprobe, "nprobe", 1);
    return this.#native.glance(bank._native, queries, weights, k, nprobe);
  }

  #checkBank(bank: KeyBank): void {
    if (bank.dim !== this.dim) throw invalidArgument(`the bank's dim (${bank.dim}) differs from the index's (${this.dim})`);
  }
}
