/**
 * GGUF metadata values: reading a key's typed value off the stream (arrays bounded by the bytes left
 * before they are allocated), and plain accessors on a header that was read.
 */
import { GGUF_TYPE_NAME, GGUF_TYPED_ARRAY, type GgufHeader, type GgufScalarTypeName, type GgufTypeName, type GgufValue } from "./types.js";
import { notGguf, type StreamReader } from "./stream.js";
import { quoteForMessage } from "./regular-file.js";

/** Minimum encoded size of each scalar type, used to bound array counts before allocating. */
const MIN_SIZE: Readonly<Record<GgufScalarTypeName, number>> = {
  u8: 1,
  i8: 1,
  bool: 1,
  u16: 2,
  i16: 2,
  u32: 4,
  i32: 4,
  f32: 4,
  u64: 8,
  i64: 8,
  f64: 8,
  str: 8, // length prefix only
};

async function readScalar(r: StreamReader, type: GgufScalarTypeName, what: string): Promise<GgufValue["value"]> {
  if (type === "str") return r.string(what);
  await r.need(MIN_SIZE[type]);
  return readBufferedScalar(r, type);
}

/** Read a fixed-size scalar whose bytes are already in the window. */
function readBufferedScalar(r: StreamReader, type: Exclude<GgufScalarTypeName, "str">): GgufValue["value"] {
  switch (type) {
    case "u8":
      return r.u8();
    case "i8":
      return r.i8();
    case "bool":
      return r.i8() !== 0;
    case "u16":
      return r.u16();
    case "i16":
      return r.i16();
    case "u32":
      return r.u32();
    case "i32":
      return r.i32();
    case "f32":
      return r.f32();
    case "f64":
      return r.f64();
    case "u64":
      return r.u64();
    case "i64":
      return r.i64();
  }
}

async function readTypeId(r: StreamReader, path: string, what: string): Promise<GgufTypeName> {
  await r.need(4);
  const id = r.i32();
  const name = GGUF_TYPE_NAME[id];
  if (name === undefined) throw notGguf(path, `${what} has unknown value type ${id}`);
  return name;
}

/**
 * The most items a metadata array may declare: 2²⁴ (16,777,216), and 2²² (4,194,304) for the
 * tokenizer's arrays (tokenizer.ggml.*: tokens, scores, token types and merges, one item a token or
 * merge; the largest vocabularies have about 262k tokens). More is refused with NOT_GGUF before
 * anything is allocated for it.
 */
export const MAX_GGUF_ARRAY_ITEMS = 1 << 24;
/** See {@link MAX_GGUF_ARRAY_ITEMS}. */
export const MAX_GGUF_TOKENIZER_ITEMS = 1 << 22;

/** An array's items: strings one by one, booleans from their bytes, numbers as a typed array over their bytes. */
async function readItems(r: StreamReader, it: GgufScalarTypeName, n: number, key: string): Promise<unknown> {
  if (it === "str") {
    const out: string[] = new Array(n);
    for (let i = 0; i < n; i++) {
      // Token lists and merges have 150k+ items: decode synchronously while the string is already
      // in the window, and only take the async refill path at window boundaries.
      out[i] = r.stringIfBuffered() ?? (await r.string(`item of ${quoteForMessage(key)}`));
    }
    return out;
  }
  // n * size <= remaining() was checked by count()
  const bytes = await r.bytes(n * MIN_SIZE[it]);
  if (it === "bool") return Array.from(bytes, (b) => b !== 0);
  return new GGUF_TYPED_ARRAY[it](bytes.buffer as ArrayBuffer, 0, n);
}

/** One metadata value (its type id, then the value: a scalar, or an array of scalars). */
export async function readValue(r: StreamReader, path: string, key: string): Promise<GgufValue> {
  const type = await readTypeId(r, path, `key ${quoteForMessage(key)}`);
  if (type !== "arr") {
    const t = type;
    return { type: t, value: await readScalar(r, t, `value of ${quoteForMessage(key)}`) } as GgufValue;
  }
  const itemType = await readTypeId(r, path, `array ${quoteForMessage(key)}`);
  if (itemType === "arr") throw notGguf(path, `array ${quoteForMessage(key)} nests arrays, which GGUF readers do not support`);
  const it: GgufScalarTypeName = itemType;
  const at = r.tell();
  const n = await r.count(`array ${quoteForMessage(key)}`, MIN_SIZE[it]);
  const cap = key.startsWith("tokenizer.ggml.") ? MAX_GGUF_TOKENIZER_ITEMS : MAX_GGUF_ARRAY_ITEMS;
  if (n > cap) throw notGguf(path, `array ${quoteForMessage(key)} at byte ${at} declares ${n} items, more than the ${cap} ${cap === MAX_GGUF_ARRAY_ITEMS ? "a metadata array" : "a tokenizer array"} may hold`);
  return { type: "arr", itemType: it, value: await readItems(r, it, n, key) } as GgufValue;
}

/**
 * Plain value of a metadata key, or `undefined` when absent. 64-bit integers come back as `bigint`.
 */
export function ggufMeta(header: GgufHeader, key: string): GgufValue["value"] | undefined {
  return header.metadata.get(key)?.value;
}

/**
 * A numeric metadata value as a JS number (u64/i64 converted when safe), or `undefined` when the
 * key is absent or not a number.
 */
export function ggufMetaNumber(header: GgufHeader, key: string): number | undefined {
  const v = header.metadata.get(key);
  if (!v || v.type === "arr" || v.type === "str" || v.type === "bool") return undefined;
  if (typeof v.value === "bigint") {
    return v.value <= BigInt(Number.MAX_SAFE_INTEGER) && v.value >= BigInt(Number.MIN_SAFE_INTEGER)
      ? Number(v.value)
      : undefined;
  }
  return v.value;
}

/** A string metadata value, or `undefined` when absent or not a string. */
export function ggufMetaString(header: GgufHeader, key: string): string | undefined {
  const v = header.metadata.get(key);
  return v?.type === "str" ? v.value : undefined;
}
