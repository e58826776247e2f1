/**
 * The span mean m̄ of tasks against the whole library, computed by the trainer itself over its
 * resident store (the skills' states, or the fine-tune's unit keys, held as f16; on the GPU for a CUDA
 * trainer). The host path (retrieval.ts: project every skill, pack a KeyBank of every key, glance per
 * task) cost about as much as 2,600 training steps per round at 30K skills on the H100; here the
 * library never leaves the store: chunked `lossAndGrad(…, { keepPairs: true })` calls return
 * m = max_j ⟨q_i, d_j⟩ per (task, query row, candidate), and m̄ is their mean over the task's rows.
 *
 * The scores equal the host path's up to float rounding: the store's rows are f16-rounded (the host
 * projects f32 states), and a CUDA trainer in "bf16" precision searches the argmax in bf16 before
 * rescoring it in fp32 (only near ties may pick another key).
 *
 * @module
 */
import { config, invalidArgument, type NativeResidentBatch, type NativeTrainer } from "gavel-router/internal";
import { keptRows, type TrainingExample } from "./batch.js";
import { glanceList } from "./hard-negatives.js";
import { RetrievalTally, type RetrievalMetrics } from "./retrieval.js";

/** A task to score: its query states (rows × nEmbd) and, optionally, a gold scored without some rows. */
export type ScoredTask = Pick<TrainingExample, "query" | "mask">;

/** Options of {@link residentSpanMeanGroups}: how the work is cut into calls. */
export interface ResidentScoreOptions {
  /** Per skill, the state row of each resident key (the fine-tune's covers), so masks in state rows apply. */
  keyRows?: readonly Int32Array[];
  /** Tasks per group (default 256): each group's scores (tasks × skills float64) are held at once. */
  maxTasks?: number;
  /** Pairs (query rows × candidates) one call may return, m and argmax each (default 2²⁵). */
  maxPairs?: number;
  /**
   * Skill rows one call gathers (default 2¹⁷ on the CPU, 2¹⁹ for a CUDA trainer, or the
   * GAVEL_RESIDENT_ROWS environment variable): the trainer's buffers scale with it, about
   * (nEmbd + 2.5·dim) × 4 bytes a row (the gathered states, the keys, their zero gradient, bf16
   * copies), ~1.2 GB at nEmbd 384, dim 768. A CUDA trainer's device buffers only grow, so this is
   * held for the rest of the run; training batches (batchTokens, 16K rows by default) stay below it.
   */
  maxRows?: number;
  /** Skills one call names (default 2048). */
  maxEntries?: number;
}

/** Scores of one group of tasks: `scores[k]` is task `first + k`'s m̄ over every skill. */
export interface ScoreGroup {
  first: number;
  scores: Float64Array[];
}

/**
 * Whether the trainer's resident store can stand for a library of `nSkills` skills (entry s = skill
 * s): it holds exactly that many. Nothing cheaper can check the rows themselves; runTraining's
 * uploadSkills is what puts them there.
 */
export function holdsLibrary(trainer: NativeTrainer, nSkills: number): boolean {
  return nSkills > 0 && trainer.residentSkills === nSkills;
}

/**
 * Skill rows a scoring call gathers when the caller names none. The GPU gets 4× the CPU's: a refresh
 * of 1,024 tasks over 30.5K skills made 432 calls of 2¹⁷ rows on the H200 (71.5 s), each
 * with its own launch, copies and host accumulation, for work that fills the card in far fewer.
 */
function defaultMaxRows(trainer: NativeTrainer): number {
  const rows = config().residentRows;
  if (rows !== undefined) return rows;
  return trainer.device === "cuda" ? 2 ** 19 : 2 ** 17;
}

/** Consecutive non-empty skills per call, within the entry and row budgets (the first always fits). */
function skillChunks(rows: Int32Array, maxEntries: number, maxRows: number): Int32Array[] {
  const chunks: Int32Array[] = [];
  let cur: number[] = [];
  let curRows = 0;
  rows.forEach((r, s) => {
    if (r === 0) return;
    if (cur.length > 0 && (cur.length === maxEntries || curRows + r > maxRows)) {
      chunks.push(Int32Array.from(cur));
      cur = [];
      curRows = 0;
    }
    cur.push(s);
    curRows += r;
  });
  if (cur.length > 0) chunks.push(Int32Array.from(cur));
  return chunks;
}

