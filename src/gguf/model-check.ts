/**
 * What a model's GGUF header must satisfy before llama.cpp sees the file. llama.cpp trusts its
 * hyper-parameters: a `block_count` of 0 or 2³²−1, an rms epsilon that is NaN or negative, head
 * counts that do not divide the width, or a vocabulary with a repeated string end in a `GGML_ASSERT`
 * that aborts the whole process, so these are checked here, on the header the TypeScript
 * reader has already bounded, and refused with a typed error naming the file and the field.
 *
 * Not everything llama.cpp could choke on is checked: the checks are the hyper-parameters every
 * architecture shares, the vocabulary, and the shape of the token embedding; an
 * architecture's own keys are left to llama.cpp, whose loader throws (not aborts) on missing or
 * ill-shaped tensors.
 */
import { GavelError, clip } from "../errors.js";
import { quoteForMessage } from "./regular-file.js";
import { GgmlType, ggmlTypeName, type GgufHeader, type GgufValue } from "./types.js";

/**
 * Most blocks accepted: llama.cpp's LLAMA_MAX_LAYERS (it asserts `n_layer <= LLAMA_MAX_LAYERS`, 512
 * in the pinned llama.cpp; the largest public models have ~128).
 */
export const MAX_BLOCK_COUNT = 512;
/** Widest residual stream accepted. */
export const MAX_EMBEDDING = 1 << 20;

/** A refusal naming the file and the field. */
function bad(path: string, field: string, why: string): GavelError {
  return new GavelError(`${clip(path)}: ${field} ${why}; llama.cpp would abort on it, so the model is not loaded`, "MODEL_LOAD_FAILED");
}

/** An integer metadata value (any integer type), or undefined when absent; refused when another type. */
function intOf(header: GgufHeader, key: string, path: string): number | number[] | undefined {
  const v = header.metadata.get(key);
  if (v === undefined) return undefined;
  const one = (type: string, x: unknown): number => {
    if (!["u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64"].includes(type)) throw bad(path, key, `has type ${type}, expected an integer`);
    const n = typeof x === "bigint" ? (x <= BigInt(Number.MAX_SAFE_INTEGER) && x >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(x) : NaN) : (x as number);
    if (!Number.isSafeInteger(n)) throw bad(path, key, `is ${String(x)}, out of range`);
    return n;
  };
  if (v.type === "arr") return Array.from(v.value as ArrayLike<unknown>, (x) => one(v.itemType, x));
  return one(v.type, v.value);
}

/** A float metadata value, or undefined when absent; refused when not a number. */
function floatOf(header: GgufHeader, key: string, path: string): number | undefined {
  const v: GgufValue | undefined = header.metadata.get(key);
  if (v === undefined) return undefined;
  if (v.type !== "f32" && v.type !== "f64") throw bad(path, key, `has type ${v.type}, expected a float`);
  return v.value as number;
}

/** `x` (a number, or an array of one per block) as one number per block. */
function perBlock(x: number | number[], blocks: number, path: string, key: string): number[] {
  if (!Array.isArray(x)) return new Array<number>(blocks).fill(x);
  if (x.length !== blocks) throw bad(path, key, `has ${x.length} values for ${blocks} blocks`);
  return x;
}

/**
 * Checks a model's header (see the module comment).
 *
 * @throws GavelError `MODEL_LOAD_FAILED` naming the file and the field
 */
