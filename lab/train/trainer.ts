/**
 * Contrastive training of the glance head's two maps, W_q and W_s (paper §3.2, appendix C), over
 * backbone states already computed (see model/states-cache.ts): the native trainer (native/src/train,
 * forward + exact backward + AdamW off the JS thread), batch packing under a task and token budget
 * with negatives resampled from the rest of the library each step (plus BM25 and current-glance hard
 * negatives, the latter refreshed every few steps), masked positives, validation Hit@1 / R@10 / R@20
 * by the span mean m̄, and atomic checkpoints from which a resumed run continues bit for bit. The
 * native trainer is constructed in one place ({@link createTrainer}). Nothing here needs a model: the
 * pipeline that computes states from one lives in pipeline.ts.
 *
 * @module
 */
import { GavelError, loadBinding } from "gavel-router";
import { checkFinite, checkInt, invalidArgument, type NativeResidentBatch, type NativeTrainBatch, type NativeTrainer, type NativeTrainerOptions, type NativeTrainerState, Rng } from "gavel-router/internal";
import { makeTrainingSet, packBatch, type TrainingSet } from "./batch.js";
import { loadCheckpoint, saveCheckpoint } from "./checkpoint.js";
import { refreshGlanceNegatives, refreshRound } from "./hard-negatives.js";
import { evaluateRetrievalResident, holdsLibrary, refreshGlanceNegativesResident } from "./resident-scores.js";
import { evaluateRetrieval, projectKeys, type RetrievalMetrics } from "./retrieval.js";
import { configHash, loopSettings, type LoopSettings, type TrainLoopOptions } from "./settings.js";

export type { NativeResidentBatch, NativeTrainBatch, NativeTrainer, NativeTrainerOptions, NativeTrainerState };
// The parts of training, re-exported so this module stays the one to import.
export { makeTrainingSet, packBatch, type PackedBatch, type PackOptions, type TrainingExample, type TrainingSet } from "./batch.js";
export { loadCheckpoint, saveCheckpoint, type CheckpointMeta } from "./checkpoint.js";
export { evaluateRetrieval, type RetrievalMetrics } from "./retrieval.js";
export { Rng } from "gavel-router/internal";

export { TRAIN_DEFAULTS, type TrainLoopOptions, type TrainProgress } from "./settings.js";

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
  checkTrainerDevice(options.device, options.precision);
  return new (loadBinding().NativeTrainer)(options);
}

/** The trainer's devices and max-sim precisions (`NativeTrainerOptions`). */
export const TRAINER_DEVICES = Object.freeze(["cpu", "cuda"] as const);
export const TRAINER_PRECISIONS = Object.freeze(["bf16", "fp32"] as const);

/**
 * Checks `device` and `precision` (undefined: the defaults, "cpu" and "bf16").
 * @throws GavelError `INVALID_ARGUMENT` for another value.
 */
export function checkTrainerDevice(device: unknown, precision: unknown): void {
  if (device !== undefined && !(TRAINER_DEVICES as readonly unknown[]).includes(device)) throw invalidArgument(`device must be "cpu" or "cuda", got ${JSON.stringify(device)}`);
  if (precision !== undefined && !(TRAINER_PRECISIONS as readonly unknown[]).includes(precision)) throw invalidArgument(`precision must be "bf16" or "fp32", got ${JSON.stringify(precision)}`);
}

/**
 * Whether the trainer can run on `device` here: nothing to check for the CPU; for "cuda", a one-row
 * trainer is made and freed at once, so a CPU build (or a CUDA build without a device) fails before
 * any work with the native trainer's own error.
 * @throws GavelError `CUDA_UNAVAILABLE` when device is "cuda" and no CUDA trainer can run;
 *   `INVALID_ARGUMENT` for an unknown device or precision.
 */
export function assertTrainerDevice(device: "cpu" | "cuda" | undefined, precision?: "bf16" | "fp32"): void {
  checkTrainerDevice(device, precision);
  if (device !== "cuda") return;
  createTrainer({ nEmbd: 1, dim: 1, device, precision }).dispose();
}

/** Floats per addSkills call of {@link uploadSkills} (256 MB of f32, 128 MB once f16). */
const UPLOAD_FLOATS = 64 << 20;

/**
 * Puts `skills` (rows × `width` each, in library order) into the trainer's resident store, a few
 * hundred MB per call, after emptying it; resident batches then name them by index.
 * @returns the store's bytes
 * @throws GavelError `INVALID_ARGUMENT` for a shape that is not rows × width or a value beyond f16;
 *   `OUT_OF_MEMORY` when the device (or host) has no room.
 */
