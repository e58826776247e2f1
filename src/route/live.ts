/**
 * The live context: the glance's accumulated per-skill scores over a growing rollout,
 * updated per appended token from that token's ℓ* state only (projected by W_q, max-sim against the
 * bank's keys, top-k vote), with the recency decay w_i = 2^(−a_i/64) of `decayWeights` (src/kernels/kernels.ts). Nothing
 * already read is encoded again.
 *
 * After n tokens the scores equal a from-scratch glance over the same n rows with live weights:
 * g(s) = Σ_i w_i v_i(s) / Σ_i w_i, v_i(s) = m_i(s) when s is in token i's top-k, else 0. The sums are
 * kept decayed: on each batch of b new rows, A ← A·2^(−b/64) + Σ_j w_j v_j and W ← W·2^(−b/64) + Σ_j w_j,
 * with the batch's own decay weights w_j = decayWeights(b)[j]. A and W are float64, held with a
 * common scale renormalised before it underflows.
 *
 * The accumulators are native (native/src/live, `NativeLive`): one call per append does the
 * projection, the max-sim, the vote and the fold. Where the bank glances on a CUDA device, A stays
 * on the device and an append only queues work on the bank's stream (no host round trip per
 * token); reading the scores waits for it, unless the host asks for the newest completed append's
 * scores (`scores({ wait: false })`), which an append copies back asynchronously. On the CPU the
 * bank's CPU glance of each batch of up to 2,048 rows is folded natively (a small append at once, a
 * large one on a worker thread).
 *
 * @module
 */
import { GavelError, invalidArgument } from "../errors.js";
import { voteK } from "../kernels/kernels.js";
import { loadBinding, type NativeLive } from "../native/binding.js";
import { abortedError, asAborted, checkInt, optionsObject, signalOption, throwIfAborted, afterTurn, valueText } from "../util/validate.js";
import type { RouterParts } from "./parts.js";

/** The verb an append's abort error names. */
const APPEND = "LiveContext.append";

/** How {@link LiveContext.scores} and {@link LiveContext.top} read the scores. */
export interface LiveReadOptions {
  /**
   * true (the default): the scores after the last appended token; on a device this waits for the
   * appends queued there. false: never wait; the scores after the newest append whose device work
   * has completed (`tokens` says how many rows they cover: the last append's, an earlier one's, or 0
   * with zeros when none has completed since the context began or was reset). On the CPU an append
   * is complete once it returned or resolved, so both read the same.
   */
  wait?: boolean;
}

/** A live context's scores: one per column (routable skill), after `tokens` appended rows. */
export interface LiveScores {
  /** The columns' skill handles, in the library's column order. */
  handles: Int32Array;
  /** Each column's accumulated, decayed glance score g. */
  g: Float64Array;
  /** The rows these scores cover: {@link LiveContext.tokens} unless read with `wait: false`. */
  tokens: number;
}

/** One skill as a live context ranks it. */
export interface LiveScore {
  skill: string;
  name: string;
  /** The accumulated, decayed glance score g. */
  g: number;
}

/**
 * A live context over a router's library: feed it the ℓ* states of each new token (for example the
 * chunks' `state` of `model.generate(…, { captureLayer: live.layer })`, and the prompt's rows from
 * `onPrompt`), and read the decayed glance scores at any token.
 *
 * The library's routable skills are read at each append; a skill installed later scores only the
 * tokens appended after its install, and one removed is dropped.
 */
export class LiveContext {
  readonly #parts: RouterParts;
  /** Made at the first append, over the library's key bank. */
  #native: NativeLive | null = null;
  #disposed = false;
  #queue: Promise<unknown> = Promise.resolve();
  /** Counts {@link reset}s: an append made before the latest one folds nothing that outlives it. */
  #generation = 0;
  /** Whether the router that made this context was closed. */
  readonly #routerClosed: () => boolean;

  /** @internal Made by {@link Router.live}; `routerClosed` says when that router was closed. */
  constructor(parts: RouterParts, routerClosed: () => boolean = () => false) {
    this.#parts = parts;
    this.#routerClosed = routerClosed;
  }

