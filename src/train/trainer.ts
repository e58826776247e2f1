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
import { createHash, randomBytes } from "node:crypto";
import { open, readFile, rename, rm } from "node:fs/promises";
import { dirname } from "node:path";
import { GavelError, invalidArgument } from "../errors.js";
import { fsyncDir } from "../util/durable-file.js";
import { loadBinding, type NativeTrainBatch, type NativeTrainer, type NativeTrainerOptions, type NativeTrainerState } from "../native/binding.js";
import { glance, projectNormalize } from "../kernels/kernels.js";

export type { NativeTrainBatch, NativeTrainer, NativeTrainerOptions, NativeTrainerState };

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

function posInt(v: unknown, name: string, min = 1): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > 0x7fffffff) {
    throw invalidArgument(`${name} must be an integer ≥ ${min}, got ${String(v)}`);
  }
  return v;
}

/**
 * A native trainer with W_q, W_s drawn i.i.d. N(0, 1/nEmbd) from `seed` and fresh AdamW state.
 * @throws GavelError `INVALID_ARGUMENT` for bad options.
 */
export function createTrainer(options: NativeTrainerOptions): NativeTrainer {
  if (typeof options !== "object" || options === null) throw invalidArgument("createTrainer: options must be an object");
  posInt(options.nEmbd, "nEmbd");
  posInt(options.dim, "dim");
  for (const k of ["tau", "lr", "beta1", "beta2", "eps", "weightDecay"] as const) {
    const v = options[k];
    if (v !== undefined && (typeof v !== "number" || !Number.isFinite(v) || v < 0)) throw invalidArgument(`${k} must be a finite number ≥ 0, got ${String(v)}`);
  }
  return new (loadBinding().NativeTrainer)(options);
}

// ---- data --------------------------------------------------------------------------------------

/** One training (or validation) task: its query states and the indices of its gold skills. */
export interface TrainingExample {
  /** n × nEmbd backbone states of the task's tokens (n ≥ 1). */
  query: Float32Array;
  /** Gold skills (indices into {@link TrainingSet.skills}), at least one. */
  positives: number[];
  /**
   * Hard negatives: skills that resemble the task without answering it (e.g. BM25's top hits minus
   * the golds and their copies), most similar first. {@link PackOptions.hardNegatives} of each
   * task's negatives are drawn from here.
   */
  hard?: number[];
}

/** Everything a run trains on, in memory (nTokens × nEmbd × 4 bytes). */
export interface TrainingSet {
  nEmbd: number;
  /** Per skill: rows × nEmbd states of its keyed tokens (a skill with 0 rows is never a candidate). */
  skills: Float32Array[];
  train: TrainingExample[];
  val: TrainingExample[];
}

/** mulberry32: a 32-bit state, so a checkpoint can store it and a resumed run draws the same batches. */
export class Rng {
  constructor(public state: number) {
    this.state = state >>> 0;
  }
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
}

/** Options of {@link packBatch}. */
export interface PackOptions {
  batchTasks: number;
  batchTokens: number;
  negatives: number;
  /** Of those negatives, how many come from the task's {@link TrainingExample.hard} list (default 0). */
  hardNegatives?: number;
  /**
   * In-batch negatives: every skill the batch carries (another task's gold or negative) is also a
   * candidate of every task it is not gold for. More negatives at no cost in rows of states.
   */
  inBatch?: boolean;
  /** Row width of the skills' entries (nEmbd for states, dim for given keys). */
  skillWidth: number;
  /** Row width of the queries' states (nEmbd). */
  queryWidth: number;
}

/** A packed batch plus what it cost. */
export interface PackedBatch {
  batch: NativeTrainBatch;
  tasks: number;
  /** Rows of states in the batch (query tokens + distinct skills' tokens). */
  tokens: number;
}

/**
 * Packs tasks drawn at random (with replacement) with their gold skills and `negatives` negatives
 * resampled from the rest of the library, until `batchTasks` tasks or until the next task would push
 * the distinct rows past `batchTokens` (the first task always goes in). A skill shared by several
 * tasks of the batch is sent once.
 */