export function uploadSkills(trainer: NativeTrainer, skills: readonly Float32Array[], width: number): number {
  checkInt(width, "width", 1);
  trainer.clearSkills();
  for (let i = 0; i < skills.length; ) {
    let floats = 0;
    let j = i;
    while (j < skills.length && (j === i || floats + skills[j].length <= UPLOAD_FLOATS)) floats += skills[j++].length;
    const states = new Float32Array(floats);
    const rows = new Int32Array(j - i);
    for (let k = i, at = 0; k < j; k++) {
      if (skills[k].length % width !== 0) throw invalidArgument(`skills[${k}] must hold rows × ${width} values`);
      states.set(skills[k], at);
      at += skills[k].length;
      rows[k - i] = skills[k].length / width;
    }
    trainer.addSkills(states, rows);
    i = j;
  }
  return trainer.residentBytes;
}

// ---- the loop ----------------------------------------------------------------------------------

/** What {@link runTraining} returns. */
export interface TrainResult {
  wq: Float32Array;
  ws: Float32Array;
  steps: number;
  /** Whether `steps` were reached (false when stopped by `stopAfterSeconds`). */
  finished: boolean;
  /** Loss of each step this run took (not of the steps before a resume). */
  losses: number[];
  val?: RetrievalMetrics;
  /** Step the run resumed from (0 for a fresh run). */
  resumedFrom: number;
  /** Glance refresh rounds this run took. */
  refreshes: number;
  tokensPerSec: number;
  stepsPerSec: number;
  /** Bytes of the resident store, when the run held its skills in the trainer. */
  residentBytes?: number;
}

/**
 * Restores the trainer, the sampler and the glance lists from `checkpoint` when it holds this phase
 * of this run.
 * @returns the step resumed from (0 when nothing was restored)
 */
async function resumeFrom(checkpoint: string, trainer: NativeTrainer, rng: Rng, set: TrainingSet, s: LoopSettings, config: string): Promise<number> {
  const ck = await loadCheckpoint(checkpoint);
  if (!ck || ck.meta.phase !== s.phase) return 0;
  if (ck.meta.config !== config || ck.meta.nEmbd !== set.nEmbd || ck.meta.dim !== s.dim) {
    throw invalidArgument(`${checkpoint} was written by a run with another configuration (data, sizes or hyper-parameters); start afresh or pass the same options`);
  }
  if (s.glanceNegatives > 0 && ck.lists?.length !== set.train.length) throw invalidArgument(`${checkpoint} lacks the glance's negatives of this run`);
  trainer.setState(ck.state);
  rng.state = ck.meta.rng >>> 0;
  if (s.glanceNegatives > 0) set.train.forEach((ex, i) => (ex.glance = ck.lists![i]));
  return ck.state.step;
}

/** Recomputes the glance lists when this step opens a refresh round; returns whether it did. */
async function maybeRefresh(set: TrainingSet, trainer: NativeTrainer, s: LoopSettings, opts: TrainLoopOptions): Promise<boolean> {
  if (s.glanceNegatives === 0 || trainer.steps % s.refreshEvery !== 0) return false;
  const which = refreshRound(set.train.length, trainer.steps / s.refreshEvery, s.refreshTasks);
  if (holdsLibrary(trainer, set.skills.length)) {
    // The store already holds the library: score it there, with no host projection or bank.
    await refreshGlanceNegativesResident(set.train, trainer, s.frozen ? opts.keys! : set.skills, s.glancePool, which);
    return true;
  }
  const { wq, ws } = trainer.getWeights();
  const keys = await projectKeys(set.skills, ws, set.nEmbd, s.dim, s.frozen ? opts.keys : undefined);
  try {
    await refreshGlanceNegatives(set.train, { keys, wq, nEmbd: set.nEmbd, pool: s.glancePool, which });
  } finally {
    keys.dispose();
  }
  return true;
}

/**
 * Trains W_q and W_s (or W_q alone, phase "finetune") on a {@link TrainingSet}: each step packs a
 * batch ({@link packBatch}), runs the native forward, exact backward and AdamW update, and reports
 * progress; with glance negatives, every `refreshEvery` steps first re-ranks the library for the
 * training tasks with the current weights. Checkpoints are atomic and hold the sampler's RNG state and
 * the glance lists, so a resumed run draws the same batches as an uninterrupted one and ends with the
 * same weights, bit for bit.
 */
