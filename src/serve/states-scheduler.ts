/**
 * The resident router's pass schedulers: the model work of concurrent requests run together.
 *
 * - {@link StatesScheduler}: every `route` and `glance` starts with one forward pass over its task to
 *   ℓ* (route/context.ts); the model runs one call at a time, so with many clients each request would
 *   wait for every other one's pass. The passes that wait are drained into one
 *   {@link Model.hiddenStatesMany} call (each task a sequence of the same decodes), bounded by task
 *   tokens (a longer task goes alone; the per-request budget, `--max-task-tokens`, bounds it) and
 *   task count.
 * - {@link ScoreScheduler}: the verdict's `scoreMany` calls of concurrent routes (their candidates'
 *   prefixes, each with the route's task) that wait are merged into one native `score` call, whose
 *   waves pack the candidates of several routes into the same decodes; bounded by candidates.
 *
 * Both follow batch-queue.ts: a lone call never waits for company; cancellation and errors stay with
 * their request. Each request then goes on alone (its glance, its ruling).
 *
 * @module
 */
import type { Model, ScoreResult } from "../model/Model.js";
import type { QueryProjection, ScoreRequest } from "../model/states-many.js";
import { projectNormalize } from "../kernels/kernels.js";
import { BatchQueue, type BatchStats } from "./batch-queue.js";

/** Bounds of one batched forward pass. */
export interface StatesSchedulerOptions {
  /** Most task tokens one pass carries (a longer task goes alone). */
  maxBatchTokens: number;
  /** Most tasks one pass carries. */
  maxBatchTasks: number;
}

export type { BatchStats as StatesSchedulerStats } from "./batch-queue.js";

interface StatesCall {
  tokens: Int32Array;
  layer: number;
  /** A hiddenQueries call: its rows projected (with the pass's other calls that share W) and normalised. */
  projection?: QueryProjection;
}

/** A call's outcome: its rows, or (a projection) its queries, still being projected. */
interface StatesOut {
  rows: Float32Array;
  queries?: Promise<Float32Array>;
}

/**
 * The queries of several calls from one {@link projectNormalize} call per projection matrix: their
 * rows stacked, projected and normalised together, then cut apart. Each row's result is its own dot
 * products and norm, so it equals the call made alone (test/model/states-scheduler.test.ts); if a
 * merged call fails (a call's rows hold NaN), each is projected alone, so only that one fails.
 */
function projectTogether(calls: StatesCall[], rows: Float32Array[], nEmbd: number): (Promise<Float32Array> | undefined)[] {
  const out: (Promise<Float32Array> | undefined)[] = calls.map(() => undefined);
  const groups = new Map<Float32Array, number[]>();
  calls.forEach((c, i) => {
    if (!c.projection) return;
    const g = groups.get(c.projection.W);
    if (g && calls[g[0]].projection!.dim === c.projection.dim) g.push(i);
    else if (!g) groups.set(c.projection.W, [i]);
    else out[i] = projectOne(c.projection, rows[i], nEmbd); // same W read with another dim: alone
  });
  for (const [W, members] of groups) {
    const slices = members.map((i) => rows[i].subarray(calls[i].projection!.from * nEmbd, calls[i].projection!.to * nEmbd));
    if (members.length === 1) {
      out[members[0]] = projectNormalize(slices[0], nEmbd, W, calls[members[0]].projection!.dim);
      continue;
    }
    const dim = calls[members[0]].projection!.dim;
    const stacked = new Float32Array(slices.reduce((n, x) => n + x.length, 0));
    let at = 0;
    for (const x of slices) stacked.set(x, (at += x.length) - x.length);
    const all = projectNormalize(stacked, nEmbd, W, dim);
    let row = 0;
    members.forEach((i, j) => {
      const n = slices[j].length / nEmbd;
      const from = row;
      row += n;
      out[i] = all.then(
        (q) => q.slice(from * dim, (from + n) * dim),
        () => projectNormalize(slices[j], nEmbd, W, dim),
      );
    });
  }
  return out;
}

function projectOne(p: QueryProjection, rows: Float32Array, nEmbd: number): Promise<Float32Array> {
  return projectNormalize(rows.subarray(p.from * nEmbd, p.to * nEmbd), nEmbd, p.W, p.dim);
}

