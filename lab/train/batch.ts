/**
 * What training runs on, and its batches: the training set (backbone states of skills and tasks, in
 * memory), its shape checks, and the packing of one step's batch under a task and token budget, with
 * negatives resampled from the rest of the library each step (paper appendix C).
 *
 * @module
 */
import { checkInt, invalidArgument, type NativeResidentBatch, type NativeTrainBatch, type Rng } from "gavel-router/internal";

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
  /**
   * Hard negatives from the current glance (the skills the trainer's own W_q / W_s rank highest),
   * refreshed by the trainer every few steps; {@link PackOptions.glanceNegatives} are drawn from here.
   */
  glance?: number[];
  /** Skills that are never negatives of this task: copies of a gold (same name or description). */
  twins?: number[];
  /**
   * Rows of one positive left out of its keys for this task: the rows (of `skills[skill]`'s states)
   * in the half-open ranges [ranges[0], ranges[1]), [ranges[2], ranges[3]), …, i.e. the tokens the
   * query copied (inverse cloze; docs/TRAINING.md). A mask that would leave nothing is ignored.
   */
  mask?: { skill: number; ranges: readonly number[] };
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
  /** And how many from its {@link TrainingExample.glance} list (default 0). */
  glanceNegatives?: number;
  /**
   * When the skills' entries are keys kept by a cover (the fine-tune), the state row each key came
   * from, per skill: a mask given in state rows then removes the keys of those rows.
   */
  keyRows?: readonly Int32Array[];
  /**
   * In-batch negatives: every skill the batch carries (another task's gold or negative) is also a
   * candidate of every task it is not gold for. More negatives at no cost in rows of states.
   */
  inBatch?: boolean;
  /** Row width of the skills' entries (nEmbd for states, dim for given keys). */
  skillWidth: number;
  /** Row width of the queries' states (nEmbd). */
  queryWidth: number;
  /**
   * Emit a {@link NativeResidentBatch} (the skills named by index, masked entries by their kept rows)
   * for a trainer holding `skills` as its resident store, instead of copying their states. The
   * sampler draws the same batches either way.
   */
  resident?: boolean;
}

/** A packed batch plus what it cost. */
export interface PackedBatch<B extends NativeTrainBatch | NativeResidentBatch = NativeTrainBatch> {
  batch: B;
  tasks: number;
  /** Rows of states in the batch (query tokens + distinct skills' tokens). */
  tokens: number;
}

/** One skill entry of a batch: a library skill, or a positive with some of its rows masked out. */
interface Entry {
  skill: number;
  /** Rows kept (undefined: all). */
  keep?: Int32Array;
  rows: number;
}

/** A task of a batch: its example and its candidates (entry keys) with positive flags. */
interface PackedTask {
  ex: TrainingExample;
  cand: string[];
  pos: number[];
  /** Skills never to be added as its in-batch negatives (golds, twins). */
  banned: Set<number>;
}

/**
 * The rows of a skill's entry that a mask keeps (state rows, or the keys whose `keyRows` are not
 * masked); undefined when nothing would be left (the mask is then ignored).
 */
export function keptRows(rows: number, ranges: readonly number[], keyRows?: Int32Array): Int32Array | undefined {
  const masked = (r: number) => {
    for (let i = 0; i + 1 < ranges.length; i += 2) if (r >= ranges[i] && r < ranges[i + 1]) return true;
    return false;
  };
  const keep: number[] = [];
  for (let i = 0; i < rows; i++) if (!masked(keyRows ? keyRows[i] : i)) keep.push(i);
  return keep.length > 0 ? Int32Array.from(keep) : undefined;
}

/**
 * The negatives of one task: `hardNegatives` from its hard list, `glanceNegatives` from its glance
 * list, the rest uniformly from the usable skills; never a gold or a twin, all distinct.
 */
