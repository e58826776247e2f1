/**
 * Model fingerprints: what a projections file or a bank on disk records about the model it was built
 * with, so that loading it against another model fails loudly instead of routing on garbage.
 *
 * Shape (architecture, layers, width, vocabulary size) alone is not enough: two fine-tunes of one
 * base share every shape yet tokenise differently, and banks store token ids. The vocabulary hash
 * catches that case.
 */
import { invalidArgument } from "../errors.js";
import { createHash } from "node:crypto";
import { stat } from "node:fs/promises";
import { readGgufHeader } from "../gguf/index.js";
import type { Model } from "./Model.js";

/** Identity of a model as far as routing is concerned. */
export interface ModelFingerprint {
  /** `general.architecture` as llama.cpp reports it, e.g. `qwen3`, `llama`. */
  readonly architecture: string;
  /** Number of transformer blocks. */
  readonly nLayer: number;
  /** Width of the residual stream. */
  readonly nEmbd: number;
  /** Vocabulary size. */
  readonly nVocab: number;
  /** sha256 (lowercase hex) of the vocabulary, see {@link modelFingerprint}. */
  readonly vocabHash: string;
}

// Keyed by path, size and mtime: a model file replaced in place gets a fresh fingerprint, while the
// common case (the same file opened many times) reads its 150k-token vocabulary once.
const cache = new Map<string, Promise<string>>();

/**
 * The fingerprint of a loaded model.
 *
 * `vocabHash` is the sha256 of `tokenizer.ggml.tokens` read from the model's GGUF header, each token
 * encoded as its UTF-8 byte length (u32 LE) followed by its bytes, so that no two vocabularies can
 * collide by concatenation. When the file has no token list (llama.cpp cannot load such a model, so
 * this is a safety net), the pieces `model.tokenPiece(i)` for every id are hashed the same way under
 * another domain tag, so the two schemes never produce equal hashes by accident.
 *
 * The hash is cached per path, size and mtime.
 */
export async function modelFingerprint(model: Model): Promise<ModelFingerprint> {
  // a caller's argument reaches here first (Router.open, Projections.random, training): not a loaded Model is typed
  if (typeof model !== "object" || model === null || typeof (model as Partial<Model>).info !== "object" || typeof (model as Partial<Model>).path !== "string") {
    throw invalidArgument(`model must be a Model (from Model.load), got ${model === null ? "null" : typeof model}`);
  }
  const { architecture, nLayer, nEmbd, nVocab } = model.info;
  let key: string;
  try {
    const st = await stat(model.path);
    key = `${model.path}\0${st.size}\0${st.mtimeMs}`;
  } catch {
    // The file went away after loading; hash from the loaded model, uncached.
    return { architecture, nLayer, nEmbd, nVocab, vocabHash: hashPieces(model) };
  }
  let p = cache.get(key);
  if (!p) {
    p = vocabHashOf(model);
    cache.set(key, p);
    // A failed read must not poison the cache.
    p.catch(() => cache.delete(key));
  }
  return { architecture, nLayer, nEmbd, nVocab, vocabHash: await p };
}

async function vocabHashOf(model: Model): Promise<string> {
  const header = await readGgufHeader(model.path);
  const tokens = header.metadata.get("tokenizer.ggml.tokens");
  if (tokens?.type === "arr" && tokens.itemType === "str") {
    return hashStrings("gavel-vocab-tokens-v1", tokens.value as readonly string[]);
  }
  return hashPieces(model);
}

function hashPieces(model: Model): string {
  const pieces: string[] = new Array(model.info.nVocab);
  for (let i = 0; i < pieces.length; i++) pieces[i] = model.tokenPiece(i);
  return hashStrings("gavel-vocab-pieces-v1", pieces);
}

function hashStrings(domain: string, items: readonly string[]): string {
  const h = createHash("sha256");
  h.update(domain);
  const len = Buffer.alloc(4);
  len.writeUInt32LE(items.length);
  h.update(len);
  for (const s of items) {
    const b = Buffer.from(s, "utf8");
    len.writeUInt32LE(b.length);
    h.update(len);
    h.update(b);
  }
  return h.digest("hex");
}

/** Whether two fingerprints describe the same model (every field equal). */
export function sameModel(a: ModelFingerprint, b: ModelFingerprint): boolean {
  return (
    a.architecture === b.architecture &&
    a.nLayer === b.nLayer &&
    a.nEmbd === b.nEmbd &&
    a.nVocab === b.nVocab &&
    a.vocabHash === b.vocabHash
  );
}

/** A short human description, e.g. `qwen3 with 36 layers, n_embd 4096, 151936 tokens (vocab 3fa2c1d09b1e)`. */
export function describeModel(fp: ModelFingerprint): string {
  return `${fp.architecture} with ${fp.nLayer} layers, n_embd ${fp.nEmbd}, ${fp.nVocab} tokens (vocab ${fp.vocabHash.slice(0, 12)})`;
}

/**
 * What differs between `expected` and `actual`, readable, e.g.
 * `architecture qwen3 vs llama; 36 layers vs 5; n_embd 4096 vs 64`; `undefined` when they are the
 * same model. When only the vocabulary differs the text says so explicitly, since that is the
 * confusing case (same shapes, different tokenizer: typically another fine-tune or a re-converted file).
 */
export function describeMismatch(expected: ModelFingerprint, actual: ModelFingerprint): string | undefined {
  const diffs: string[] = [];
  if (expected.architecture !== actual.architecture) diffs.push(`architecture ${expected.architecture} vs ${actual.architecture}`);
  if (expected.nLayer !== actual.nLayer) diffs.push(`${expected.nLayer} layers vs ${actual.nLayer}`);
  if (expected.nEmbd !== actual.nEmbd) diffs.push(`n_embd ${expected.nEmbd} vs ${actual.nEmbd}`);
  if (expected.nVocab !== actual.nVocab) diffs.push(`${expected.nVocab} tokens vs ${actual.nVocab}`);
  if (expected.vocabHash !== actual.vocabHash) {
    const h = `vocabulary hash ${expected.vocabHash.slice(0, 12)}… vs ${actual.vocabHash.slice(0, 12)}…`;
    diffs.push(diffs.length === 0 ? `same shapes but a different vocabulary (${h})` : h);
  }
  return diffs.length === 0 ? undefined : diffs.join("; ");
}

/** Runtime check that `v` is a well-formed {@link ModelFingerprint} (for files read from disk). */
export function isModelFingerprint(v: unknown): v is ModelFingerprint {
  if (typeof v !== "object" || v === null) return false;
  const o = v as Record<string, unknown>;
  const posInt = (x: unknown) => typeof x === "number" && Number.isInteger(x) && x > 0;
  return (
    typeof o.architecture === "string" &&
    o.architecture.length > 0 &&
    posInt(o.nLayer) &&
    posInt(o.nEmbd) &&
    posInt(o.nVocab) &&
    typeof o.vocabHash === "string" &&
    /^[0-9a-f]{64}$/.test(o.vocabHash)
  );
}