export class StatesScheduler {
  readonly #model: Model;
  readonly #queue: BatchQueue<StatesCall, StatesOut>;

  constructor(model: Model, options: StatesSchedulerOptions) {
    this.#model = model;
    const nEmbd = model.info.nEmbd;
    this.#queue = new BatchQueue<StatesCall, StatesOut>(
      {
        // the projections start when the pass ends and run beside the next pass (not awaited here)
        run: async (calls, signal) => {
          const rows = (await model.hiddenStatesMany(calls.map((c) => c.tokens), [calls[0].layer], { signal })).map((r) => r[0]);
          const queries = projectTogether(calls, rows, nEmbd);
          for (const q of queries) q?.catch(() => undefined); // awaited by their callers; a cancelled one is not
          return rows.map((r, i) => ({ rows: r, ...(queries[i] ? { queries: queries[i] } : {}) }));
        },
        size: (c) => c.tokens.length,
        compatible: (a, b) => a.layer === b.layer,
        closed: () => model.disposed,
      },
      { maxSize: options.maxBatchTokens, maxItems: options.maxBatchTasks },
    );
  }

  /** Sends the model's single-layer hiddenStates and its hiddenQueries calls through this scheduler (until {@link detach}). */
  attach(): this {
    this.#model.routeHiddenStates(
      (tokens, layer, signal) => this.hiddenStates(tokens, layer, signal),
      (tokens, layer, projection, signal) => this.hiddenQueries(tokens, layer, projection, signal),
    );
    return this;
  }

  /** Direct calls again; passes already queued still run. */
  detach(): void {
    if (!this.#model.disposed) this.#model.routeHiddenStates(null);
  }

  get stats(): Readonly<BatchStats> {
    return this.#queue.stats;
  }

  /** One task's rows at `layer` (tokens × nEmbd), from the next pass that has room for it. */
  async hiddenStates(tokens: Int32Array, layer: number, signal?: AbortSignal): Promise<Float32Array> {
    return (await this.#queue.submit({ tokens, layer }, signal)).rows;
  }

  /** One task's queries (Model.hiddenQueries), from the next pass that has room for it. */
  async hiddenQueries(tokens: Int32Array, layer: number, projection: QueryProjection, signal?: AbortSignal): Promise<Float32Array> {
    const out = await this.#queue.submit({ tokens, layer, projection }, signal);
    return out.queries!;
  }
}

/** Bounds of one merged score call. */
export interface ScoreSchedulerOptions {
  /** Most (prefix, continuation) requests one merged call carries. */
  maxBatchRequests: number;
}

interface ScoreCall {
  requests: ScoreRequest[];
  readIds: Int32Array;
}

const sameIds = (a: Int32Array, b: Int32Array) => a.length === b.length && a.every((v, i) => v === b[i]);

export class ScoreScheduler {
  readonly #model: Model;
  readonly #queue: BatchQueue<ScoreCall, ScoreResult[]>;

  constructor(model: Model, options: ScoreSchedulerOptions) {
    this.#model = model;
    let direct: ((requests: ScoreRequest[], readIds: Int32Array, signal?: AbortSignal) => Promise<ScoreResult[]>) | null = null;
    this.#queue = new BatchQueue<ScoreCall, ScoreResult[]>(
      {
        run: async (calls, signal) => {
          const all = await direct!(calls.flatMap((c) => c.requests), calls[0].readIds, signal);
          let at = 0;
          return calls.map((c) => all.slice(at, (at += c.requests.length)));
        },
        size: (c) => c.requests.length,
        compatible: (a, b) => sameIds(a.readIds, b.readIds),
        closed: () => model.disposed,
      },
      { maxSize: options.maxBatchRequests, maxItems: options.maxBatchRequests },
    );
    this.#direct = (d) => (direct = d);
  }

  readonly #direct: (d: (requests: ScoreRequest[], readIds: Int32Array, signal?: AbortSignal) => Promise<ScoreResult[]>) => void;

  /** Sends the model's score calls through this scheduler (until {@link detach}). */
  attach(): this {
    this.#direct(this.#model.routeScores((requests, readIds, signal) => this.#queue.submit({ requests, readIds }, signal)));
    return this;
  }

  detach(): void {
    if (!this.#model.disposed) this.#model.routeScores(null);
  }

  get stats(): Readonly<BatchStats> {
    return this.#queue.stats;
  }
}