function drawNegatives(ex: TrainingExample, banned: Set<number>, rows: readonly number[], usable: readonly number[], rng: Rng, o: PackOptions): number[] {
  const hard = sampleHard(ex.hard, rows, banned, Math.min(o.hardNegatives ?? 0, o.negatives), rng);
  const taken = new Set([...banned, ...hard]);
  const glance = sampleHard(ex.glance, rows, taken, Math.min(o.glanceNegatives ?? 0, o.negatives - hard.length), rng);
  for (const s of glance) taken.add(s);
  return [...hard, ...glance, ...sampleNegatives(usable, taken, o.negatives - hard.length - glance.length, rng)];
}

/**
 * Packs tasks drawn at random (with replacement) with their gold skills and `negatives` negatives
 * resampled from the rest of the library, until `batchTasks` tasks or until the next task would push
 * the distinct rows past `batchTokens` (the first task always goes in). A skill shared by several
 * tasks of the batch is sent once; a masked positive ({@link TrainingExample.mask}) is its own entry.
 */
export function packBatch(examples: readonly TrainingExample[], skills: readonly Float32Array[], rng: Rng, o: PackOptions & { resident: true }): PackedBatch<NativeResidentBatch>;
export function packBatch(examples: readonly TrainingExample[], skills: readonly Float32Array[], rng: Rng, o: PackOptions & { resident?: false }): PackedBatch;
export function packBatch(examples: readonly TrainingExample[], skills: readonly Float32Array[], rng: Rng, o: PackOptions): PackedBatch<NativeTrainBatch | NativeResidentBatch>;
export function packBatch(examples: readonly TrainingExample[], skills: readonly Float32Array[], rng: Rng, o: PackOptions): PackedBatch<NativeTrainBatch | NativeResidentBatch> {
  if (examples.length === 0) throw invalidArgument("packBatch: no training example");
  const rows = skills.map((s) => s.length / o.skillWidth);
  const usable: number[] = [];
  rows.forEach((r, i) => r > 0 && usable.push(i));
  const entries = new Map<string, Entry>();
  const tasks: PackedTask[] = [];
  let tokens = 0;
  while (tasks.length < o.batchTasks) {
    const ex = examples[rng.int(examples.length)];
    const posSet = new Set(ex.positives);
    const banned = new Set([...posSet, ...(ex.twins ?? [])]);
    const negs = drawNegatives(ex, banned, rows, usable, rng, o);
    const fresh = new Map<string, Entry>();
    const keyOf = (s: number): string => {
      if (ex.mask?.skill === s) {
        const keep = keptRows(rows[s], ex.mask.ranges, o.keyRows?.[s]);
        if (keep) {
          const key = `m${tasks.length}`;
          fresh.set(key, { skill: s, keep, rows: keep.length });
          return key;
        }
      }
      const key = String(s);
      if (!entries.has(key)) fresh.set(key, { skill: s, rows: rows[s] });
      return key;
    };
    const cand = [...ex.positives.map(keyOf), ...negs.map(keyOf)];
    let cost = ex.query.length / o.queryWidth;
    for (const e of fresh.values()) cost += e.rows;
    if (tasks.length > 0 && tokens + cost > o.batchTokens) break;
    tokens += cost;
    for (const [k, e] of fresh) entries.set(k, e);
    tasks.push({ ex, cand, pos: cand.map((_, j) => (j < ex.positives.length ? 1 : 0)), banned });
  }
  const order = [...entries.keys()];
  if (o.inBatch) {
    // Each task: its own candidates first (as drawn), then every other library skill of the batch
    // that is neither one of its golds nor a twin (masked entries belong to their own task alone).
    for (const t of tasks) {
      const own = new Set(t.cand);
      for (const key of order) {
        const e = entries.get(key)!;
        if (own.has(key) || e.keep || t.banned.has(e.skill)) continue;
        t.cand.push(key);
        t.pos.push(0);
      }
    }
  }
  return assemble(tasks, order, entries, skills, o);
}

/** The query part of a batch: every task's states one after another, and their offsets. */
function packQueries(tasks: readonly PackedTask[], qWidth: number): { queryStates: Float32Array; queryOffsets: Int32Array; nQ: number } {
  const qRows = tasks.map((t) => t.ex.query.length / qWidth);
  const nQ = qRows.reduce((a, b) => a + b, 0);
  const queryStates = new Float32Array(nQ * qWidth);
  const queryOffsets = new Int32Array(tasks.length + 1);
  tasks.forEach((t, i) => {
    queryStates.set(t.ex.query, queryOffsets[i] * qWidth);
    queryOffsets[i + 1] = queryOffsets[i] + qRows[i];
  });
  return { queryStates, queryOffsets, nQ };
}