export async function runTraining(set: TrainingSet, opts: TrainLoopOptions): Promise<TrainResult> {
  makeTrainingSet(set);
  const s = loopSettings(set, opts);
  const { phase, frozen, dim } = s;
  const trainer = createTrainer({
    nEmbd: set.nEmbd, dim, tau: s.tau, lr: s.lr, weightDecay: s.weightDecay, freezeWs: frozen, seed: s.seed, threads: opts.threads,
    device: opts.device, precision: opts.precision,
  });
  try {
    if (opts.init) trainer.setWeights(opts.init.wq, opts.init.ws);
    const config = configHash(set, s, opts.init);
    // Distinct streams for the two phases of one seed.
    const rng = new Rng((s.seed ^ (frozen ? 0x5bd1e995 : 0x9e3779b9)) >>> 0);
    // Lists left by another run or phase never leak into this one.
    if (s.glanceNegatives > 0) for (const ex of set.train) delete ex.glance;
    const resumedFrom = opts.resume && opts.checkpoint ? await resumeFrom(opts.checkpoint, trainer, rng, set, s, config) : 0;
    if (opts.resident ?? opts.device === "cuda") uploadSkills(trainer, frozen ? opts.keys! : set.skills, frozen ? dim : set.nEmbd);
    const save = async () => {
      if (!opts.checkpoint) return;
      const lists = s.glanceNegatives > 0 ? set.train.map((ex) => ex.glance) : undefined;
      await saveCheckpoint(opts.checkpoint, { phase, rng: rng.state, config, nEmbd: set.nEmbd, dim }, trainer.getState(), lists);
    };
    return { ...(await loop(set, trainer, rng, s, opts, save)), resumedFrom };
  } finally {
    trainer.dispose();
  }
}

/** The steps of {@link runTraining} from wherever the trainer stands. */
async function loop(set: TrainingSet, trainer: NativeTrainer, rng: Rng, s: LoopSettings, opts: TrainLoopOptions, save: () => Promise<void>): Promise<Omit<TrainResult, "resumedFrom">> {
  const { phase, frozen, dim, steps } = s;
  const skillsForBatch = frozen ? opts.keys! : set.skills;
  const losses: number[] = [];
  const t0 = performance.now();
  let tokensDone = 0;
  let stepsDone = 0;
  let refreshes = 0;
  let val: RetrievalMetrics | undefined;
  const evalNow = async () => {
    if (set.val.length === 0) return undefined;
    const keys = frozen ? opts.keys : undefined, keyRows = frozen ? opts.keyRows : undefined;
    // Resident: the trainer scores its own store (no host projection); else the host's bank.
    if (holdsLibrary(trainer, set.skills.length)) return evaluateRetrievalResident(set.val, trainer, keys ?? set.skills, { keyRows });
    return evaluateRetrieval(set.val, set.skills, trainer.getWeights(), set.nEmbd, dim, keys, keyRows);
  };
  const resident = trainer.residentSkills > 0;
  const residentBytes = resident ? { residentBytes: trainer.residentBytes } : {};
  const pack = {
    resident,
    batchTasks: s.batchTasks, batchTokens: s.batchTokens, negatives: s.negatives, hardNegatives: s.hardNegatives, glanceNegatives: s.glanceNegatives,
    inBatch: s.inBatch, skillWidth: frozen ? dim : set.nEmbd, queryWidth: set.nEmbd, keyRows: frozen ? opts.keyRows : undefined,
  };
  while (trainer.steps < steps) {
    if (opts.signal?.aborted) {
      // the steps done so far are kept: the checkpoint is written first, and a resume goes on from it
      if (stepsDone > 0) await save();
      throw new GavelError(`training aborted at ${phase} step ${trainer.steps}${opts.checkpoint && stepsDone > 0 ? `; checkpoint written to ${opts.checkpoint} (resume to go on)` : ""}`, "ABORTED");
    }
    if (await maybeRefresh(set, trainer, s, opts)) refreshes++;
    const packed = packBatch(set.train, skillsForBatch, rng, pack);
    const { loss, gradNorm } = await trainer.step(packed.batch);
    losses.push(loss);
    tokensDone += packed.tokens;
    stepsDone++;
    const step = trainer.steps;
    const secs = (performance.now() - t0) / 1000;
    const stop = opts.stopAfterSeconds !== undefined && secs >= opts.stopAfterSeconds && step < steps;
    let v: RetrievalMetrics | undefined;
    if ((s.valEvery > 0 && step % s.valEvery === 0) || step === steps) v = val = await evalNow();
    if (step % s.checkpointEvery === 0 || step === steps || stop) await save();
    opts.onProgress?.({
      phase, step, steps, loss, gradNorm, tasks: packed.tasks, tokens: packed.tokens,
      tokensPerSec: tokensDone / secs, stepsPerSec: stepsDone / secs, val: v, ...residentBytes,
    });
    if (stop) break;
  }
  if (stepsDone === 0 && set.val.length > 0) val = await evalNow();
  const secs = (performance.now() - t0) / 1000;
  const w = trainer.getWeights();
  return {
    ...w, steps: trainer.steps, finished: trainer.steps >= steps, losses, val, refreshes, ...residentBytes,
    tokensPerSec: secs > 0 ? tokensDone / secs : 0, stepsPerSec: secs > 0 ? stepsDone / secs : 0,
  };
}
