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
import type { ScoreRequest } from "../model/states-many.js";
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
}

export class StatesScheduler {
  readonly #model: Model;
  readonly #queue: BatchQueue<StatesCall, Float32Array>;

  constructor(model: Model, options: StatesSchedulerOptions) {
    this.#model = model;
    this.#queue = new BatchQueue<StatesCall, Float32Array>(
      {
        run: async (calls, signal) => (await model.hiddenStatesMany(calls.map((c) => c.tokens), [calls[0].layer], { signal })).map((r) => r[0]),
        size: (c) => c.tokens.length,
        compatible: (a, b) => a.layer === b.layer,
        closed: () => model.disposed,
      },
      { maxSize: options.maxBatchTokens, maxItems: options.maxBatchTasks },
    );
  }

  /** Sends the model's single-layer hiddenStates calls through this scheduler (until {@link detach}). */
  attach(): this {
    this.#model.routeHiddenStates((tokens, layer, signal) => this.hiddenStates(tokens, layer, signal));
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
  hiddenStates(tokens: Int32Array, layer: number, signal?: AbortSignal): Promise<Float32Array> {
    return this.#queue.submit({ tokens, layer }, signal);
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
