/**
 * A window of concurrent work whose results are taken in input order: the shape of an install or a
 * states pass, where the model runs one item's forward pass while the JS thread prepares the next,
 * and results must land in library order so the outcome is the same as one at a time.
 */

/** How one item's work ended. */
export type Outcome<R> = { ok: true; value: R } | { ok: false; error: unknown };

export interface InOrderOptions {
  /** Items started and not yet settled, at most (≥ 1). */
  width: number;
  /** Called before each item starts; a throw here (e.g. an abort) ends the run and is rethrown. */
  beforeEach?: () => void;
}

/**
 * Starts `start(item)` for up to `width` items at once and calls `settle` with each item's outcome,
 * one at a time, in input order. A synchronous throw from `start` is that item's failed outcome. A
 * throw from `settle` or `beforeEach` ends the run: the items already started are waited for (so no
 * native work is left running behind the failure), then the error is rethrown.
 */
export async function inOrder<T, R>(
  items: Iterable<T>,
  options: InOrderOptions,
  start: (item: T) => Promise<R>,
  settle: (item: T, outcome: Outcome<R>) => Promise<void> | void,
): Promise<void> {
  const width = Math.max(1, Math.floor(options.width));
  const window: { item: T; outcome: Promise<Outcome<R>> }[] = [];
  const next = async () => {
    const w = window.shift()!;
    await settle(w.item, await w.outcome);
  };
  try {
    for (const item of items) {
      options.beforeEach?.();
      let work: Promise<R>;
      try {
        work = start(item);
      } catch (error) {
        work = Promise.reject(error);
      }
      window.push({ item, outcome: work.then((value): Outcome<R> => ({ ok: true, value }), (error: unknown): Outcome<R> => ({ ok: false, error })) });
      if (window.length >= width) await next();
    }
    while (window.length > 0) await next();
  } finally {
    await Promise.all(window.map((w) => w.outcome));
  }
}
