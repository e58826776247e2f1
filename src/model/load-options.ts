// Model.load's option checks that need neither the file nor the addon: each returns what the native
// LoadParams want, or throws INVALID_ARGUMENT naming the option.
import { availableParallelism } from "node:os";
import { invalidArgument, optionError } from "../errors.js";
import { intOption, valueText } from "../util/validate.js";

/** Options of {@link Model.load}. */
export interface ModelLoadOptions {
  /** Layers to offload to a GPU (CUDA build only); -1, the default, offloads all. */
  gpuLayers?: number;
  /**
   * Context size in tokens: what one request (prefix + continuation) may use. With `kvLayout:
   * "unified"` it is one pool shared by every cached prefix; with "streams" every sequence has this
   * many cells of its own (the KV cache holds contextSize × sequences). Default 8192, or the model's
   * trained context (GGUF `<arch>.context_length`) when that is smaller but at least 1024 (gavel-mini:
   * 2048): positions past it are out of distribution.
   */
  contextSize?: number;
  /** CPU threads; default: every core. */
  threads?: number;
  /**
   * Most tokens one llama_decode takes, and its physical batch (llama.cpp's n_batch and n_ubatch);
   * at most contextSize. Default 512, or contextSize when smaller.
   */
  batchSize?: number;
  /** Sequences of the context: one scratch sequence, the rest hold cached prefixes. Default 32 ("unified") or 10 ("streams"). */
  sequences?: number;
  /** Sequences kept for batched passes, 0..sequences − 2: the cache then holds ≤ sequences − 1 − this prefixes, and a batch drops none. Default 0. */
  batchSequences?: number;
  /**
   * How the KV cache is laid out (llama.cpp's kv_unified). "unified": one pool of contextSize cells;
   * a continuation's attention runs over every cell of the pool, other prefixes masked out.
   * "streams": each sequence its own stream of contextSize cells, so a continuation attends only to
   * its own prefix, and its log-probs do not depend on what else is cached. Default "streams"
   * (faster for the verdict on the CPU, docs/history/BENCHMARKS.md "Verdict"); it takes contextSize ×
   * sequences cells of KV memory, so "unified" suits many small prefixes in a bounded pool.
   */
  kvLayout?: "unified" | "streams";
  /**
   * llama.cpp's flash attention: true, false or "auto". Default false, on the CPU and the GPU alike:
   * measured on an H100 (docs/history/BENCHMARKS.md, "Verdict on the GPU"), flash attention with an f16 KV
   * cache moved gavel-mini's verdict L by up to 1.19e-2 nats against the exact settings, over the
   * 1e-2 tolerance set for making it the GPU default; ask for it (and `kvCacheType: "f16"`) for speed.
   * Whether a prefix came from the cache never changes a log-prob, to the bit, on the CPU and the
   * GPU alike: a prefix the cache lacks is decoded alone, in batches of its own, so its KV is the one
   * a cached copy holds (test/model/score-layout.test.ts; on an H200, scripts/experiments/cold-prefix.sh:
   * docs/BENCHMARKS.md, "Small libraries: one-line requests and the verdict's floor"). How requests
   * are batched together still moves log-probs within rounding: 1e-4 nats on the CPU with these
   * defaults on f32 weights; on a Q8_0 model such as gavel-mini, where a wave pads requests of other
   * lengths (merged calls with different continuations), rarely up to a few hundredths of a nat on
   * the AVX-512 kernels (test/model/score-layout.test.ts bounds it at 0.15). Flash attention or an f16 cache move them by up to ~3e-3 nats more; on a GPU with long
   * contexts both are faster and the cache takes half the memory.
   */
  flashAttention?: boolean | "auto";
  /** KV cache type: "f32" (the default, see flashAttention) or "f16" (half the memory). */
  kvCacheType?: "f32" | "f16";
  /**
   * Where {@link Model.score}'s log-probs are reduced. false: llama.cpp copies every output row's
   * full-vocabulary logits to the host, which log-normalises them. true: the logits stay where
   * llama.cpp computed them (its backend-sampling hooks keep the copy from happening) and are reduced
   * there to the asked tokens' log-probs: on a GPU by a CUDA kernel, on the CPU by the host path's own
   * code. The same float64 sums either way (test/model/logprobs-in-graph.test.ts on the CPU;
   * scripts/device/logprobs-twins.mjs on a GPU, ≤ 1.9e-6 nats). "auto", the default: true when the
   * addon is a CUDA build, a GPU was found and `gpuLayers` is not 0, else false. Measured on an H200
   * (docs/BENCHMARKS.md, "Verdict speed"): the warm verdict of a Qwen3-8B shape 0.61 → 0.31 s,
   * gavel-mini's 85 → 28 ms; on the CPU nothing is copied either way, so the CPU keeps the host path.
   * Its cost is host memory: with backend samplers llama.cpp sizes its (pinned) output buffer for
   * sampled logits, probabilities and candidates too, 16 bytes instead of 4 per vocabulary entry and
   * output row: nVocab × batchSize × 16 B, e.g. 1.2 GB instead of 0.3 GB for a 152K vocabulary at
   * batchSize 512. Pass false where that memory matters more than the verdict's speed.
   */
  logprobsInGraph?: boolean | "auto";
}