/** One group's tasks, packed once for all of its calls. */
interface Group {
  queryStates: Float32Array;
  queryOffsets: Int32Array;
  /** Per task: the rows its masked gold keeps (undefined: no mask, or one that would keep nothing). */
  keep: (Int32Array | undefined)[];
  masked: Int32Array;
}

function packGroup(tasks: readonly ScoredTask[], nEmbd: number, rows: Int32Array, keyRows?: readonly Int32Array[]): Group {
  const queryOffsets = new Int32Array(tasks.length + 1);
  tasks.forEach((t, k) => (queryOffsets[k + 1] = queryOffsets[k] + t.query.length / nEmbd));
  const queryStates = new Float32Array(queryOffsets[tasks.length] * nEmbd);
  tasks.forEach((t, k) => queryStates.set(t.query, queryOffsets[k] * nEmbd));
  // As spanMeanScores: a mask applies to a skill with rows and only when it leaves some.
  const keep = tasks.map((t) => (t.mask && rows[t.mask.skill] > 0 ? keptRows(rows[t.mask.skill], t.mask.ranges, keyRows?.[t.mask.skill]) : undefined));
  const masked = Int32Array.from(tasks, (t, k) => (keep[k] ? t.mask!.skill : -1));
  return { queryStates, queryOffsets, keep, masked };
}

/**
 * The resident batch scoring group `g` against `chunk`: entries 0 … E−1 are the chunk's skills (all
 * rows), then one entry per task whose masked gold lies in the chunk, which replaces the unmasked
 * entry in that task's candidates alone. Every candidate is flagged positive: the loss needs one per
 * task, and with all of them positive it is 0 with every gradient coefficient exactly 0 (so the CPU
 * backward skips its GEMMs); the loss and gradients are ignored.
 */
function scoringBatch(g: Group, chunk: Int32Array): { batch: NativeResidentBatch; maskedAt: Int32Array } {
  const E = chunk.length;
  const nTasks = g.keep.length;
  const local = new Map<number, number>();
  chunk.forEach((s, c) => local.set(s, c));
  const refs = [...chunk];
  const keepParts: Int32Array[] = [];
  // Per task: the chunk position its masked entry replaces (−1: none).
  const maskedAt = new Int32Array(nTasks).fill(-1);
  const candidates = new Int32Array(nTasks * E);
  for (let k = 0; k < nTasks; k++) {
    for (let c = 0; c < E; c++) candidates[k * E + c] = c;
    const c = g.masked[k] >= 0 ? local.get(g.masked[k]) : undefined;
    if (c === undefined) continue;
    maskedAt[k] = c;
    candidates[k * E + c] = refs.length;
    refs.push(g.masked[k]);
    keepParts.push(g.keep[k]!);
  }
  const keepOffsets = new Int32Array(refs.length + 1);
  keepParts.forEach((p, j) => (keepOffsets[E + j + 1] = keepOffsets[E + j] + p.length));
  const keepRows = new Int32Array(keepOffsets[refs.length]);
  keepParts.forEach((p, j) => keepRows.set(p, keepOffsets[E + j]));
  const candidateOffsets = Int32Array.from({ length: nTasks + 1 }, (_, k) => k * E);
  const batch: NativeResidentBatch = {
    queryStates: g.queryStates, queryOffsets: g.queryOffsets, skillRefs: Int32Array.from(refs), keepOffsets, keepRows,
    candidateOffsets, candidates, positive: new Uint8Array(candidates.length).fill(1),
  };
  return { batch, maskedAt };
}

/** Adds one call's pairs to the group's m̄ (summed as spanMeanScores sums them, for the same values). */
function accumulate(m: Float32Array, g: Group, chunk: Int32Array, maskedAt: Int32Array, out: Float64Array[]): void {
  const E = chunk.length;
  let at = 0;
  for (let k = 0; k < out.length; k++) {
    const nq = g.queryOffsets[k + 1] - g.queryOffsets[k];
    const mbar = out[k];
    const mc = maskedAt[k];
    let maskedSum = 0;
    for (let i = 0; i < nq; i++, at += E) {
      for (let c = 0; c < E; c++) if (c !== mc) mbar[chunk[c]] += m[at + c] / nq;
      if (mc >= 0) maskedSum += m[at + mc];
    }
    if (mc >= 0) mbar[chunk[mc]] = maskedSum / nq;
  }
}

