/**
 * The live context: the glance's accumulated per-skill scores over a growing rollout,
 * updated per appended token from that token's ℓ* state only (projected by W_q, max-sim against the
 * bank's keys, top-k vote), with the recency decay w_i = 2^(−a_i/64) of {@link decayWeights}. Nothing
 * already read is encoded again.
 *
 * After n tokens the scores equal a from-scratch glance over the same n rows with live weights:
 * g(s) = Σ_i w_i v_i(s) / Σ_i w_i, v_i(s) = m_i(s) when s is in token i's top-k, else 0. The sums are
 * kept decayed: on each batch of b new rows, A ← A·2^(−b/64) + Σ_j w_j v_j and W ← W·2^(−b/64) + Σ_j w_j,
 * where the batch's Σ_j w_j v_j is one native glance of the batch's rows with their own decay
 * weights (its g times its Σw). A and W are float64, held with a common scale renormalised before it
 * underflows.
 *
 * @module
 */
import { GavelError, invalidArgument } from "../errors.js";
import { decayWeights, projectNormalize, voteK } from "../kernels/kernels.js";
import { optionsObject, signalOption } from "../util/validate.js";
import type { RouterParts } from "./parts.js";

/** One skill as a live context ranks it. */
export interface LiveScore {
  skill: string;
  name: string;
  /** The accumulated, decayed glance score g. */
  g: number;
}

/** Rows per native glance: float32 decay weights within one batch stay far from underflow. */
const BATCH_ROWS = 2048;
/** Below this common scale the accumulators are renormalised (float64 keeps ~2^-1000). */
const RENORM_BELOW = 2 ** -400;

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
  /** handle → column of #acc. */
  #column = new Map<number, number>();
  #handles = new Int32Array(0);
  /** Σ w_i v_i(s) / #scale per column. */
  #acc = new Float64Array(0);
  /** Σ w_i / #scale. */
  #wsum = 0;
  #scale = 1;
  #tokens = 0;
  #queue: Promise<unknown> = Promise.resolve();

  /** @internal Made by {@link Router.live}. */
  constructor(parts: RouterParts) {
    this.#parts = parts;
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
    return this.#tokens;
  }

  /**
   * Appends the ℓ* states of new tokens (rows × nEmbd, in token order) and updates every skill's score.
   * Appends apply in call order.
   *
   * @throws GavelError INVALID_ARGUMENT (shape, non-finite values), EMPTY_LIBRARY, ABORTED
   */
  append(states: Float32Array, options?: { signal?: AbortSignal }): Promise<void> {
    // Appends apply in call order, even when a caller does not await one before the next.
    const p = this.#queue.then(() => this.#append(states, options));
    this.#queue = p.catch(() => undefined);
    return p;
  }

  async #append(states: Float32Array, options?: { signal?: AbortSignal }): Promise<void> {
    const signal = signalOption(optionsObject(options, "options").signal);
    const { nEmbd } = this.#parts.model.info;
    if (!(states instanceof Float32Array) || states.length % nEmbd !== 0) {
      throw invalidArgument(`states must be a Float32Array of rows × nEmbd (${nEmbd})`);
    }
    for (let i = 0; i < states.length; i++) if (!Number.isFinite(states[i])) throw invalidArgument(`states[${i}] is not finite`);
    const n = states.length / nEmbd;
    for (let start = 0; start < n; start += BATCH_ROWS) {
      const rows = states.subarray(start * nEmbd, Math.min(n, start + BATCH_ROWS) * nEmbd);
      await this.#appendBatch(rows, rows.length / nEmbd, signal);
    }
  }

  async #appendBatch(rows: Float32Array, b: number, signal?: AbortSignal): Promise<void> {
    if (b === 0) return;
    const { projections, model, library } = this.#parts;
    const handles = library.routable();
    if (handles.length === 0) throw new GavelError("no skill is installed (or every one has disable-model-invocation)", "EMPTY_LIBRARY");
    const queries = await projectNormalize(rows, model.info.nEmbd, projections.wq, projections.dim);
    const weights = decayWeights(b);
    const all = handles.length === library.keys.size;
    // detail 0: only g is read here, so no m or argmax (nq × skills) comes back.
    const res = await library.keys.glance(queries, { weights, k: voteK(handles.length), handles: all ? undefined : handles, signal, detail: 0 });
    let wb = 0;
    for (let i = 0; i < b; i++) wb += weights[i];
    this.#remap(res.handles);
    const decay = 2 ** (-b / 64);
    this.#scale *= decay;
    if (this.#scale < RENORM_BELOW) {
      for (let s = 0; s < this.#acc.length; s++) this.#acc[s] *= this.#scale;
      this.#wsum *= this.#scale;
      this.#scale = 1;
    }
    const inv = 1 / this.#scale;
    // After #remap the columns are the glance's, in its order: column s is res.handles[s].
    for (let s = 0; s < res.handles.length; s++) this.#acc[s] += res.g[s] * wb * inv;
    this.#wsum += wb * inv;
    this.#tokens += b;
  }

  /**
   * Makes the columns the glance's handles, in their order (column s is handles[s]): kept skills keep
   * their scores, new ones start at 0, removed ones are dropped. Nothing to do when they are unchanged.
   */
  #remap(handles: Int32Array): void {
    if (handles.length === this.#handles.length) {
      let same = true;
      for (let i = 0; i < handles.length && same; i++) same = handles[i] === this.#handles[i];
      if (same) return;
    }
    const acc = new Float64Array(handles.length);
    const column = new Map<number, number>();
    handles.forEach((h, i) => {
      column.set(h, i);
      const old = this.#column.get(h);
      if (old !== undefined) acc[i] = this.#acc[old];
    });
    this.#acc = acc;
    this.#column = column;
    this.#handles = handles.slice();
  }

  /** Each routable skill's score g after the last appended token, in the library's column order (Float64Array). */
  scores(): { handles: Int32Array; g: Float64Array } {
    const g = new Float64Array(this.#acc.length);
    if (this.#wsum > 0) for (let s = 0; s < g.length; s++) g[s] = this.#acc[s] / this.#wsum;
    return { handles: this.#handles.slice(), g };
  }

  /** The `n` best skills by g, best first (ties in column order). */
  top(n = 5): LiveScore[] {
    const { handles, g } = this.scores();
    const { library } = this.#parts;
    const order = Array.from(g.keys()).sort((a, b) => g[b] - g[a] || a - b).slice(0, Math.max(0, n));
    return order.map((c) => {
      const { id, name } = library.label(handles[c]);
      return { skill: id, name, g: g[c] };
    });
  }

  /** Forgets every token (the next append starts a new context). */
  reset(): void {
    this.#acc.fill(0);
    this.#wsum = 0;
    this.#scale = 1;
    this.#tokens = 0;
  }
}
