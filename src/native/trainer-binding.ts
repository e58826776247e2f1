/** The addon's trainer surface (native/src/train), re-exported by binding.ts. */

/** Options of the {@link NativeTrainer} constructor. */
export interface NativeTrainerOptions {
  /** Width of the backbone's residual stream (columns of W_q and W_s). */
  nEmbd: number;
  /** Rows of W_q and W_s: the width of queries and keys. */
  dim: number;
  /** Contrastive temperature τ (default 40). */
  tau?: number;
  /** AdamW learning rate (default 1e-3). */
  lr?: number;
  beta1?: number;
  beta2?: number;
  eps?: number;
  /** Decoupled weight decay (default 0.01). */
  weightDecay?: number;
  /** Train W_q alone against given unit keys (the ε-cover banks) instead of W_s-projected states. */
  freezeWs?: boolean;
  /** Seed of the N(0, 1/nEmbd) initialisation of both maps (default 0). */
  seed?: number;
  /** Worker threads (0 or absent: every core). */
  threads?: number;
  /**
   * Where the weights live and the step runs (default "cpu"). "cuda" keeps W_q, W_s and AdamW's
   * moments on the GPU between steps (each step uploads its batch); a CPU build, or a CUDA build
   * without a device, throws CUDA_UNAVAILABLE.
   */
  device?: "cpu" | "cuda";
  /**
   * The CUDA trainer's max-sim (default "bf16"): "bf16" searches the argmax key on bf16 tensor cores
   * and rescores it in fp32 (everything else stays fp32, so only near ties may pick another key);
   * "fp32" computes every product in fp32 (the exact twin of the CPU). Ignored by the CPU trainer.
   */
  precision?: "bf16" | "fp32";
}

/** Wall-clock milliseconds of one step: the batch's upload to the device (0 on the CPU) and the rest. */
export interface NativeStepTimings {
  uploadMs: number;
  computeMs: number;
}

/** Test options of {@link NativeTrainer.lossAndGrad} and {@link NativeTrainer.step} (the twins' comparison). */
export interface NativeLossAndGradOptions {
  /** Return m and the argmax of every (task, query row, candidate) pair. */
  keepPairs?: boolean;
  /**
   * One key index (within the skill) per pair, replacing the max-sim's search: each pair then
   * scores its given key. Pair order: task t, its query rows i, its candidates c.
   */
  forceArgmax?: Int32Array;
}

/**
 * One training batch. Task t's query states are rows queryOffsets[t] … queryOffsets[t+1] − 1 of
 * queryStates (nEmbd floats each); skill s's rows are skillOffsets[s] … skillOffsets[s+1] − 1 of
 * skillStates (nEmbd-wide states, or dim-wide unit keys while freezeWs); task t's candidates are
 * candidates[candidateOffsets[t] …] (distinct skill indices) with positive[] flags (0/1, ≥ 1 per task).
 */
export interface NativeTrainBatch {
  queryStates: Float32Array;
  queryOffsets: Int32Array;
  skillStates: Float32Array;
  skillOffsets: Int32Array;
  candidateOffsets: Int32Array;
  candidates: Int32Array;
  positive: Uint8Array;
}

/**
 * A batch over the trainer's resident skills ({@link NativeTrainer.addSkills}): the queries cross as
 * in {@link NativeTrainBatch}, the skills are named. Entry e is resident skill skillRefs[e] with its
 * rows keepRows[keepOffsets[e] … keepOffsets[e+1] − 1] (strictly increasing rows of that skill; an
 * empty range, or no keepOffsets at all, keeps every row); candidates index entries. The trainer
 * gathers the rows itself (CUDA: on the device), the rows an explicit batch of the f16-rounded states
 * would carry, so both give the same loss and gradients.
 */
export interface NativeResidentBatch {
  queryStates: Float32Array;
  queryOffsets: Int32Array;
  skillRefs: Int32Array;
  keepOffsets?: Int32Array;
  keepRows?: Int32Array;
  candidateOffsets: Int32Array;
  candidates: Int32Array;
  positive: Uint8Array;
}

/** Everything a checkpoint needs: both maps, AdamW's moments and the step count. */
export interface NativeTrainerState {
  step: number;
  wq: Float32Array;
  ws: Float32Array;
  mWq: Float32Array;
  vWq: Float32Array;
  mWs: Float32Array;
  vWs: Float32Array;
}

/**
 * W_q, W_s (dim × nEmbd, row-major fp32) and their AdamW state, held natively. step and lossAndGrad
 * run off the JS thread over a copy of the batch; while one is in flight every other method throws
 * INVALID_ARGUMENT (await it first).
 */
export interface NativeTrainer {
  /** Forward, exact backward and one AdamW update (W_q only while freezeWs). */
  step(
    batch: NativeTrainBatch | NativeResidentBatch,
    options?: NativeLossAndGradOptions,
  ): Promise<{ loss: number; gradNorm: number; timings: NativeStepTimings; pairs?: { m: Float32Array; argmax: Int32Array } }>;
  /** Loss and gradients without an update (gradWs is null while freezeWs). */
  lossAndGrad(
    batch: NativeTrainBatch | NativeResidentBatch,
    options?: NativeLossAndGradOptions,
  ): Promise<{
    loss: number;
    gradWq: Float32Array;
    gradWs: Float32Array | null;
    timings: NativeStepTimings;
    /** With keepPairs: per pair, m and the argmax key (index within its skill). */
    pairs?: { m: Float32Array; argmax: Int32Array };
  }>;
  /**
   * Appends skills to the resident store, held as IEEE binary16 (round to nearest even): on the GPU
   * for a CUDA trainer, in host memory for the CPU one. Skill i has rows[i] rows (0 allowed) of
   * nEmbd floats (dim while freezeWs: unit keys), one after another in `states`. Memory comes in
   * chunks of at most 256 MiB (or one skill); all or nothing.
   * @returns the store's skill count (the library index of the next skill added)
   * @throws GavelError `INVALID_ARGUMENT` for bad shapes, a value that is not finite or beyond
   *   binary16's range (|x| ≥ 65520), widths other than the store's; `OUT_OF_MEMORY` when a chunk
   *   cannot be allocated (the store then stays as it was).
   */
  addSkills(states: Float32Array, rows: Int32Array): number;
  /** Empties the resident store and frees its memory. */
  clearSkills(): void;
  /** Skills in the resident store. */
  readonly residentSkills: number;
  /** Bytes the resident store's chunks take (device memory for a CUDA trainer). */
  readonly residentBytes: number;
  getWeights(): { wq: Float32Array; ws: Float32Array };
  /** Replaces both maps; AdamW's moments and step count are kept. */
  setWeights(wq: Float32Array, ws: Float32Array): void;
  getState(): NativeTrainerState;
  setState(state: NativeTrainerState): void;
  /**
   * Frees the weights and optimizer state. A step in flight finishes and settles as usual over its
   * own copy, freed when it ends. Idempotent; every other method and accessor then throws DISPOSED
   * (step and lossAndGrad reject with it).
   */
  dispose(): void;
  freezeWs: boolean;
  lr: number;
  /** AdamW updates taken so far. */
  readonly steps: number;
  readonly nEmbd: number;
  readonly dim: number;
  /** "cuda" when the weights live on the GPU. */
  readonly device: "cpu" | "cuda";
  /** "bf16" for a CUDA trainer searching on bf16 tensor cores, else "fp32". */
  readonly precision: "bf16" | "fp32";
}