/**
 * m̄(s) = mean over a task's query rows of max_j ⟨q_i, d^s_j⟩ for every resident skill s (−∞ for a
 * skill with 0 rows, which is never sent), with q = normalize(W_q h) and d the store's rows through
 * normalize(W_s h) (or the given keys while freezeWs), by the trainer's current weights. A task's
 * masked gold is scored over its kept rows, as in training and retrieval.ts's `spanMeanScores`. Tasks come
 * back in groups of `maxTasks`, in order, so that only one group's scores are held at a time.
 *
 * @param skills - what the store holds, per skill, in library order (states rows × nEmbd, or keys
 *   rows × dim while freezeWs): only their row counts are read.
 * @throws GavelError `INVALID_ARGUMENT` when the store does not hold `skills.length` skills or a
 *   query is not rows × nEmbd; the trainer's own errors (e.g. `OUT_OF_MEMORY`) pass through.
 */
export async function* residentSpanMeanGroups(trainer: NativeTrainer, skills: readonly Float32Array[], tasks: readonly ScoredTask[], o: ResidentScoreOptions = {}): AsyncGenerator<ScoreGroup> {
  const { nEmbd } = trainer;
  const width = trainer.freezeWs ? trainer.dim : nEmbd;
  if (trainer.residentSkills !== skills.length) throw invalidArgument(`the trainer's resident store holds ${trainer.residentSkills} skills, not the library's ${skills.length}`);
  const rows = Int32Array.from(skills, (s) => s.length / width);
  tasks.forEach((t, k) => {
    if (t.query.length === 0 || t.query.length % nEmbd !== 0) throw invalidArgument(`tasks[${k}].query must be rows × ${nEmbd} (≥ 1 row)`);
  });
  const maxTasks = o.maxTasks ?? 256, maxPairs = o.maxPairs ?? 2 ** 25;
  for (let first = 0; first < tasks.length; first += maxTasks) {
    const part = tasks.slice(first, first + maxTasks);
    const g = packGroup(part, nEmbd, rows, o.keyRows);
    const scores = part.map(() => Float64Array.from(rows, (r) => (r > 0 ? 0 : -Infinity)));
    // The pair budget caps the candidates of a call for this group's query rows.
    const entries = Math.max(1, Math.min(o.maxEntries ?? 2048, Math.floor(maxPairs / g.queryOffsets[part.length])));
    for (const chunk of skillChunks(rows, entries, o.maxRows ?? defaultMaxRows(trainer))) {
      const { batch, maskedAt } = scoringBatch(g, chunk);
      const { pairs } = await trainer.lossAndGrad(batch, { keepPairs: true });
      accumulate(pairs!.m, g, chunk, maskedAt, scores);
    }
    yield { first, scores };
  }
}

/** Every task's m̄ at once ({@link residentSpanMeanGroups}; tasks × skills float64 held together). */
export async function residentSpanMeans(trainer: NativeTrainer, skills: readonly Float32Array[], tasks: readonly ScoredTask[], o: ResidentScoreOptions = {}): Promise<Float64Array[]> {
  const out: Float64Array[] = [];
  for await (const g of residentSpanMeanGroups(trainer, skills, tasks, o)) out.push(...g.scores);
  return out;
}

/**
 * retrieval.ts's `evaluateRetrieval` by the trainer's resident store: the same Hit@1 / R@10 / R@20 by m̄,
 * masked golds scored without their masked rows (`o.keyRows` when the store holds cover keys).
 */
export async function evaluateRetrievalResident(examples: readonly TrainingExample[], trainer: NativeTrainer, skills: readonly Float32Array[], o: ResidentScoreOptions = {}): Promise<RetrievalMetrics> {
  const tally = new RetrievalTally();
  for await (const g of residentSpanMeanGroups(trainer, skills, examples, o)) g.scores.forEach((sc, k) => tally.add(examples[g.first + k], sc));
  return tally.metrics();
}

/**
 * hard-negatives.ts's `refreshGlanceNegatives` by the trainer's resident store: each chosen example's `glance`
 * becomes the `pool` skills of highest unmasked m̄, golds and twins left out.
 */
export async function refreshGlanceNegativesResident(examples: readonly TrainingExample[], trainer: NativeTrainer, skills: readonly Float32Array[], pool: number, which: readonly number[], o: ResidentScoreOptions = {}): Promise<void> {
  // As the host refresh: the glance ranks by unmasked scores (the golds are left out anyway).
  const tasks = which.map((i) => ({ query: examples[i].query }));
  for await (const g of residentSpanMeanGroups(trainer, skills, tasks, o)) {
    g.scores.forEach((sc, k) => {
      const ex = examples[which[g.first + k]];
      ex.glance = glanceList(ex, sc, pool);
    });
  }
}
