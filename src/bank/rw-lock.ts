/**
 * A readers–writer lock for one process: many readers at once, or one writer. Writers are preferred:
 * once a writer waits, new readers wait behind it, so a stream of overlapping routes never starves an
 * uninstall. Nothing here is shared between processes (the bank's lock file is).
 *
 * Those that cannot enter at once wait in one queue, in call order: when a writer leaves, the readers
 * at the head of the queue enter together, up to the next writer, which enters once they have left. A
 * waiter whose signal aborts leaves the queue at once (rejecting with ABORTED), and those behind it move
 * up as if it had never come.
 *
 * @module
 */
import { abortedError, throwIfAborted } from "../util/validate.js";

/** One call waiting for the lock: `enter` is called once it holds it (the lock's counts already say so). */
interface Waiter {
  write: boolean;
  enter: () => void;
}

/** See the module comment. */
export class ReadWriteLock {
  #readers = 0;
  #writing = false;
  readonly #queue: Waiter[] = [];

  /** Readers inside now (for tests and diagnostics). */
  get readers(): number {
    return this.#readers;
  }

  /** Calls waiting for the lock now (for tests and diagnostics). */
  get waiting(): number {
    return this.#queue.length;
  }

  /**
   * Runs `f` as a reader: after any writer that waits or runs, beside other readers. An already-aborted
   * `signal` rejects without waiting; one that aborts while this waits rejects at once (`verb`'s
   * ABORTED) and `f` never runs.
   */
  read<T>(f: () => Promise<T>, signal?: AbortSignal, verb = "ReadWriteLock.read"): Promise<T> {
    return this.#run(false, f, signal, verb);
  }

  /**
   * Runs `f` alone: once the readers inside have left; readers that come meanwhile wait for it.
   * `signal` as for {@link read}.
   */
  write<T>(f: () => Promise<T>, signal?: AbortSignal, verb = "ReadWriteLock.write"): Promise<T> {
    return this.#run(true, f, signal, verb);
  }

  async #run<T>(write: boolean, f: () => Promise<T>, signal: AbortSignal | undefined, verb: string): Promise<T> {
    throwIfAborted(signal, verb);
    // taken at once when free: a call made before another claims the lock first
    const free = !this.#writing && this.#queue.length === 0 && (!write || this.#readers === 0);
    if (free) this.#hold(write);
    else await this.#wait(write, signal, verb);
    try {
      // an abort between being let in and this turn (the signal's other listeners let it in) still stops f
      throwIfAborted(signal, verb);
      return await f();
    } finally {
      if (write) this.#writing = false;
      else this.#readers--;
      this.#admit();
    }
  }

  #hold(write: boolean): void {
    if (write) this.#writing = true;
    else this.#readers++;
  }

  /** Resolves once the lock is held for this call; rejects when `signal` aborts first, leaving the queue. */
  #wait(write: boolean, signal: AbortSignal | undefined, verb: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const at = this.#queue.indexOf(waiter);
        if (at < 0) return; // it holds the lock already
        this.#queue.splice(at, 1);
        reject(abortedError(verb, signal));
        // a writer that left may let the readers behind it in
        this.#admit();
      };
      const waiter: Waiter = {
        write,
        enter: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      this.#queue.push(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Lets in, from the head of the queue, what may enter now: the readers up to the next writer, or that writer once no one is inside. */
  #admit(): void {
    while (!this.#writing && this.#queue.length > 0) {
      const next = this.#queue[0];
      if (next.write && this.#readers > 0) return;
      this.#queue.shift();
      this.#hold(next.write);
      next.enter();
    }
  }
}
