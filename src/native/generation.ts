/** The addon's generation surface (native/src/model/generate*.{h,cpp}), re-exported by binding.ts. */

/** llama.cpp sampler chain parameters: every field required (src/model/generate.ts sets them). */
export interface NativeSamplerParams {
  /** 0: greedy. */
  temperature: number;
  /** 0: off. */
  topK: number;
  /** In (0, 1]; 1: off. */
  topP: number;
  /** In [0, 1]; 0: off. */
  minP: number;
  /** Unsigned 32-bit. */
  seed: number;
  /** 0: no penalties. */
  penaltyLastN: number;
  /** > 0; 1: off. */
  repeatPenalty: number;
  frequencyPenalty: number;
  presencePenalty: number;
}

/** One append of a {@link NativeGeneration}. */
export interface NativeGenerationStep {
  /** The appended tokens' residual stream after the generation's layer: tokens × nEmbd. */
  states: Float32Array;
  /**
   * With the generation's `finalState`: the last block's output (tensor `l_out-(nLayer−1)`) at the
   * last appended token, nEmbd floats, from the same decode; absent otherwise.
   */
  finalState?: Float32Array;
  /** The token sampled after the last appended one (already in the repeat penalty's window). */
  next: number;
}

/** A generation's native handle (native/src/model/generate.h). */
export interface NativeGeneration {
  /** Decodes tokens after those decoded so far, captures their states, samples the next token. */
  append(tokens: Int32Array): Promise<NativeGenerationStep>;
  /** Whether the token ends a generation (llama_vocab_is_eog). */
  isEog(token: number): boolean;
  /** Tokens decoded so far. */
  position(): number;
  /** Frees the sequence; idempotent; later append → DISPOSED. */
  close(): Promise<void>;
}
