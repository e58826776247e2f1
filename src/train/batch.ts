/**
 * What training runs on, and its batches: the training set (backbone states of skills and tasks, in
 * memory), its shape checks, and the packing of one step's batch under a task and token budget, with
 * negatives resampled from the rest of the library each step (paper appendix C).
 *
 * @module
 */
import { invalidArgument } from "../errors.js";
import type { NativeTrainBatch } from "../native/binding.js";
import type { Rng } from "../util/prng.js";
import { checkInt } from "../util/validate.js";

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
  checkInt(nEmbd, "nEmbd", 1);
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

/** Up to `want` distinct skills with rows that are not in `pos`, drawn uniformly. */
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
