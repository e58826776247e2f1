/** The model verbs' parameter and result types (native/src/model), re-exported by binding.ts. */

/** Model load parameters: every field is required (the addon has no defaults; Model.load sets them). */
export interface NativeModelParams {
  /** -1: every layer on the GPU. */
  gpuLayers: number;
  contextSize: number;
  /** CPU threads, ≥ 1. */
  threads: number;
  batchSize: number;
  /** Sequences the context holds at once: a scratch sequence plus cached prefixes. */
  sequences: number;
  /** -1 auto, 0 off, 1 on. */
  flashAttention: number;
  /** f16 KV cache instead of f32. */
  kvF16: boolean;
  /** true: one pool of contextSize cells; false: a stream of contextSize cells per sequence. */
  kvUnified: boolean;
  /** Score's log-probs reduced in the model's graph (true) or on the host (false, float64). */
  logprobsInGraph: boolean;
  /** Sequences kept for batched hidden-states passes (ModelLoadOptions.batchSequences); optional (0), and an addon built before it ignores it. */
  batchSequences?: number;
}

export interface NativeModelInfo {
  architecture: string;
  nLayer: number;
  nEmbd: number;
  nVocab: number;
  /** Context length the model was trained with. */
  contextLength: number;
  /**
   * What one request (prefix + continuation) may use in this loaded instance: the pool ("unified"),
   * or one sequence's stream ("streams"); llama.cpp may round it up.
   */
  contextSize: number;
  /** Most tokens one llama_decode takes (llama.cpp's n_batch). */
  batchSize: number;
  /** The physical batch (llama.cpp's n_ubatch). */
  ubatchSize: number;
  /** The KV cache's layout, see ModelLoadOptions.kvLayout. */
  kvLayout: "unified" | "streams";
  /**
   * Whether the model was loaded to reduce its scores' log-probs in the graph (ModelLoadOptions.logprobsInGraph,
   * resolved). Read at load: if llama.cpp declines to attach the reducing samplers at the first score, every
   * later score takes the host path (same values, float64 sums) and this still reads true.
   */
  logprobsInGraph: boolean;
  /** Sequences kept for batched hidden-states passes (ModelLoadOptions.batchSequences); absent from an addon built before it (none kept). */
  batchSequences?: number;
  chatTemplate: string | null;
  bos: number | null;
  eos: number | null;
  /** Whether the vocabulary asks for a BOS token at the start of a text. */
  addBos: boolean;
  description: string;
}

export interface NativeScoreRequest {
  prefix: Int32Array;
  continuation: Int32Array;
}

export interface NativeScoreResult {
  logprobs: Float32Array;
  final: Float32Array;
}

export interface NativeCacheStats {
  entries: number;
  tokens: number;
  hits: number;
  misses: number;
  /** Cached prefixes dropped to make room for batched hidden-states passes (absent from an addon built before it). */
  batchDrops?: number;
}