/** Options of {@link Model.score} and {@link Model.scoreMany}. */
export interface ScoreOptions {
  /** Token ids whose log-probability is read after the last continuation token. */
  readIds?: Int32Array | number[];
  signal?: AbortSignal;
}

/** Options of {@link Model.tokenize}. */
export interface TokenizeOptions {
  /** Parse control tokens written in the text (such as `<|im_start|>`); keep it false (the default) for untrusted text. */
  special?: boolean;
  /** Prepend BOS when the vocabulary asks for one (default false). */
  addBos?: boolean;
}

/** Options of {@link Model.tokenizeAsync}: {@link TokenizeOptions} and a signal. */
export interface TokenizeAsyncOptions extends TokenizeOptions {
  /**
   * Stops waiting for the tokens: the call rejects at once with a GavelError `ABORTED`, the signal's
   * reason as its `cause` (already aborted: before the worker starts). A tokenization under way runs
   * to its end on its worker; its tokens are dropped.
   */
  signal?: AbortSignal;
}

/** The keys of {@link ModelLoadOptions}, {@link ScoreOptions} and tokenize's options (optionsObject refuses others). */
export const MODEL_LOAD_KEYS: Record<keyof ModelLoadOptions, true> = {
  gpuLayers: true, contextSize: true, threads: true, batchSize: true, sequences: true, batchSequences: true,
  kvLayout: true, flashAttention: true, kvCacheType: true, logprobsInGraph: true,
};
export const SCORE_KEYS: Record<keyof ScoreOptions, true> = { readIds: true, signal: true };
export const TOKENIZE_KEYS: Record<keyof TokenizeOptions, true> = { special: true, addBos: true };
export const TOKENIZE_ASYNC_KEYS: Record<keyof TokenizeAsyncOptions, true> = { ...TOKENIZE_KEYS, signal: true };

/** The bounds of {@link ModelLoadOptions.contextSize} (Model.load refuses a value outside them). */
export const CONTEXT_SIZE_RANGE = { min: 16, max: 1 << 22 } as const;
/** The bounds of {@link ModelLoadOptions.threads}. */
export const THREADS_RANGE = { min: 1, max: 1024 } as const;
/** The bounds of {@link ModelLoadOptions.gpuLayers} (-1: every layer). */
export const GPU_LAYERS_RANGE = { min: -1, max: 100000 } as const;

/** The native load parameters at a context size: the options bounded by it checked against it. */
export function loadParams(o: Record<string, unknown>, contextSize: number, kvUnified: boolean) {
  const sequences = intOption(o.sequences, "sequences", 2, 256, kvUnified ? 32 : 10);
  const cells = kvUnified ? contextSize : contextSize * sequences;
  if (cells > MAX_KV_CELLS) {
    throw optionError((n) => `the KV cache would hold ${cells} cells (${n("contextSize")} × ${n("sequences")} with kvLayout "streams"); at most ${MAX_KV_CELLS}`, "INVALID_ARGUMENT", "contextSize");
  }
  return {
    gpuLayers: intOption(o.gpuLayers, "gpuLayers", GPU_LAYERS_RANGE.min, GPU_LAYERS_RANGE.max, -1),
    contextSize,
    threads: intOption(o.threads, "threads", THREADS_RANGE.min, THREADS_RANGE.max, availableParallelism()),
    batchSize: intOption(o.batchSize, "batchSize", 1, contextSize, Math.min(512, contextSize)),
    sequences,
    flashAttention: flashOption(o.flashAttention),
    kvF16: kvOption(o.kvCacheType),
    kvUnified,
  };
}

/** Most KV cells a context may hold (contextSize, times sequences with per-sequence streams). */
export const MAX_KV_CELLS = 1 << 24;

export function kvOption(v: unknown): boolean | undefined {
  if (v === undefined) return undefined;
  if (v === "f32") return false;
  if (v === "f16") return true;
  throw invalidArgument(`kvCacheType must be "f32" or "f16", got ${valueText(v)}`);
}

export function layoutOption(v: unknown): boolean {
  if (v === "unified") return true;
  if (v === undefined || v === "streams") return false;
  throw invalidArgument(`kvLayout must be "unified" or "streams", got ${valueText(v)}`);
}

export function flashOption(v: unknown): number | undefined {
  if (v === undefined) return undefined;
  if (v === false) return 0;
  if (v === true) return 1;
  if (v === "auto") return -1;
  throw invalidArgument(`flashAttention must be true, false or "auto", got ${valueText(v)}`);
}

/**
 * `logprobsInGraph`'s value: true or false as given; "auto" (or absent) is true only where the logits
 * live on a GPU, i.e. a CUDA build that found a CUDA device, with layers offloaded.
 */
export function resolveLogprobsInGraph(value: unknown, env: { cuda: boolean; devices: readonly string[]; gpuLayers: number }): boolean {
  if (value === true || value === false) return value;
  if (value !== undefined && value !== "auto") throw invalidArgument(`logprobsInGraph must be true, false or "auto", got ${valueText(value)}`);
  return env.cuda && env.gpuLayers !== 0 && env.devices.some((d) => /^CUDA\d/.test(d));
}