  /** Whether this context can no longer append or select: {@link dispose} ran, or its router was closed. */
  get disposed(): boolean {
    return this.#disposed || this.#routerClosed();
  }

  /** @internal Throws DISPOSED when this context was disposed or its router closed; `what` names the caller. */
  checkOpen(what: string): void {
    if (this.#disposed) throw new GavelError(`${what}: this live context was disposed`, "DISPOSED");
    if (this.#routerClosed()) throw new GavelError(`${what}: the router of this live context was closed`, "DISPOSED");
  }

  /** @internal The router's parts, for a firing's verdict on this context (src/route/firing.ts). */
  get routerParts(): RouterParts {
    return this.#parts;
  }

  /** The layer whose states this context reads (the projections' ℓ*). */
  get layer(): number {
    return this.#parts.projections.layer;
  }

  /** Tokens appended so far. */
  get tokens(): number {
    return this.#native?.tokens ?? 0;
  }

  /**
   * Where the accumulators live: "cuda" when the library's bank glances on a CUDA device (A on the
   * device, appends queued without waiting for it), else "cpu"; null before the first append.
   */
  get device(): "cuda" | "cpu" | null {
    return this.#native?.device ?? null;
  }

  /**
   * Appends the ℓ* states of new tokens (rows × nEmbd, in token order) and updates every skill's score.
   * Appends apply in call order; a {@link reset} applies after every append called before it (their
   * rows are forgotten, even those of an append still running when it was called). The arguments, the
   * disposal and an already-aborted signal are checked at the call; an append waiting behind others
   * rejects as soon as its signal aborts, folds nothing, and the appends called after it run as before.
   * The rows are copied at the call: the caller may reuse or detach `states` at once. A dispose while
   * the append waits or runs (or the router's close, which stops it) rejects it with DISPOSED.
   *
   * @throws GavelError INVALID_ARGUMENT (shape, a detached buffer, non-finite values), EMPTY_LIBRARY,
   *   ABORTED, DISPOSED (the context was disposed or its router closed)
   */
  append(states: Float32Array, options?: { signal?: AbortSignal }): Promise<void> {
    let signal: AbortSignal | undefined;
    let rows: Float32Array;
    try {
      signal = signalOption(optionsObject(options, "options", { signal: true }).signal);
      const { nEmbd } = this.#parts.model.info;
      if (!(states instanceof Float32Array) || states.length % nEmbd !== 0) {
        throw invalidArgument(`states must be a Float32Array of rows × nEmbd (${nEmbd})`);
      }
      this.checkOpen("live append");
      rows = copyRows(states);
    } catch (err) {
      return Promise.reject(err);
    }
    // an aborted append rejects, whether or not it had rows to fold, without waiting for those before it
    if (signal?.aborted) return Promise.reject(abortedError(APPEND, signal));
    // Appends apply in call order, even when a caller does not await one before the next.
    const generation = this.#generation;
    const { run, reply } = afterTurn(this.#queue, () => this.#append(rows, signal, generation), APPEND, signal);
    this.#queue = run.catch(() => undefined);
    return reply(run);
  }

  async #append(states: Float32Array, signal: AbortSignal | undefined, generation: number): Promise<void> {
    // disposed, or aborted, while it waited: nothing folded
    this.checkOpen("live append");
    throwIfAborted(signal, APPEND);
    // A reset since this append was called forgets its rows: nothing to fold.
    if (generation !== this.#generation) return;
    if (states.length === 0) return;
    const { library } = this.#parts;
    const handles = library.routable();
    if (handles.length === 0) throw new GavelError("no skill is installed (or every one has disable-model-invocation)", "EMPTY_LIBRARY");
    const native = this.#nativeLive();
    // Every skill of the bank, in its order: no handle list to pass or compare. The native append
    // checks that every value is finite (INVALID_ARGUMENT naming the first that is not) before it
    // changes anything: no pass over the rows here.
    const all = handles.length === library.keys.size;
    const pending = native.append(states, all ? null : handles, voteK(handles.length));
    if (pending === undefined) return; // done at once, or queued on the device
    const onAbort = () => native.abort();
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      await pending;
    } catch (err) {
      // disposed, or its router closed, while it ran: the glance it stopped is not the caller's abort
      if (this.disposed) this.checkOpen("live append");
      throw asAborted(err, APPEND, signal);
    } finally {
      signal?.removeEventListener("abort", onAbort);
      // A reset called while this append ran on a worker cleared the sums before the worker's rows
      // were folded in (the fold is the worker's completion): clear them again. This continuation is
      // the first code to run after that fold, and the appends called after the reset wait for it.
      if (generation !== this.#generation) this.#native?.reset();
    }
    // disposed, or its router closed, while it ran (as the catch above): DISPOSED, though the worker finished
    if (this.disposed) this.checkOpen("live append");
  }

  #nativeLive(): NativeLive {
    if (this.#native === null) {
      const { projections, model, library } = this.#parts;
      this.#native = new (loadBinding().NativeLive)(library.keys._native, projections.wq, model.info.nEmbd, projections.dim);
    }
    return this.#native;
  }

  /**
   * Each routable skill's score g after the last appended token, in the library's column order
   * (Float64Array). On a device this waits for the appends queued there; with `{ wait: false }` it
   * never waits and reads the newest completed append's ({@link LiveReadOptions}), so a decode loop
   * can read the scores every few tokens without stalling on the device.
   *
   * A disposed context's scores read empty, as do those of a context whose router was closed
   * ({@link disposed}).
   *
   * @throws GavelError INVALID_ARGUMENT (options)
   */
  scores(options?: LiveReadOptions): LiveScores {
    const wait = waitOption(options);
    const native = this.#native;
    // disposed, or its router closed (its library closed: nothing left to read the columns against)
    if (native === null || this.disposed) return { handles: new Int32Array(0), g: new Float64Array(0), tokens: 0 };
    const read = native.scores(wait);
    // an addon built before reads without waiting has no `tokens` and always waits
    return { handles: read.handles, g: read.g, tokens: read.tokens ?? native.tokens };
  }

  /**
   * The `n` best skills by g, best first (ties in column order), of those still routable (a skill
   * uninstalled since the last append is dropped); `options` as {@link scores}. `n`: an integer ≥ 0
   * (default 5).
   * @throws GavelError INVALID_ARGUMENT (`n` or options)
   */
  top(n = 5, options?: LiveReadOptions): LiveScore[] {
    checkInt(n, "LiveContext.top's n", 0, Number.MAX_SAFE_INTEGER);
    const { handles, g } = this.scores(options);
    const { library } = this.#parts;
    const routable = new Set(library.routable());
    const kept = Array.from(g.keys()).filter((c) => routable.has(handles[c]));
    const order = kept.sort((a, b) => g[b] - g[a] || a - b).slice(0, n);
    return order.map((c) => {
      const { id, name } = library.label(handles[c]);
      return { skill: id, name, g: g[c] };
    });
  }

  /**
   * Forgets every token (the next append starts a new context). It applies after the appends called
   * before it: one not yet started folds nothing, one running on a worker has its rows cleared when
   * it completes; `tokens` reads 0 at once.
   */
  reset(): void {
    this.#generation++;
    this.#native?.reset();
  }

  /**
   * Frees the native accumulators now (on a GPU, their device memory) instead of at garbage
   * collection. Idempotent; a later append rejects with DISPOSED, and the scores read empty.
   */
  dispose(): void {
    this.#disposed = true;
    this.#native?.dispose();
    this.#native = null;
  }
}

/** A copy of `states` (INVALID_ARGUMENT for a detached buffer, which reads as no rows). */
function copyRows(states: Float32Array): Float32Array {
  try {
    return states.slice();
  } catch {
    throw invalidArgument("states' buffer is detached (transferred or freed): pass the rows themselves");
  }
}

function waitOption(options: LiveReadOptions | undefined): boolean {
  const wait = optionsObject(options, "options", { wait: true }).wait;
  if (wait !== undefined && typeof wait !== "boolean") throw invalidArgument(`options.wait must be a boolean, got ${valueText(wait)}`);
  return wait ?? true;
}
