/**
 * The resident router's glance batches: the glance calls of concurrent requests (one task each, over
 * the bank's keys) that wait are run as one native call ({@link glanceMany}: their query rows stacked,
 * each task's vote taken from its own rows, bit for bit its own glance), following batch-queue.ts.
 * Calls share a batch when they glance the same bank with the same vote size and columns; a batch is
 * bounded by the (row, skill) cells its m holds, and by tasks. Only on the CPU (a device glance rounds
 * to f16: there each call goes alone, as without a server).
 *
 * @module
 */
import type { KeyBank, KeyBankGlanceResult } from "../bank/key-bank.js";
import type { Router } from "../route/index.js";
import { glanceMany, glancesMerge, type GlanceManyOptions, type GlanceTask } from "../route/glance-many.js";
import { BatchQueue, type BatchStats } from "./batch-queue.js";

/**
 * Most (row, skill) cells of m a batch holds by default: 2^18 (1 MiB of m; its per-task votes take
 * about a millisecond of JavaScript), e.g. 20 tasks of 500 rows over 24 skills, or one of 30 rows
 * over 8,000 (a larger bank's glances go one by one).
 */
export const GLANCE_BATCH_CELLS = 1 << 18;

/** Bounds of one batched glance. */
export interface GlanceSchedulerOptions {
  /** Most (query row, skill) cells of m one batch holds (a call over it goes alone). */
  maxBatchCells: number;
  /** Most tasks one batch carries. */
  maxBatchTasks: number;
}

interface GlanceCall {
  keys: KeyBank;
  task: GlanceTask;
  k: number;
  handles?: Int32Array;
  /** Columns: handles.length, else the bank's size when called. */
  columns: number;
}

const sameHandles = (a?: Int32Array, b?: Int32Array) => a === b || (a !== undefined && b !== undefined && a.length === b.length && a.every((v, i) => v === b[i]));

export class GlanceScheduler {
  readonly #router: Router;
  readonly #queue: BatchQueue<GlanceCall, KeyBankGlanceResult>;

  constructor(router: Router, options: GlanceSchedulerOptions) {
    this.#router = router;
    this.#queue = new BatchQueue<GlanceCall, KeyBankGlanceResult>(
      {
        run: async (calls, signal) => {
          const [c] = calls;
          const o: GlanceManyOptions = { k: c.k, ...(c.handles ? { handles: c.handles } : {}), signal };
          // one call: the plain glance, as without a server
          if (calls.length === 1) return [await c.keys.glance(c.task.queries, { weights: c.task.weights, k: c.k, handles: c.handles, signal, detail: 0 })];
          return glanceMany(c.keys, calls.map((x) => x.task), o);
        },
        size: (c) => c.columns * c.task.weights.length,
        compatible: (a, b) => a.keys === b.keys && a.k === b.k && a.columns === b.columns && sameHandles(a.handles, b.handles),
        closed: () => router.model.disposed,
      },
      { maxSize: options.maxBatchCells, maxItems: options.maxBatchTasks },
    );
  }

  /** Sends the router's glance calls through this scheduler (until {@link detach}); on a device, nothing (they stay direct). */
  attach(): this {
    if (typeof this.#router.routeGlances === "function" && glancesMerge()) this.#router.routeGlances((keys, task, o) => this.glance(keys, task, o));
    return this;
  }

  detach(): void {
    try {
      if (typeof this.#router.routeGlances === "function") this.#router.routeGlances(null);
    } catch {
      // a closed router routes nothing any more
    }
  }

  get stats(): Readonly<BatchStats> {
    return this.#queue.stats;
  }

  /** One task's glance (`detail: 0`), from the next batch that has room for it. */
  glance(keys: KeyBank, task: GlanceTask, o: GlanceManyOptions): Promise<KeyBankGlanceResult> {
    const call: GlanceCall = { keys, task, k: o.k, ...(o.handles ? { handles: o.handles } : {}), columns: o.handles ? o.handles.length : keys.size };
    return this.#queue.submit(call, o.signal);
  }
}
