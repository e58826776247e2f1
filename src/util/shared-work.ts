/**
 * Work that several callers wait for together, one run at a time, that stops waiting once none of
 * them wants it: a snapshot library's refresh, which every read that starts while it runs waits for.
 * Each caller joins the run under way (or starts one) with its own signal, and leaves as soon as that
 * signal aborts (its verb's ABORTED). The run's own signal aborts when the last caller has left,
 * unless one joined without a signal (it holds the run to its end); a caller that comes after that
 * starts a new run. What a run does with its signal is its own: the refresh stops waiting for the
 * library's lock, and a swap under way finishes.
 *
 * @module
 */
import { throwIfAborted, untilAborted } from "./validate.js";

/** One run and who waits for it. */
interface Run<T> {
  readonly controller: AbortController;
  readonly work: Promise<T>;
  /** Callers with a signal still waiting. */
  waiting: number;
  /** Whether a caller without a signal joined: the run is never abandoned then. */
  held: boolean;
}

/** See the module comment. */
export class SharedWork<T> {
  #run: Run<T> | null = null;

  /**
   * The outcome of the run under way, or of one `start` begins now (with the signal that aborts once
   * every caller has left) when none is under way or the one under way was abandoned; `verb`'s
   * ABORTED as soon as `signal` aborts (at once when it has already: nothing starts then).
   */
  join(start: (signal: AbortSignal) => Promise<T>, signal: AbortSignal | undefined, verb: string): Promise<T> {
    throwIfAborted(signal, verb);
    let run = this.#run;
    if (run === null || run.controller.signal.aborted) {
      const controller = new AbortController();
      const work = start(controller.signal).finally(() => {
        if (this.#run === fresh) this.#run = null;
      });
      // every caller may have left: the run's rejection is then no one's
      work.catch(() => undefined);
      const fresh: Run<T> = { controller, work, waiting: 0, held: false };
      this.#run = run = fresh;
    }
    const joined = run;
    if (signal === undefined) {
      joined.held = true;
      return joined.work;
    }
    joined.waiting++;
    return untilAborted(joined.work, verb, signal, () => {
      if (--joined.waiting === 0 && !joined.held) joined.controller.abort();
    });
  }
}
