/** What the int8-prefiltered glance (native/src/kernels/i8_glance.h) returns beside a glance's result; re-exported by binding.ts. */

/** glanceExact8's additions to the glance's g, m and argmax: the `columns` m and argmax cover (nq × columns), and its counts. */
export interface NativeGlanceExact8Extra {
  columns: Int32Array;
  stats: { pairs: number; recomputed: number; quantMs: number; stage1Ms: number; stage2Ms: number; voteMs: number; totalMs: number; cpuMs: number; exactFallback: boolean; isa: string; i8Bytes: number; f16Bytes: number };
}
