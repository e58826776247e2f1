/**
 * One AbortSignal for several, undone when the work it stops is over. `AbortSignal.any` would do the
 * first half, but a composite cannot be unlinked: on Node 20 each one leaves a record on its sources
 * for as long as they live, so a long-lived source (an app's shutdown signal, given as an option and
 * joined with each call's own signal) grows by one for every call (about 60 bytes after GC).
 * {@link linkSignals} listens to its sources instead, and `dispose()` removes those listeners, so a
 * source keeps nothing of a call once it settled.
 *
 * @module
 */

/** A signal that aborts when the first of its sources does, and the way to undo the link. */
export interface LinkedSignal {
  /**
   * Aborts, with that source's reason, when the first source aborts (already aborted when one has);
   * the source itself when only one was given, undefined when none was.
   */
  readonly signal: AbortSignal | undefined;
  /** Removes the listeners on the sources (the signal no longer follows them); safe to call again. */
  dispose(): void;
}

const unlinked = (signal: AbortSignal | undefined): LinkedSignal => ({ signal, dispose: () => undefined });

/** {@link LinkedSignal} of `sources` (undefined entries and repeats are ignored). Call `dispose()` when the work settles. */
export function linkSignals(sources: readonly (AbortSignal | undefined)[]): LinkedSignal {
  const given = [...new Set(sources.filter((s): s is AbortSignal => s !== undefined))];
  if (given.length <= 1) return unlinked(given[0]);
  const aborted = given.find((s) => s.aborted);
  if (aborted) return unlinked(aborted);
  const controller = new AbortController();
  const links: [AbortSignal, () => void][] = [];
  const dispose = () => {
    for (const [source, onAbort] of links.splice(0)) source.removeEventListener("abort", onAbort);
  };
  for (const source of given) {
    const onAbort = () => {
      dispose();
      controller.abort(source.reason);
    };
    links.push([source, onAbort]);
    source.addEventListener("abort", onAbort, { once: true });
  }
  return { signal: controller.signal, dispose };
}