export function packBatch(examples: readonly TrainingExample[], skills: readonly Float32Array[], rng: Rng, o: PackOptions): PackedBatch {
  if (examples.length === 0) throw invalidArgument("packBatch: no training example");
  const rows = skills.map((s) => s.length / o.skillWidth);
  const usable: number[] = [];
  rows.forEach((r, i) => r > 0 && usable.push(i));
  const local = new Map<number, number>();
  const order: number[] = [];
  const tasks: { ex: TrainingExample; cand: number[]; pos: number[] }[] = [];
  let tokens = 0;
  while (tasks.length < o.batchTasks) {
    const ex = examples[rng.int(examples.length)];
    const posSet = new Set(ex.positives);
    const hard = sampleHard(ex.hard, rows, posSet, Math.min(o.hardNegatives ?? 0, o.negatives), rng);
    const taken = new Set([...posSet, ...hard]);
    const negs = [...hard, ...sampleNegatives(usable, taken, o.negatives - hard.length, rng)];
    const cand = [...ex.positives, ...negs];
    let cost = ex.query.length / o.queryWidth;
    for (const s of cand) if (!local.has(s)) cost += rows[s];
    if (tasks.length > 0 && tokens + cost > o.batchTokens) break;
    tokens += cost;
    for (const s of cand) {
      if (!local.has(s)) {
        local.set(s, order.length);
        order.push(s);
      }
    }
    tasks.push({ ex, cand, pos: cand.map((s) => (posSet.has(s) ? 1 : 0)) });
  }
  if (o.inBatch) {
    // Each task: its own candidates first (as drawn), then every other skill of the batch that is
    // not one of its golds.
    for (const t of tasks) {
      const own = new Set(t.cand);
      const gold = new Set(t.ex.positives);
      for (const s of order) {
        if (own.has(s)) continue;
        t.cand.push(s);
        t.pos.push(gold.has(s) ? 1 : 0);
      }
    }
  }
  const qWidth = o.queryWidth;
  const qRows = tasks.map((t) => t.ex.query.length / qWidth);
  const nQ = qRows.reduce((a, b) => a + b, 0);
  const queryStates = new Float32Array(nQ * qWidth);
  const queryOffsets = new Int32Array(tasks.length + 1);
  tasks.forEach((t, i) => {
    queryStates.set(t.ex.query, queryOffsets[i] * qWidth);
    queryOffsets[i + 1] = queryOffsets[i] + qRows[i];
  });
  const skillOffsets = new Int32Array(order.length + 1);
  order.forEach((s, i) => (skillOffsets[i + 1] = skillOffsets[i] + rows[s]));
  const skillStates = new Float32Array(skillOffsets[order.length] * o.skillWidth);
  order.forEach((s, i) => skillStates.set(skills[s], skillOffsets[i] * o.skillWidth));
  const candidateOffsets = new Int32Array(tasks.length + 1);
  tasks.forEach((t, i) => (candidateOffsets[i + 1] = candidateOffsets[i] + t.cand.length));
  const candidates = new Int32Array(candidateOffsets[tasks.length]);
  const positive = new Uint8Array(candidates.length);
  tasks.forEach((t, i) => {
    t.cand.forEach((s, j) => {
      candidates[candidateOffsets[i] + j] = local.get(s)!;
      positive[candidateOffsets[i] + j] = t.pos[j];
    });
  });
  return { batch: { queryStates, queryOffsets, skillStates, skillOffsets, candidateOffsets, candidates, positive }, tasks: tasks.length, tokens };
}

/**
 * Checks a training set's shapes.
 * @throws GavelError `INVALID_ARGUMENT` on a shape error, a gold skill out of range or without rows.
 */
export function makeTrainingSet(set: TrainingSet): TrainingSet {
  const { nEmbd } = set;
  posInt(nEmbd, "nEmbd");
  set.skills.forEach((s, i) => {
    if (!(s instanceof Float32Array) || s.length % nEmbd !== 0) throw invalidArgument(`skills[${i}] must be a Float32Array of rows × nEmbd`);
  });
  for (const [name, list] of [["train", set.train], ["val", set.val]] as const) {
    list.forEach((ex, i) => {
      if (!(ex.query instanceof Float32Array) || ex.query.length === 0 || ex.query.length % nEmbd !== 0) {
        throw invalidArgument(`${name}[${i}].query must be a non-empty Float32Array of rows × nEmbd`);
      }
      if (!Array.isArray(ex.positives) || ex.positives.length === 0) throw invalidArgument(`${name}[${i}] has no gold skill`);
      for (const p of ex.positives) {
        if (!Number.isInteger(p) || p < 0 || p >= set.skills.length) throw invalidArgument(`${name}[${i}]: gold skill ${p} is out of range`);
        if (set.skills[p].length === 0) throw invalidArgument(`${name}[${i}]: gold skill ${p} has no keyed tokens`);
      }
    });
  }
  if (set.train.length === 0) throw invalidArgument("the training split is empty");
  return set;
}

