/** The addon's live accumulator (native/src/live), re-exported by binding.ts. */

/**
 * A live context's decayed accumulators over one NativeBank: an append of b ℓ* rows (W_q
 * projection, normalisation, max-sim against the bank, top-k vote, decayed float64 fold) is one
 * call that returns nothing; the scores are read on demand. On a CUDA bank the accumulators stay on
 * the device and an append only queues work (scores() waits for it); on the CPU a small append runs
 * at once and a large one on a worker thread (append returns a Promise then). One append at a time:
 * an append while one is still running is refused (INVALID_ARGUMENT).
 */
export interface NativeLive {
  /**
   * Appends rows × nEmbd states (finite). `handles`: the columns (distinct handles of the bank), or
   * null for every skill of the bank in its order; a change of columns keeps the kept skills' sums,
   * starts new ones at 0 and drops removed ones. `k`: the vote's top-k (≥ 1).
   */
  append(states: Float32Array, handles: Int32Array | null, k: number): Promise<void> | undefined;
  /**
   * g = A / W per column after `tokens` appended rows (0s before any), with the columns' handles.
   * `wait` (default true): on the device, waits for the queued appends (tokens = this.tokens);
   * false never waits and reads the newest append whose device work has completed (tokens ≤
   * this.tokens, 0 with zeros over the current columns when none has). On the CPU both are the same.
   */
  scores(wait?: boolean): { handles: Int32Array; g: Float64Array; tokens: number };
  /** Forgets every row (the next append starts a new context). */
  reset(): void;
  /** Makes a running CPU append reject with ABORTED; returns how many batches were told. */
  abort(): number;
  /** Frees the accumulators (device memory included); idempotent, then every use throws DISPOSED. */
  dispose(): void;
  /** Rows appended so far. */
  readonly tokens: number;
  /** Where the accumulators live: "cuda" (a device-resident bank) or "cpu". */
  readonly device: "cuda" | "cpu";
}

/**
 * new NativeLive(bank, wq (dim × nEmbd), nEmbd, dim, device): `bank` a NativeBank (checked natively:
 * anything else is INVALID_ARGUMENT); device "auto" (default) follows the glance's device, "cpu"
 * keeps the accumulators on the host.
 */
export type NativeLiveConstructor = new (bank: object, wq: Float32Array, nEmbd: number, dim: number, device?: "auto" | "cpu") => NativeLive;
