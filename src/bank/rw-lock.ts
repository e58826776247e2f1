/**
 * A readers–writer lock for one process: many readers at once, or one writer. Writers are preferred:
 * once a writer waits, new readers wait behind it, so a stream of overlapping routes never starves an
 * uninstall. Nothing here is shared between processes (the bank's lock file is).
 *
 * @module
 */

/** See the module comment. */
export class ReadWriteLock {
  #readers = 0;
  /** Settles when the writer that waits or runs is done; null when there is none. */
  #writer: Promise<void> | null = null;
  /** Called when the last reader leaves while a writer waits. */
  #drained: (() => void) | null = null;

  /** Readers inside now (for tests and diagnostics). */
  get readers(): number {
    return this.#readers;
  }

  /** Runs `f` as a reader: after any writer that waits or runs, beside other readers. */
  async read<T>(f: () => Promise<T>): Promise<T> {
    while (this.#writer) await this.#writer;
    this.#readers++;
    try {
      return await f();
    } finally {
      if (--this.#readers === 0 && this.#drained) this.#drained();
    }
  }

  /** Runs `f` alone: once the readers inside have left; readers that come meanwhile wait for it. */
  async write<T>(f: () => Promise<T>): Promise<T> {
    while (this.#writer) await this.#writer;
    let done!: () => void;
    this.#writer = new Promise<void>((resolve) => (done = resolve));
    try {
      if (this.#readers > 0) await new Promise<void>((resolve) => (this.#drained = resolve));
      this.#drained = null;
      return await f();
    } finally {
      this.#writer = null;
      done();
    }
  }
}