/** Up to `want` distinct skills drawn uniformly from `hard` (skills with rows, not gold). */
function sampleHard(hard: readonly number[] | undefined, rows: readonly number[], pos: Set<number>, want: number, rng: Rng): number[] {
  if (!hard || want <= 0) return [];
  const pool = [...new Set(hard)].filter((s) => s >= 0 && s < rows.length && rows[s] > 0 && !pos.has(s));
  const n = Math.min(want, pool.length);
  for (let i = 0; i < n; i++) {
    const j = i + rng.int(pool.length - i);
    [pool[i], pool[j]] = [pool[j], pool[i]];
  }
  return pool.slice(0, n);
}

function sampleNegatives(usable: readonly number[], pos: Set<number>, want: number, rng: Rng): number[] {
  const pool = usable.length - usable.filter((s) => pos.has(s)).length;
  const n = Math.min(want, pool);
  if (n <= 0) return [];
  if (n * 2 >= pool) {
    // Most of the rest: a partial Fisher–Yates over the complement.
    const rest = usable.filter((s) => !pos.has(s));
    for (let i = 0; i < n; i++) {
      const j = i + rng.int(rest.length - i);
      [rest[i], rest[j]] = [rest[j], rest[i]];
    }
    return rest.slice(0, n);
  }
  const out = new Set<number>();
  while (out.size < n) {
    const s = usable[rng.int(usable.length)];
    if (!pos.has(s)) out.add(s);
  }
  return [...out];
}

// ---- evaluation --------------------------------------------------------------------------------

/** Retrieval by the training score m̄ over the whole library. */
export interface RetrievalMetrics {
  /** Fraction of tasks whose top skill (by m̄) is gold. */
  hit1: number;
  /** Mean over tasks of |top-10 ∩ gold| / |gold|. */
  recall10: number;
  tasks: number;
}

/**
 * Hit@1 and R@10 of `examples` against every skill, ranking by the span mean m̄(s) (what the loss
 * trains; the serving vote g is the router's business). `keys` replaces the W_s-projected states
 * with given unit keys per skill (the ε-cover banks of the fine-tune).
 */
export async function evaluateRetrieval(
  examples: readonly TrainingExample[],
  skills: readonly Float32Array[],
  weights: { wq: Float32Array; ws: Float32Array },
  nEmbd: number,
  dim: number,
  keys?: readonly Float32Array[],
): Promise<RetrievalMetrics> {
  if (examples.length === 0) return { hit1: 0, recall10: 0, tasks: 0 };
  const bankParts = keys ?? (await Promise.all(skills.map((s) => (s.length > 0 ? projectNormalize(s, nEmbd, weights.ws, dim) : new Float32Array(0)))));
  const offsets = new Int32Array(bankParts.length + 1);
  bankParts.forEach((k, i) => (offsets[i + 1] = offsets[i] + k.length / dim));
  const bank = new Float32Array(offsets[bankParts.length] * dim);
  bankParts.forEach((k, i) => bank.set(k, offsets[i] * dim));
  const N = bankParts.length;
  let hit = 0;
  let rec = 0;
  for (const ex of examples) {
    const q = await projectNormalize(ex.query, nEmbd, weights.wq, dim);
    const nq = q.length / dim;
    const { m } = await glance(q, bank, offsets, dim, { k: 1 });
    const mbar = new Float64Array(N);
    for (let i = 0; i < nq; i++) for (let s = 0; s < N; s++) mbar[s] += m[i * N + s] / nq;
    // Skills without keys never rank.
    for (let s = 0; s < N; s++) if (offsets[s + 1] === offsets[s]) mbar[s] = -Infinity;
    const order = [...mbar.keys()].sort((a, b) => mbar[b] - mbar[a] || a - b);
    const gold = new Set(ex.positives);
    if (gold.has(order[0])) hit++;
    rec += order.slice(0, 10).filter((s) => gold.has(s)).length / gold.size;
  }
  return { hit1: hit / examples.length, recall10: rec / examples.length, tasks: examples.length };
}

