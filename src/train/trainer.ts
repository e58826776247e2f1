/**
 * Contrastive training of the glance head's two maps, W_q and W_s (paper §3.2, appendix C), over
 * backbone states already computed (see states-cache.ts): the native trainer (native/src/train,
 * forward + exact backward + AdamW off the JS thread), batch packing under a task and token budget
 * with negatives resampled from the rest of the library each step, validation Hit@1 / R@10 by the
 * span mean m̄, and atomic, resumable checkpoints. Nothing here needs a model: the pipeline that
 * computes states from one lives in pipeline.ts.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { GavelError, invalidArgument } from "../errors.js";
import { loadBinding, type NativeTrainBatch, type NativeTrainer, type NativeTrainerOptions, type NativeTrainerState } from "../native/binding.js";
import { Rng } from "../util/prng.js";
import { checkFinite, checkInt } from "../util/validate.js";
import { makeTrainingSet, packBatch, type TrainingSet } from "./batch.js";
import { loadCheckpoint, saveCheckpoint } from "./checkpoint.js";
import { evaluateRetrieval, type RetrievalMetrics } from "./retrieval.js";

export type { NativeTrainBatch, NativeTrainer, NativeTrainerOptions, NativeTrainerState };
// The parts of training, re-exported so this module stays the one to import.
export { makeTrainingSet, packBatch, type PackedBatch, type PackOptions, type TrainingExample, type TrainingSet } from "./batch.js";
export { loadCheckpoint, saveCheckpoint, type CheckpointMeta } from "./checkpoint.js";
export { evaluateRetrieval, type RetrievalMetrics } from "./retrieval.js";
export { Rng } from "../util/prng.js";

/** The paper's optimiser settings (appendix C). */
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
});

/**
 * A native trainer with W_q, W_s drawn i.i.d. N(0, 1/nEmbd) from `seed` and fresh AdamW state.
 * @throws GavelError `INVALID_ARGUMENT` for bad options.
 */
export function createTrainer(options: NativeTrainerOptions): NativeTrainer {
  if (typeof options !== "object" || options === null) throw invalidArgument("createTrainer: options must be an object");
  checkInt(options.nEmbd, "nEmbd", 1);
  checkInt(options.dim, "dim", 1);
  for (const k of ["tau", "lr", "beta1", "beta2", "eps", "weightDecay"] as const) {
    if (options[k] !== undefined) checkFinite(options[k], k, { min: 0 });
  }
  return new (loadBinding().NativeTrainer)(options);
}

// ---- the loop ----------------------------------------------------------------------------------

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
  /** Negatives per task drawn from its hard list (default 0). */
  hardNegatives?: number;
  /** Every skill of the batch is a candidate of every task (default false). */
  inBatch?: boolean;
  /** Seeds the initial weights and the sampler. */
  seed?: number;
  threads?: number;
  /** Checkpoint file; written every `checkpointEvery` steps and at the end. */
  checkpoint?: string;
  checkpointEvery?: number;
  /** Continue from `checkpoint` if it exists (same configuration required). */
  resume?: boolean;
  /** Validation every this many steps (0: only at the end). */
  valEvery?: number;
  onProgress?: (p: TrainProgress) => void;
  /** "finetune": W_q alone against `keys` (W_s frozen). */
  phase?: "main" | "finetune";
  /** Per skill, unit keys (rows × dim) for the fine-tune. */
  keys?: Float32Array[];
  /** Starting weights (the fine-tune starts from the main phase's). */
  init?: { wq: Float32Array; ws: Float32Array };
  signal?: AbortSignal;
}

/** What {@link runTraining} returns. */
export interface TrainResult {
  wq: Float32Array;
  ws: Float32Array;
  steps: number;
  /** Loss of each step this run took (not of the steps before a resume). */
  losses: number[];
  val?: RetrievalMetrics;
  /** Step the run resumed from (0 for a fresh run). */
  resumedFrom: number;
  tokensPerSec: number;
  stepsPerSec: number;
}


/** A run's settings: its options checked, defaults filled in. */
interface LoopSettings {
  phase: "main" | "finetune";
  /** The fine-tune: W_s frozen, skills given as unit keys. */
  frozen: boolean;
  dim: number;
  steps: number;
  batchTasks: number;
  batchTokens: number;
  negatives: number;
  hardNegatives: number;
  inBatch: boolean;
  checkpointEvery: number;
  valEvery: number;
  seed: number;
  lr: number;
  tau: number;
  weightDecay: number;
}

function loopSettings(set: TrainingSet, opts: TrainLoopOptions): LoopSettings {
  const phase = opts.phase ?? "main";
  const frozen = phase === "finetune";
  const dim = checkInt(opts.dim, "dim", 1);
  if (frozen) {
    if (!opts.keys || opts.keys.length !== set.skills.length) throw invalidArgument("the fine-tune needs unit keys for every skill");
    opts.keys.forEach((k, i) => {
      if (!(k instanceof Float32Array) || k.length % dim !== 0) throw invalidArgument(`keys[${i}] must be a Float32Array of rows × dim`);
    });
  }
  return {
    phase,
    frozen,
    dim,
    steps: checkInt(opts.steps, "steps", 0),
    batchTasks: checkInt(opts.batchTasks ?? TRAIN_DEFAULTS.batchTasks, "batchTasks", 1),
    batchTokens: checkInt(opts.batchTokens ?? TRAIN_DEFAULTS.batchTokens, "batchTokens", 1),
    negatives: checkInt(opts.negatives ?? TRAIN_DEFAULTS.negatives, "negatives", 0),
    hardNegatives: checkInt(opts.hardNegatives ?? 0, "hardNegatives", 0),
    inBatch: opts.inBatch === true,
    checkpointEvery: checkInt(opts.checkpointEvery ?? TRAIN_DEFAULTS.checkpointEvery, "checkpointEvery", 1),
    valEvery: checkInt(opts.valEvery ?? 0, "valEvery", 0),
    seed: checkInt(opts.seed ?? 0, "seed", 0),
    lr: opts.lr ?? (frozen ? TRAIN_DEFAULTS.finetuneLr : TRAIN_DEFAULTS.lr),
    tau: opts.tau ?? TRAIN_DEFAULTS.tau,
    weightDecay: opts.weightDecay ?? TRAIN_DEFAULTS.weightDecay,
  };
}