export function checkModelHeader(header: GgufHeader, path: string): void {
  const archValue = header.metadata.get("general.architecture");
  if (archValue === undefined || archValue.type !== "str") throw bad(path, "general.architecture", "is missing or not a string");
  const arch = archValue.value as string;
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(arch)) throw bad(path, "general.architecture", `is ${quoteForMessage(arch)}, not an architecture name`);
  const key = (k: string) => `${arch}.${k}`;
  const scalar = (k: string): number | undefined => {
    const v = intOf(header, key(k), path);
    if (Array.isArray(v)) throw bad(path, key(k), "is an array, expected one integer");
    return v;
  };

  const blocks = scalar("block_count");
  if (blocks === undefined) throw bad(path, key("block_count"), "is missing");
  if (!(blocks >= 1 && blocks <= MAX_BLOCK_COUNT)) throw bad(path, key("block_count"), `is ${blocks}, outside [1, ${MAX_BLOCK_COUNT}]`);
  const nEmbd = scalar("embedding_length");
  if (nEmbd === undefined) throw bad(path, key("embedding_length"), "is missing");
  if (!(nEmbd >= 1 && nEmbd <= MAX_EMBEDDING)) throw bad(path, key("embedding_length"), `is ${nEmbd}, outside [1, ${MAX_EMBEDDING}]`);
  const ctx = scalar("context_length");
  if (ctx !== undefined && !(ctx >= 1)) throw bad(path, key("context_length"), `is ${ctx}, not positive`);
  for (const k of ["attention.key_length", "attention.value_length"]) {
    const v = scalar(k);
    if (v !== undefined && !(v >= 1 && v <= MAX_EMBEDDING)) throw bad(path, key(k), `is ${v}, outside [1, ${MAX_EMBEDDING}]`);
  }

  // Heads: llama.cpp derives the head width as n_embd / n_head and asserts the division is exact
  // (before a key_length overrides it); grouped-query attention broadcasts the KV heads over the query
  // heads, which ggml asserts divide them. 0 heads is a block without attention (recurrent models).
  const headRaw = intOf(header, key("attention.head_count"), path);
  const kvRaw = intOf(header, key("attention.head_count_kv"), path);
  const heads = headRaw === undefined ? undefined : perBlock(headRaw, blocks, path, key("attention.head_count"));
  const kvs = kvRaw === undefined ? undefined : perBlock(kvRaw, blocks, path, key("attention.head_count_kv"));
  if (heads) {
    for (let b = 0; b < blocks; b++) {
      const h = heads[b];
      const at = Array.isArray(headRaw) ? `${key("attention.head_count")}[${b}]` : key("attention.head_count");
      if (!(h >= 0 && h <= nEmbd)) throw bad(path, at, `is ${h}, outside [0, embedding_length ${nEmbd}]`);
      if (h > 0 && nEmbd % h !== 0) throw bad(path, at, `is ${h}, which does not divide embedding_length ${nEmbd}`);
      if (h === 0 || kvs === undefined) continue;
      const kv = kvs[b];
      const kvAt = Array.isArray(kvRaw) ? `${key("attention.head_count_kv")}[${b}]` : key("attention.head_count_kv");
      if (!(kv >= 1 && kv <= h)) throw bad(path, kvAt, `is ${kv}, outside [1, head_count ${h}]`);
      if (h % kv !== 0) throw bad(path, kvAt, `is ${kv}, which does not divide head_count ${h}`);
    }
  }

  for (const k of ["attention.layer_norm_rms_epsilon", "attention.layer_norm_epsilon"]) {
    const eps = floatOf(header, key(k), path);
    if (eps !== undefined && !(Number.isFinite(eps) && eps > 0 && eps < 1)) throw bad(path, key(k), `is ${eps}, not a finite number in (0, 1)`);
  }
  const freqBase = floatOf(header, key("rope.freq_base"), path);
  if (freqBase !== undefined && !(Number.isFinite(freqBase) && freqBase > 0)) throw bad(path, key("rope.freq_base"), `is ${freqBase}, not a finite positive number`);

  const nVocab = checkVocabulary(header, path);
  checkEmbeddingShapes(header, path, nEmbd, nVocab);
  checkElementwiseTypes(header, path);
}

/**
 * Norm weights and biases enter the graph through ggml's element-wise multiply and add, with the f32
 * activations as the first operand; ggml's CPU kernels abort on any second operand but F32 there
 * ("binary_op: unsupported types", found by the fuzzer: a flipped type byte made a norm Q4_0).
 * Converters always write these 1-D tensors as F32, so anything else is a damaged file.
 */
function checkElementwiseTypes(header: GgufHeader, path: string): void {
  for (const t of header.tensors) {
    const elementwise = t.dims.length === 1 || t.name.endsWith("norm.weight") || t.name.endsWith(".bias");
    if (elementwise && t.type !== GgmlType.F32) {
      throw bad(path, `tensor ${t.name}`, `has type ${ggmlTypeName(t.type)}; norm weights and biases must be F32`);
    }
  }
}

/**
 * The vocabulary: a non-empty array of strings, each once (llama.cpp maps token → id and asserts
 * both directions have the same size), with scores and token types, when present, one per token
 * (llama.cpp reads them by token index).
 *
 * @returns the number of tokens
 */
function checkVocabulary(header: GgufHeader, path: string): number {
  const tokens = header.metadata.get("tokenizer.ggml.tokens");
  if (tokens === undefined) throw bad(path, "tokenizer.ggml.tokens", "is missing");
  if (tokens.type !== "arr" || tokens.itemType !== "str") throw bad(path, "tokenizer.ggml.tokens", "is not an array of strings");
  const list = tokens.value as string[];
  if (list.length === 0) throw bad(path, "tokenizer.ggml.tokens", "is empty");
  const seen = new Map<string, number>();
  for (let i = 0; i < list.length; i++) {
    // llama.cpp reads a token string as a C string: it ends at the first NUL, so "▁O\0" is "▁O"
    const text = list[i].split("\0", 1)[0];
    const first = seen.get(text);
    if (first !== undefined) throw bad(path, "tokenizer.ggml.tokens", `holds ${quoteForMessage(text)} twice as llama.cpp reads it (ids ${first} and ${i})`);
    seen.set(text, i);
  }
  for (const k of ["tokenizer.ggml.scores", "tokenizer.ggml.token_type"]) {
    const v = header.metadata.get(k);
    if (v === undefined) continue;
    if (v.type !== "arr") throw bad(path, k, "is not an array");
    if (v.value.length !== list.length) throw bad(path, k, `has ${v.value.length} values for ${list.length} tokens`);
  }
  return list.length;
}

/** token_embd: one row of embedding_length values per token ([n_embd, n_vocab] in ggml order). */
function checkEmbeddingShapes(header: GgufHeader, path: string, nEmbd: number, nVocab: number): void {
  const t = header.tensors.find((x) => x.name === "token_embd.weight");
  if (t && (t.dims.length !== 2 || t.dims[0] !== nEmbd || t.dims[1] !== nVocab)) {
    throw bad(path, "tensor token_embd.weight", `has shape [${t.dims.join(", ")}], expected [${nEmbd}, ${nVocab}] (embedding_length × tokens)`);
  }
}
