/**
 * A training run's options ({@link TrainLoopOptions}), its progress reports, its settings (the options
 * checked, defaults filled in) and the hash of what decides its batches and updates (a checkpoint of
 * another configuration is refused on resume).
 *
 * @module
 */
import { createHash } from "node:crypto";
import { checkInt, invalidArgument } from "gavel-router/internal";
import type { TrainingSet } from "./batch.js";
import type { RetrievalMetrics } from "./retrieval.js";

/** The paper's optimiser settings (appendix C) and this package's defaults for the rest. */
export const TRAIN_DEFAULTS = Object.freeze({
  tau: 40,
  lr: 1e-3,
  finetuneLr: 1e-4,
  weightDecay: 0.01,
  /** Appendix C packs up to 256 tasks and 200K tokens; these small defaults suit a CPU. */
  batchTasks: 16,
  batchTokens: 16_384,
  /** Negatives drawn per task (capped by the library). The paper does not give its count. */
  negatives: 31,
  checkpointEvery: 50,
  /** Steps between refreshes of the glance's hard negatives. */
  refreshEvery: 50,
  /** Skills kept per task in the glance's list. */
  glancePool: 20,
  /**
   * The glance's vote written into the projections: idf row weights and a vote share of 0.01, chosen
   * on validation over gavel-mini's 3K-30.6K-skill banks (docs/BENCHMARKS.md, "The glance's vote");
   * `uniform` / 0 is the paper's vote (Eq. 3, k = 10).
   */
  glanceRowWeights: "idf" as "uniform" | "idf",
  glanceVoteShare: 0.01,
});

/** One progress report (every step). */
export interface TrainProgress {
  phase: "main" | "finetune";
  step: number;
  steps: number;
  loss: number;
  gradNorm: number;
  tasks: number;
  /** Rows of states in this step's batch. */
  tokens: number;
  /** Rows of states per second and steps per second, over this run's steps so far. */
  tokensPerSec: number;
  stepsPerSec: number;
  /** Validation metrics, on the steps where they were computed. */
  val?: RetrievalMetrics;
  /** Bytes of the skills' states held by the trainer (f16; device memory on CUDA), when resident. */
  residentBytes?: number;
}

/** Options of {@link runTraining}. */
export interface TrainLoopOptions {
  /** Rows of W_q and W_s. */
  dim: number;
  /** AdamW updates to reach (a resumed run continues up to this count). */
  steps: number;
  tau?: number;
  lr?: number;
  weightDecay?: number;
  batchTasks?: number;
  batchTokens?: number;
  negatives?: number;
  /** Negatives per task drawn from its hard (BM25) list (default 0). */
  hardNegatives?: number;
  /**
   * Negatives per task drawn from the current glance's top skills (default 0: no refresh). The
   * lists are recomputed with the trainer's weights every `refreshEvery` steps.
   */
  glanceNegatives?: number;
  /** Steps between glance refreshes (default 50). */
  refreshEvery?: number;
  /** Examples refreshed per round, in turn (default: all of them each round). */
  refreshTasks?: number;
  /** Skills kept in each glance list (default 20). */
  glancePool?: number;
  /** Every skill of the batch is a candidate of every task (default false). */
  inBatch?: boolean;
  /** Seeds the initial weights and the sampler. */
  seed?: number;
  threads?: number;
  /**
   * Where the trainer's step runs (default "cpu"): "cuda" keeps W_q, W_s and AdamW's moments on the
   * GPU (a CUDA build only, else CUDA_UNAVAILABLE). Checkpoints are the same either way, so a run
   * may resume on the other device (not bit for bit: the twins agree within docs/DEVICE.md's tolerances).
   */
  device?: "cpu" | "cuda";
  /** The CUDA trainer's max-sim precision (default "bf16"; ignored on the CPU). */
  precision?: "bf16" | "fp32";
  /**
   * Hold the skills' states (the fine-tune's keys) in the trainer as f16, uploaded once at the start,
   * and pack batches as skill indices instead of copying states each step (default: on for "cuda",
   * off for "cpu"). The batches are the same; the states are rounded to f16 (docs/TRAINING.md).
   */
  resident?: boolean;
  /** Checkpoint file; written every `checkpointEvery` steps and at the end. */
  checkpoint?: string;
  checkpointEvery?: number;
  /** Continue from `checkpoint` if it exists (same configuration required). */
  resume?: boolean;
  /**
   * Stop after the first step that ends this many seconds into the run (checkpoint written; the
   * result says `finished: false`): a device call is time-limited, and the next call resumes.
   */
  stopAfterSeconds?: number;
  /** Validation every this many steps (0: only at the end). */
  valEvery?: number;
  onProgress?: (p: TrainProgress) => void;
  /** "finetune": W_q alone against `keys` (W_s frozen). */
  phase?: "main" | "finetune";
  /** Per skill, unit keys (rows × dim) for the fine-tune. */
  keys?: Float32Array[];
  /** Per skill, the state row each of `keys` came from (for masks; see TrainingExample.mask). */
  keyRows?: Int32Array[];
  /** Starting weights (the fine-tune starts from the main phase's). */
  init?: { wq: Float32Array; ws: Float32Array };
  signal?: AbortSignal;
}