// ---- checkpoints -------------------------------------------------------------------------------

const CKPT_MAGIC = "GVLTRN01";

/** What a checkpoint holds besides the trainer's state. */
export interface CheckpointMeta {
  phase: "main" | "finetune";
  /** Sampler RNG state after the checkpointed step. */
  rng: number;
  /** Hash of the run's configuration; a resume under another configuration is refused. */
  config: string;
  nEmbd: number;
  dim: number;
  /** The fine-tune's starting weights are the main phase's result; kept for reports. */
  mainSteps?: number;
}

/** Writes a checkpoint atomically (temp file, fsync, rename, directory fsync). */
export async function saveCheckpoint(path: string, meta: CheckpointMeta, state: NativeTrainerState): Promise<void> {
  const json = Buffer.from(JSON.stringify({ ...meta, step: state.step }), "utf8");
  const pad = (4 - ((8 + 4 + json.length) % 4)) % 4;
  const head = Buffer.alloc(8 + 4 + json.length + pad, 0x20);
  head.write(CKPT_MAGIC, 0, "latin1");
  head.writeUInt32LE(json.length + pad, 8);
  json.copy(head, 12);
  const arrays = [state.wq, state.ws, state.mWq, state.vWq, state.mWs, state.vWs];
  const tmp = `${path}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    const fh = await open(tmp, "w");
    try {
      await fh.write(head);
      for (const a of arrays) await fh.write(new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  await fsyncDir(dirname(path));
}

/**
 * Reads a checkpoint, or returns undefined when there is none at `path`.
 * @throws GavelError `CORRUPT_FILE` for a file that is not a complete checkpoint.
 */
export async function loadCheckpoint(path: string): Promise<{ meta: CheckpointMeta; state: NativeTrainerState } | undefined> {
  let buf: Buffer;
  try {
    buf = await readFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new GavelError(`${path}: ${(err as Error).message}`, "FILE_NOT_FOUND", { cause: err });
  }
  const corrupt = (why: string) => new GavelError(`${path}: not a gavel training checkpoint (${why})`, "CORRUPT_FILE");
  if (buf.length < 12 || buf.toString("latin1", 0, 8) !== CKPT_MAGIC) throw corrupt("bad magic");
  const jlen = buf.readUInt32LE(8);
  let meta: CheckpointMeta & { step: number };
  try {
    meta = JSON.parse(buf.toString("utf8", 12, 12 + jlen));
  } catch {
    throw corrupt("bad header");
  }
  const n = meta.nEmbd * meta.dim;
  const start = 12 + jlen;
  if (!Number.isInteger(n) || n <= 0 || buf.length !== start + 6 * n * 4) throw corrupt("wrong size");
  const all = new Float32Array(buf.buffer.slice(buf.byteOffset + start, buf.byteOffset + buf.length));
  const part = (i: number) => all.slice(i * n, (i + 1) * n);
  const { step, ...rest } = meta;
  return { meta: rest, state: { step, wq: part(0), ws: part(1), mWq: part(2), vWq: part(3), mWs: part(4), vWs: part(5) } };
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

/**
 * Trains W_q and W_s (or W_q alone, phase "finetune") on a {@link TrainingSet}: each step packs a
 * batch ({@link packBatch}), runs the native forward, exact backward and AdamW update, and reports
 * progress; checkpoints are atomic and a resumed run draws the same batches as an uninterrupted one
 * (the sampler's RNG state is checkpointed), so it ends with the same weights.
 */
export async function runTraining(set: TrainingSet, opts: TrainLoopOptions): Promise<TrainResult> {
  makeTrainingSet(set);
  const phase = opts.phase ?? "main";
  const frozen = phase === "finetune";
  const dim = posInt(opts.dim, "dim");
  const steps = posInt(opts.steps, "steps", 0);
  const batchTasks = posInt(opts.batchTasks ?? TRAIN_DEFAULTS.batchTasks, "batchTasks");
  const batchTokens = posInt(opts.batchTokens ?? TRAIN_DEFAULTS.batchTokens, "batchTokens");
  const negatives = posInt(opts.negatives ?? TRAIN_DEFAULTS.negatives, "negatives", 0);
  const hardNegatives = posInt(opts.hardNegatives ?? 0, "hardNegatives", 0);
  const inBatch = opts.inBatch === true;
  const every = posInt(opts.checkpointEvery ?? TRAIN_DEFAULTS.checkpointEvery, "checkpointEvery");
  const valEvery = posInt(opts.valEvery ?? 0, "valEvery", 0);
  const seed = posInt(opts.seed ?? 0, "seed", 0);
  const lr = opts.lr ?? (frozen ? TRAIN_DEFAULTS.finetuneLr : TRAIN_DEFAULTS.lr);
  const tau = opts.tau ?? TRAIN_DEFAULTS.tau;
  if (frozen) {
    if (!opts.keys || opts.keys.length !== set.skills.length) throw invalidArgument("the fine-tune needs unit keys for every skill");
    opts.keys.forEach((k, i) => {
      if (!(k instanceof Float32Array) || k.length % dim !== 0) throw invalidArgument(`keys[${i}] must be a Float32Array of rows × dim`);
    });
  }
  const skillsForBatch = frozen ? opts.keys! : set.skills;
  const trainer = createTrainer({
    nEmbd: set.nEmbd, dim, tau, lr, weightDecay: opts.weightDecay ?? TRAIN_DEFAULTS.weightDecay,
    freezeWs: frozen, seed, threads: opts.threads,
  });
  if (opts.init) trainer.setWeights(opts.init.wq, opts.init.ws);
  const config = createHash("sha256")
    .update(JSON.stringify({ phase, nEmbd: set.nEmbd, dim, tau, lr, wd: opts.weightDecay ?? TRAIN_DEFAULTS.weightDecay, batchTasks, batchTokens, negatives, ...(hardNegatives ? { hardNegatives } : {}), ...(inBatch ? { inBatch } : {}), seed, nSkills: set.skills.length, nTrain: set.train.length }))
    .digest("hex")
    .slice(0, 16);
  // Distinct streams for the two phases of one seed.
  const rng = new Rng((seed ^ (frozen ? 0x5bd1e995 : 0x9e3779b9)) >>> 0);
  let resumedFrom = 0;
  if (opts.resume && opts.checkpoint) {
    const ck = await loadCheckpoint(opts.checkpoint);
    if (ck && ck.meta.phase === phase) {
      if (ck.meta.config !== config || ck.meta.nEmbd !== set.nEmbd || ck.meta.dim !== dim) {
        throw invalidArgument(`${opts.checkpoint} was written by a run with another configuration (data, sizes or hyper-parameters); start afresh or pass the same options`);
      }
      trainer.setState(ck.state);
      rng.state = ck.meta.rng >>> 0;
      resumedFrom = ck.state.step;
    }
  }
  const save = async () => {
    if (opts.checkpoint) await saveCheckpoint(opts.checkpoint, { phase, rng: rng.state, config, nEmbd: set.nEmbd, dim }, trainer.getState());
  };
  const losses: number[] = [];
  const t0 = performance.now();
  let tokensDone = 0;
  let stepsDone = 0;
  let val: RetrievalMetrics | undefined;
  const evalNow = async () => (set.val.length > 0 ? evaluateRetrieval(set.val, set.skills, trainer.getWeights(), set.nEmbd, dim, frozen ? opts.keys : undefined) : undefined);
  while (trainer.steps < steps) {
    if (opts.signal?.aborted) throw new GavelError("training aborted", "ABORTED");
    const packed = packBatch(set.train, skillsForBatch, rng, { batchTasks, batchTokens, negatives, hardNegatives, inBatch, skillWidth: frozen ? dim : set.nEmbd, queryWidth: set.nEmbd });
    const { loss, gradNorm } = await trainer.step(packed.batch);
    losses.push(loss);
    tokensDone += packed.tokens;
    stepsDone++;
    const step = trainer.steps;
    const secs = (performance.now() - t0) / 1000;
    let v: RetrievalMetrics | undefined;
    if ((valEvery > 0 && step % valEvery === 0) || step === steps) v = val = await evalNow();
    if (step % every === 0 || step === steps) await save();
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
