/**
 * The resident router's forward-pass scheduler: the glance's hidden states of concurrent requests
 * decoded together. Every `route` and `glance` starts with one forward pass over its task to ℓ*
 * (route/context.ts); the model runs one call at a time, so with many clients each request would wait
 * for every other one's pass. Here the passes that wait are drained into one
 * {@link Model.hiddenStatesMany} call (each task a sequence of the same decodes), and each request
 * then goes on alone with its rows (its glance, its verdict).
 *
 * - A pass starts as soon as the model is free: a lone request is never held back to wait for others,
 *   and what arrives while a pass runs goes into the next one.
 * - A pass carries at most `maxBatchTokens` task tokens and `maxBatchTasks` tasks, oldest first; a
 *   task over the bound goes alone (the per-request budget, `--max-task-tokens`, bounds it), so one
 *   long task adds at most its own pass to the others' wait, and a task that does not fit waits for the
 *   next pass (it is then the oldest, so it cannot be passed over again).
 * - Cancellation is per request: a waiting request leaves the queue; one whose pass is running answers
 *   ABORTED at once while the pass goes on for the others (the pass itself is aborted only when every
 *   request in it was).
 * - Errors are per request: when a pass of several tasks fails, each of its tasks is decoded again
 *   alone, so one bad task fails only its own request.
 *
 * @module
 */
import { GavelError } from "../errors.js";
import type { Model } from "../model/Model.js";

/** Bounds of one batched pass. */
export interface StatesSchedulerOptions {
  /** Most task tokens one pass carries (a longer task goes alone). */
  maxBatchTokens: number;
  /** Most tasks one pass carries. */
  maxBatchTasks: number;
}

/** A request's forward pass, waiting or running. */
interface Pending {
  tokens: Int32Array;
  layer: number;
  resolve: (rows: Float32Array) => void;
  reject: (err: unknown) => void;
  /** Answered (rows, an error, or cancelled). */
  done: boolean;
  signal?: AbortSignal;
  onAbort?: () => void;
}

const cancelled = () => new GavelError("the request was cancelled", "ABORTED");

/** Counters of what the scheduler did (for tests and `status`). */
export interface StatesSchedulerStats {
  /** Batched passes run (a retry of a failed pass's tasks alone not counted). */
  passes: number;
  /** Tasks those passes carried. */
  tasks: number;
  /** Most tasks one pass carried. */
  widest: number;
}

export class StatesScheduler {
  readonly #model: Model;
  readonly #o: StatesSchedulerOptions;
  readonly #waiting: Pending[] = [];
  #running = false;
  readonly #stats: StatesSchedulerStats = { passes: 0, tasks: 0, widest: 0 };

  constructor(model: Model, options: StatesSchedulerOptions) {
    for (const [k, v] of Object.entries(options)) if (!Number.isInteger(v) || v < 1) throw new GavelError(`${k} must be a positive integer`, "INVALID_ARGUMENT");
    this.#model = model;
    this.#o = { ...options };
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

  get stats(): Readonly<StatesSchedulerStats> {
    return { ...this.#stats };
  }

  /** Tasks waiting for a pass (not the running one). */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** One task's rows at `layer` (tokens × nEmbd), from the next pass that has room for it. */
  hiddenStates(tokens: Int32Array, layer: number, signal?: AbortSignal): Promise<Float32Array> {
    if (signal?.aborted) return Promise.reject(cancelled());
    return new Promise<Float32Array>((resolve, reject) => {
      const p: Pending = { tokens, layer, resolve, reject, done: false, signal };
      if (signal) {
        p.onAbort = () => {
          const i = this.#waiting.indexOf(p);
          if (i >= 0) this.#waiting.splice(i, 1);
          this.#settle(p, null, cancelled());
        };
        signal.addEventListener("abort", p.onAbort, { once: true });
      }
      this.#waiting.push(p);
      void this.#pump();
    });
  }

  #settle(p: Pending, rows: Float32Array | null, err?: unknown): void {
    if (p.done) return;
    p.done = true;
    if (p.onAbort) p.signal?.removeEventListener("abort", p.onAbort);
    if (rows) p.resolve(rows);
    else p.reject(err);
  }

  /** Runs passes while tasks wait; one pass at a time. */
  async #pump(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      while (this.#waiting.length > 0) {
        const pass = this.#take();
        if (pass.length > 0) await this.#run(pass);
      }
    } finally {
      this.#running = false;
    }
  }

  /** The next pass: the oldest task, then the next ones at its layer that fit the bounds. */
  #take(): Pending[] {
    const head = this.#waiting.shift()!;
    const pass = [head];
    let tokens = head.tokens.length;
    for (let i = 0; i < this.#waiting.length && pass.length < this.#o.maxBatchTasks; ) {
      const p = this.#waiting[i];
      if (p.layer === head.layer && tokens + p.tokens.length <= this.#o.maxBatchTokens) {
        pass.push(p);
        tokens += p.tokens.length;
        this.#waiting.splice(i, 1);
      } else i++;
    }
    return pass;
  }

  async #run(pass: Pending[]): Promise<void> {
    // the pass is aborted only once none of its requests wants it
    const controller = new AbortController();
    const check = () => pass.every((p) => p.done) && controller.abort();
    for (const p of pass) p.signal?.addEventListener("abort", check, { once: true });
    try {
      this.#stats.passes++;
      this.#stats.tasks += pass.length;
      this.#stats.widest = Math.max(this.#stats.widest, pass.length);
      const rows = await this.#model.hiddenStatesMany(
        pass.map((p) => p.tokens),
        [pass[0].layer],
        { signal: controller.signal },
      );
      pass.forEach((p, i) => this.#settle(p, rows[i][0]));
    } catch (err) {
      if (pass.length === 1 || this.#model.disposed || controller.signal.aborted) {
        for (const p of pass) this.#settle(p, null, err);
        return;
      }
      // which task failed it: each again alone, so only that one's request fails
      for (const p of pass) {
        if (p.done) continue;
        try {
          const [rows] = await this.#model.hiddenStatesMany([p.tokens], [p.layer], p.signal ? { signal: p.signal } : undefined);
          this.#settle(p, rows[0]);
        } catch (e) {
          this.#settle(p, null, e);
        }
      }
    } finally {
      for (const p of pass) p.signal?.removeEventListener("abort", check);
    }
  }
}