/** Hash of what decides a run's batches and updates; a checkpoint of another configuration is refused. */
function configHash(set: TrainingSet, s: LoopSettings): string {
  const { phase, dim, tau, lr, batchTasks, batchTokens, negatives, hardNegatives, inBatch, seed } = s;
  return createHash("sha256")
    .update(JSON.stringify({ phase, nEmbd: set.nEmbd, dim, tau, lr, wd: s.weightDecay, batchTasks, batchTokens, negatives, ...(hardNegatives ? { hardNegatives } : {}), ...(inBatch ? { inBatch } : {}), seed, nSkills: set.skills.length, nTrain: set.train.length }))
    .digest("hex")
    .slice(0, 16);
}

/**
 * Restores the trainer and the sampler from `checkpoint` when it holds this phase of this run.
 * @returns the step resumed from (0 when nothing was restored)
 */
async function resumeFrom(checkpoint: string, trainer: NativeTrainer, rng: Rng, set: TrainingSet, s: LoopSettings, config: string): Promise<number> {
  const ck = await loadCheckpoint(checkpoint);
  if (!ck || ck.meta.phase !== s.phase) return 0;
  if (ck.meta.config !== config || ck.meta.nEmbd !== set.nEmbd || ck.meta.dim !== s.dim) {
    throw invalidArgument(`${checkpoint} was written by a run with another configuration (data, sizes or hyper-parameters); start afresh or pass the same options`);
  }
  trainer.setState(ck.state);
  rng.state = ck.meta.rng >>> 0;
  return ck.state.step;
}

/**
 * Trains W_q and W_s (or W_q alone, phase "finetune") on a {@link TrainingSet}: each step packs a
 * batch ({@link packBatch}), runs the native forward, exact backward and AdamW update, and reports
 * progress; checkpoints are atomic and a resumed run draws the same batches as an uninterrupted one
 * (the sampler's RNG state is checkpointed), so it ends with the same weights.
 */
export async function runTraining(set: TrainingSet, opts: TrainLoopOptions): Promise<TrainResult> {
  makeTrainingSet(set);
  const s = loopSettings(set, opts);
  const { phase, frozen, dim, steps } = s;
  const skillsForBatch = frozen ? opts.keys! : set.skills;
  const trainer = createTrainer({ nEmbd: set.nEmbd, dim, tau: s.tau, lr: s.lr, weightDecay: s.weightDecay, freezeWs: frozen, seed: s.seed, threads: opts.threads });
  if (opts.init) trainer.setWeights(opts.init.wq, opts.init.ws);
  const config = configHash(set, s);
  // Distinct streams for the two phases of one seed.
  const rng = new Rng((s.seed ^ (frozen ? 0x5bd1e995 : 0x9e3779b9)) >>> 0);
  const resumedFrom = opts.resume && opts.checkpoint ? await resumeFrom(opts.checkpoint, trainer, rng, set, s, config) : 0;
  const save = async () => {
    if (opts.checkpoint) await saveCheckpoint(opts.checkpoint, { phase, rng: rng.state, config, nEmbd: set.nEmbd, dim }, trainer.getState());
  };
  const losses: number[] = [];
  const t0 = performance.now();
  let tokensDone = 0;
  let stepsDone = 0;
  let val: RetrievalMetrics | undefined;
  const evalNow = async () => (set.val.length > 0 ? evaluateRetrieval(set.val, set.skills, trainer.getWeights(), set.nEmbd, dim, frozen ? opts.keys : undefined) : undefined);
  const pack = { batchTasks: s.batchTasks, batchTokens: s.batchTokens, negatives: s.negatives, hardNegatives: s.hardNegatives, inBatch: s.inBatch, skillWidth: frozen ? dim : set.nEmbd, queryWidth: set.nEmbd };
  while (trainer.steps < steps) {
    if (opts.signal?.aborted) throw new GavelError("training aborted", "ABORTED");
    const packed = packBatch(set.train, skillsForBatch, rng, pack);
    const { loss, gradNorm } = await trainer.step(packed.batch);
    losses.push(loss);
    tokensDone += packed.tokens;
    stepsDone++;
    const step = trainer.steps;
    const secs = (performance.now() - t0) / 1000;
    let v: RetrievalMetrics | undefined;
    if ((s.valEvery > 0 && step % s.valEvery === 0) || step === steps) v = val = await evalNow();
    if (step % s.checkpointEvery === 0 || step === steps) await save();
    opts.onProgress?.({
      phase, step, steps, loss, gradNorm, tasks: packed.tasks, tokens: packed.tokens,
      tokensPerSec: tokensDone / secs, stepsPerSec: stepsDone / secs, val: v,
    });
  }
  if (stepsDone === 0 && set.val.length > 0) val = await evalNow();
  const secs = (performance.now() - t0) / 1000;
  const w = trainer.getWeights();
  return {
    ...w, steps: trainer.steps, losses, val, resumedFrom,
    tokensPerSec: secs > 0 ? tokensDone / secs : 0, stepsPerSec: secs > 0 ? stepsDone / secs : 0,
  };
}
