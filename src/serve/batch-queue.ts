/**
 * The batching discipline the resident router's schedulers share (states-scheduler.ts): calls that
 * wait while a pass runs are drained into the next pass.
 *
 * - A pass starts as soon as the previous one ends, and what arrives while a pass runs goes into the
 *   next one. When no pass runs, the first call arriving starts one after the I/O callbacks of the
 *   same event-loop turn (setImmediate): the requests read from several sockets at once, and the
 *   calls that resolve together (a pass's projections, say), share one pass instead of the first
 *   going alone; a lone call waits for nothing else.
 * - A pass takes the oldest call, then the next ones that are compatible with it and fit the bounds
 *   (`size` summed to at most `maxSize`, at most `maxItems` calls); a call over the size bound goes
 *   alone, and a call that does not fit waits for the next pass (it is then older than whatever
 *   arrives, so it cannot be passed over forever).
 * - Cancellation is per call: a waiting call leaves the queue; one whose pass is running answers
 *   ABORTED at once while the pass goes on for the others (the pass itself is aborted only when every
 *   call in it was).
 * - Errors are per call: when a pass of several calls fails, each of them is run again alone, so one
 *   bad call fails only itself.
 *
 * @module
 */
import { GavelError } from "../errors.js";

/** What a pass does, and which calls may share one. */
export interface BatchRunner<I, R> {
  /** The results of `items`, one each, in order, from one pass. */
  run(items: I[], signal: AbortSignal): Promise<R[]>;
  /** A call's weight against `maxSize`. */
  size(item: I): number;
  /** Whether `item` may share `head`'s pass. */
  compatible(head: I, item: I): boolean;
  /** True when no pass can run any more (the model was disposed): a failed pass is not retried. */
  closed(): boolean;
}

/** Bounds of one pass. */
export interface BatchBounds {
  maxSize: number;
  maxItems: number;
}

/** Counters of what a queue did. */
export interface BatchStats {
  /** Passes run (the retries of a failed pass's calls alone not counted). */
  passes: number;
  /** Calls those passes carried. */
  tasks: number;
  /** Most calls one pass carried. */
  widest: number;
}

interface Pending<I, R> {
  item: I;
  resolve: (r: R) => void;
  reject: (err: unknown) => void;
  done: boolean;
  signal?: AbortSignal;
  onAbort?: () => void;
}

/** A request's abort, as the server words it (docs/serve-protocol.md: it answers ABORTED). */
export const requestCancelled = (): GavelError => new GavelError("the request was cancelled", "ABORTED");

export class BatchQueue<I, R> {
  readonly #runner: BatchRunner<I, R>;
  readonly #bounds: BatchBounds;
  readonly #waiting: Pending<I, R>[] = [];
  #running = false;
  readonly #stats: BatchStats = { passes: 0, tasks: 0, widest: 0 };

  constructor(runner: BatchRunner<I, R>, bounds: BatchBounds) {
    for (const [k, v] of Object.entries(bounds)) if (!Number.isInteger(v) || v < 1) throw new GavelError(`${k} must be a positive integer`, "INVALID_ARGUMENT");
    this.#runner = runner;
    this.#bounds = { ...bounds };
  }

  get stats(): Readonly<BatchStats> {
    return { ...this.#stats };
  }

  /** Calls waiting for a pass (not those of the running one). */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** One call's result, from the next pass that has room for it. */
  submit(item: I, signal?: AbortSignal): Promise<R> {
    if (signal?.aborted) return Promise.reject(requestCancelled());
    return new Promise<R>((resolve, reject) => {
      const p: Pending<I, R> = { item, resolve, reject, done: false, signal };
      if (signal) {
        p.onAbort = () => {
          const i = this.#waiting.indexOf(p);
          if (i >= 0) this.#waiting.splice(i, 1);
          this.#settle(p, { err: requestCancelled() });
        };
        signal.addEventListener("abort", p.onAbort, { once: true });
      }
      this.#waiting.push(p);
      void this.#pump();
    });
  }

  #settle(p: Pending<I, R>, out: { ok: R } | { err: unknown }): void {
    if (p.done) return;
    p.done = true;
    if (p.onAbort) p.signal?.removeEventListener("abort", p.onAbort);
    if ("ok" in out) p.resolve(out.ok);
    else p.reject(out.err);
  }

  async #pump(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      // the rest of this event-loop turn's calls join the first pass
      await new Promise<void>((resolve) => setImmediate(resolve));
      while (this.#waiting.length > 0) await this.#run(this.#take());
    } finally {
      this.#running = false;
    }
  }

  #take(): Pending<I, R>[] {
    const head = this.#waiting.shift()!;
    const pass = [head];
    let size = this.#runner.size(head.item);
    for (let i = 0; i < this.#waiting.length && pass.length < this.#bounds.maxItems; ) {
      const p = this.#waiting[i];
      const s = this.#runner.size(p.item);
      if (this.#runner.compatible(head.item, p.item) && size + s <= this.#bounds.maxSize) {
        pass.push(p);
        size += s;
        this.#waiting.splice(i, 1);
      } else i++;
    }
    return pass;
  }

  async #run(pass: Pending<I, R>[]): Promise<void> {
    const controller = new AbortController();
    const check = () => pass.every((p) => p.done) && controller.abort();
    for (const p of pass) p.signal?.addEventListener("abort", check, { once: true });
    try {
      this.#stats.passes++;
      this.#stats.tasks += pass.length;
      this.#stats.widest = Math.max(this.#stats.widest, pass.length);
      const out = await this.#runner.run(
        pass.map((p) => p.item),
        controller.signal,
      );
      pass.forEach((p, i) => this.#settle(p, { ok: out[i] }));
    } catch (err) {
      if (pass.length === 1 || this.#runner.closed() || controller.signal.aborted) {
        for (const p of pass) this.#settle(p, { err });
        return;
      }
      for (const p of pass) {
        if (p.done) continue;
        try {
          const [r] = await this.#runner.run([p.item], p.signal ?? new AbortController().signal);
          this.#settle(p, { ok: r });
        } catch (e) {
          this.#settle(p, { err: e });
        }
      }
    } finally {
      for (const p of pass) p.signal?.removeEventListener("abort", check);
    }
  }
}