/** The candidate part of a batch: per task its entries (local indices) and positive flags. */
function packCandidates(tasks: readonly PackedTask[], order: readonly string[]): { candidateOffsets: Int32Array; candidates: Int32Array; positive: Uint8Array } {
  const local = new Map(order.map((k, i) => [k, i]));
  const candidateOffsets = new Int32Array(tasks.length + 1);
  tasks.forEach((t, i) => (candidateOffsets[i + 1] = candidateOffsets[i] + t.cand.length));
  const candidates = new Int32Array(candidateOffsets[tasks.length]);
  const positive = new Uint8Array(candidates.length);
  tasks.forEach((t, i) => {
    t.cand.forEach((k, j) => {
      candidates[candidateOffsets[i] + j] = local.get(k)!;
      positive[candidateOffsets[i] + j] = t.pos[j];
    });
  });
  return { candidateOffsets, candidates, positive };
}

/** The resident batch of packed tasks: query states, entries by library index and kept rows, candidates. */
function assembleResident(tasks: readonly PackedTask[], order: readonly string[], entries: ReadonlyMap<string, Entry>, o: PackOptions): PackedBatch<NativeResidentBatch> {
  const { queryStates, queryOffsets, nQ } = packQueries(tasks, o.queryWidth);
  const skillRefs = new Int32Array(order.length);
  const keepOffsets = new Int32Array(order.length + 1);
  let rows = 0;
  order.forEach((k, i) => {
    const e = entries.get(k)!;
    skillRefs[i] = e.skill;
    keepOffsets[i + 1] = keepOffsets[i] + (e.keep ? e.keep.length : 0);
    rows += e.rows;
  });
  const keepRows = new Int32Array(keepOffsets[order.length]);
  order.forEach((k, i) => {
    const e = entries.get(k)!;
    if (e.keep) keepRows.set(e.keep, keepOffsets[i]);
  });
  const batch = { queryStates, queryOffsets, skillRefs, keepOffsets, keepRows, ...packCandidates(tasks, order) };
  return { batch, tasks: tasks.length, tokens: nQ + rows };
}

/** The native batch of packed tasks: query states, entries' states (masked rows left out), candidates. */
function assemble(tasks: readonly PackedTask[], order: readonly string[], entries: ReadonlyMap<string, Entry>, skills: readonly Float32Array[], o: PackOptions): PackedBatch<NativeTrainBatch | NativeResidentBatch> {
  if (o.resident) return assembleResident(tasks, order, entries, o);
  const { queryStates, queryOffsets, nQ } = packQueries(tasks, o.queryWidth);
  const w = o.skillWidth;
  const skillOffsets = new Int32Array(order.length + 1);
  order.forEach((k, i) => (skillOffsets[i + 1] = skillOffsets[i] + entries.get(k)!.rows));
  const skillStates = new Float32Array(skillOffsets[order.length] * w);
  order.forEach((k, i) => {
    const e = entries.get(k)!;
    const src = skills[e.skill];
    if (!e.keep) skillStates.set(src, skillOffsets[i] * w);
    else e.keep.forEach((r, j) => skillStates.set(src.subarray(r * w, (r + 1) * w), (skillOffsets[i] + j) * w));
  });
  const tokens = nQ + skillOffsets[order.length];
  return { batch: { queryStates, queryOffsets, skillStates, skillOffsets, ...packCandidates(tasks, order) }, tasks: tasks.length, tokens };
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
      const m = ex.mask;
      if (m && (!ex.positives.includes(m.skill) || m.ranges.length % 2 !== 0 || m.ranges.some((r) => !Number.isInteger(r) || r < 0))) {
        throw invalidArgument(`${name}[${i}].mask must name one of its golds and hold [start, end) pairs of rows`);
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