/** A run's settings: its options checked, defaults filled in. */
export interface LoopSettings {
  phase: "main" | "finetune";
  /** The fine-tune: W_s frozen, skills given as unit keys. */
  frozen: boolean;
  dim: number;
  steps: number;
  batchTasks: number;
  batchTokens: number;
  negatives: number;
  hardNegatives: number;
  glanceNegatives: number;
  refreshEvery: number;
  refreshTasks?: number;
  glancePool: number;
  inBatch: boolean;
  checkpointEvery: number;
  valEvery: number;
  seed: number;
  lr: number;
  tau: number;
  weightDecay: number;
}

/** Checks the fine-tune's keys (and their rows) against the set. */
function checkKeys(set: TrainingSet, opts: TrainLoopOptions, dim: number): void {
  if (!opts.keys || opts.keys.length !== set.skills.length) throw invalidArgument("the fine-tune needs unit keys for every skill");
  opts.keys.forEach((k, i) => {
    if (!(k instanceof Float32Array) || k.length % dim !== 0) throw invalidArgument(`keys[${i}] must be a Float32Array of rows × dim`);
    const rows = opts.keyRows?.[i];
    if (opts.keyRows && (!(rows instanceof Int32Array) || rows.length !== k.length / dim)) throw invalidArgument(`keyRows[${i}] must hold one state row per key`);
  });
}

/** {@link LoopSettings} of a run. */
export function loopSettings(set: TrainingSet, opts: TrainLoopOptions): LoopSettings {
  const phase = opts.phase ?? "main";
  const frozen = phase === "finetune";
  const dim = checkInt(opts.dim, "dim", 1);
  if (frozen) checkKeys(set, opts, dim);
  const negatives = checkInt(opts.negatives ?? TRAIN_DEFAULTS.negatives, "negatives", 0);
  return {
    phase,
    frozen,
    dim,
    steps: checkInt(opts.steps, "steps", 0),
    batchTasks: checkInt(opts.batchTasks ?? TRAIN_DEFAULTS.batchTasks, "batchTasks", 1),
    batchTokens: checkInt(opts.batchTokens ?? TRAIN_DEFAULTS.batchTokens, "batchTokens", 1),
    negatives,
    hardNegatives: checkInt(opts.hardNegatives ?? 0, "hardNegatives", 0),
    glanceNegatives: checkInt(opts.glanceNegatives ?? 0, "glanceNegatives", 0),
    refreshEvery: checkInt(opts.refreshEvery ?? TRAIN_DEFAULTS.refreshEvery, "refreshEvery", 1),
    refreshTasks: opts.refreshTasks === undefined ? undefined : checkInt(opts.refreshTasks, "refreshTasks", 1),
    glancePool: checkInt(opts.glancePool ?? TRAIN_DEFAULTS.glancePool, "glancePool", 1),
    inBatch: opts.inBatch === true,
    checkpointEvery: checkInt(opts.checkpointEvery ?? TRAIN_DEFAULTS.checkpointEvery, "checkpointEvery", 1),
    valEvery: checkInt(opts.valEvery ?? 0, "valEvery", 0),
    seed: checkInt(opts.seed ?? 0, "seed", 0),
    lr: opts.lr ?? (frozen ? TRAIN_DEFAULTS.finetuneLr : TRAIN_DEFAULTS.lr),
    tau: opts.tau ?? TRAIN_DEFAULTS.tau,
    weightDecay: opts.weightDecay ?? TRAIN_DEFAULTS.weightDecay,
  };
}

/**
 * Hash of what decides a run's batches and updates: sizes, hyper-parameters, the negatives' recipe,
 * and for a run that starts from given weights (the fine-tune) those weights, so a fine-tune
 * checkpoint of another main run is refused.
 */
export function configHash(set: TrainingSet, s: LoopSettings, init?: { wq: Float32Array; ws: Float32Array }): string {
  const { phase, dim, tau, lr, batchTasks, batchTokens, negatives, hardNegatives, inBatch, seed } = s;
  const glance = s.glanceNegatives ? { glance: [s.glanceNegatives, s.refreshEvery, s.refreshTasks ?? 0, s.glancePool] } : {};
  const h = createHash("sha256").update(
    JSON.stringify({ phase, nEmbd: set.nEmbd, dim, tau, lr, wd: s.weightDecay, batchTasks, batchTokens, negatives, ...(hardNegatives ? { hardNegatives } : {}), ...glance, ...(inBatch ? { inBatch } : {}), seed, nSkills: set.skills.length, nTrain: set.train.length }),
  );
  if (init) for (const a of [init.wq, init.ws]) h.update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
  return h.digest("hex").slice(0, 16);
}
