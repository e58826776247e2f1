/**
 * Types and constants of the GGUF container (version 3, little-endian), as laid down by ggml's
 * `gguf.h`. Values carry their GGUF type explicitly so that a file read back and written again is
 * byte-for-byte the same kind of file (a `u32` stays a `u32`, not a JS number of unknown width).
 */

/** The four bytes every GGUF file starts with. */
export const GGUF_MAGIC = "GGUF";
/** The version this package writes. The reader also accepts version 2 (same layout). */
export const GGUF_VERSION = 3;
/** Alignment of the tensor data section when `general.alignment` is absent. */
export const GGUF_DEFAULT_ALIGNMENT = 32;
/** Metadata key that overrides the alignment (must be a `u32` power of two). */
export const GGUF_KEY_ALIGNMENT = "general.alignment";
/** ggml supports at most four dimensions. */
export const GGML_MAX_DIMS = 4;

/** Names of the scalar GGUF value types (everything but `arr`). */
export type GgufScalarTypeName =
  | "u8"
  | "i8"
  | "u16"
  | "i16"
  | "u32"
  | "i32"
  | "f32"
  | "bool"
  | "str"
  | "u64"
  | "i64"
  | "f64";

/** Names of all GGUF value types. */
export type GgufTypeName = GgufScalarTypeName | "arr";

/** On-disk ids of the GGUF value types (`enum gguf_type`). */
export const GGUF_TYPE_ID: Readonly<Record<GgufTypeName, number>> = {
  u8: 0,
  i8: 1,
  u16: 2,
  i16: 3,
  u32: 4,
  i32: 5,
  f32: 6,
  bool: 7,
  str: 8,
  arr: 9,
  u64: 10,
  i64: 11,
  f64: 12,
};

/** Inverse of {@link GGUF_TYPE_ID}, indexed by on-disk id. */
export const GGUF_TYPE_NAME: readonly GgufTypeName[] = [
  "u8",
  "i8",
  "u16",
  "i16",
  "u32",
  "i32",
  "f32",
  "bool",
  "str",
  "arr",
  "u64",
  "i64",
  "f64",
];

/** JS representation of one scalar of each GGUF type. 64-bit integers are `bigint` to stay exact. */
export interface GgufScalarJs {
  u8: number;
  i8: number;
  u16: number;
  i16: number;
  u32: number;
  i32: number;
  f32: number;
  f64: number;
  u64: bigint;
  i64: bigint;
  bool: boolean;
  str: string;
}

/** A typed scalar metadata value. */
export type GgufScalarValue = {
  [T in GgufScalarTypeName]: { readonly type: T; readonly value: GgufScalarJs[T] };
}[GgufScalarTypeName];

/**
 * JS representation of a GGUF array of each item type: numbers in the typed array of their width
 * (64-bit integers in BigInt arrays), so an array costs its bytes; booleans and strings in plain arrays.
 */
export interface GgufArrayJs {
  u8: Uint8Array;
  i8: Int8Array;
  u16: Uint16Array;
  i16: Int16Array;
  u32: Uint32Array;
  i32: Int32Array;
  f32: Float32Array;
  f64: Float64Array;
  u64: BigUint64Array;
  i64: BigInt64Array;
  bool: readonly boolean[];
  str: readonly string[];
}

/**
 * A typed array metadata value. GGUF arrays are homogeneous; nested arrays are not supported by
 * llama.cpp and are rejected here too.
 */
export type GgufArrayValue = {
  [T in GgufScalarTypeName]: {
    readonly type: "arr";
    readonly itemType: T;
    readonly value: GgufArrayJs[T];
  };
}[GgufScalarTypeName];

/** Any metadata value: a typed scalar or a typed homogeneous array. */
export type GgufValue = GgufScalarValue | GgufArrayValue;

/** Plain JS value of a {@link GgufValue} (what {@link GgufValue.value} holds). */
export type GgufPlainValue = GgufValue["value"];

// Typing helpers: `u32(4)` reads better than `{ type: "u32", value: 4 }` and checks ranges early,
// because a silently wrapped integer in a model file is very hard to debug later.

function checkInt(type: string, v: number, min: number, max: number): number {
  if (!Number.isInteger(v) || v < min || v > max) {
    throw new RangeError(`${type} value out of range: ${v}`);
  }
  return v;
}

/** An unsigned 8-bit value. */
export const u8 = (v: number): GgufScalarValue => ({ type: "u8", value: checkInt("u8", v, 0, 0xff) });
/** A signed 8-bit value. */
export const i8 = (v: number): GgufScalarValue => ({ type: "i8", value: checkInt("i8", v, -0x80, 0x7f) });
/** An unsigned 16-bit value. */
export const u16 = (v: number): GgufScalarValue => ({ type: "u16", value: checkInt("u16", v, 0, 0xffff) });
/** A signed 16-bit value. */
export const i16 = (v: number): GgufScalarValue => ({
  type: "i16",
  value: checkInt("i16", v, -0x8000, 0x7fff),
});
/** An unsigned 32-bit value. */
export const u32 = (v: number): GgufScalarValue => ({
  type: "u32",
  value: checkInt("u32", v, 0, 0xffffffff),
});
/** A signed 32-bit value. */
export const i32 = (v: number): GgufScalarValue => ({
  type: "i32",
  value: checkInt("i32", v, -0x80000000, 0x7fffffff),
});
/** A 32-bit float (stored rounded with `Math.fround`, so it reads back equal). */
export const f32 = (v: number): GgufScalarValue => ({ type: "f32", value: Math.fround(v) });
/** A 64-bit float. */
export const f64 = (v: number): GgufScalarValue => ({ type: "f64", value: v });
/** An unsigned 64-bit value; numbers are accepted when they are safe integers. */
export const u64 = (v: number | bigint): GgufScalarValue => {
  const b = BigInt(typeof v === "number" ? checkInt("u64", v, 0, Number.MAX_SAFE_INTEGER) : v);
  if (b < 0n || b > 0xffffffffffffffffn) throw new RangeError(`u64 value out of range: ${b}`);
  return { type: "u64", value: b };
};
/** A signed 64-bit value; numbers are accepted when they are safe integers. */
export const i64 = (v: number | bigint): GgufScalarValue => {
  const b = BigInt(
    typeof v === "number" ? checkInt("i64", v, Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER) : v,
  );
  if (b < -0x8000000000000000n || b > 0x7fffffffffffffffn) {
    throw new RangeError(`i64 value out of range: ${b}`);
  }
  return { type: "i64", value: b };
};
/** A boolean (stored as one byte). */
export const bool = (v: boolean): GgufScalarValue => ({ type: "bool", value: v });
/** A UTF-8 string. */
export const str = (v: string): GgufScalarValue => ({ type: "str", value: v });

/**
 * A homogeneous array of `itemType` ({@link GgufArrayJs}: numbers come back in a typed array). Numeric
 * items are range-checked like the scalar helpers; `f32` items are rounded with `Math.fround`;
 * `u64`/`i64` items may be safe-integer numbers.
 *
 * @example arr("str", ["a", "b"]); arr("i32", tokenTypes); arr("f32", [0.5, 1.5])
 */
export function arr<T extends GgufScalarTypeName>(
  itemType: T,
  values: ArrayLike<GgufScalarJs[T] | (T extends "u64" | "i64" ? number : never)>,
): GgufArrayValue {
  const make = SCALAR_MAKERS[itemType] as (v: unknown) => GgufScalarValue;
  const out = itemType === "str" || itemType === "bool" ? new Array(values.length) : new GGUF_TYPED_ARRAY[itemType as Exclude<GgufScalarTypeName, "str" | "bool">](values.length);
  // Strings need no normalisation; skip the per-item object for large token lists.
  if (itemType === "str") {
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      if (typeof v !== "string") throw new TypeError(`arr("str") item ${i} is not a string`);
      out[i] = v;
    }
  } else {
    for (let i = 0; i < values.length; i++) out[i] = make(values[i]).value;
  }
  return { type: "arr", itemType, value: out } as GgufArrayValue;
}

/** A typed-array constructor: by length, or as a view over bytes. */
interface GgufTypedArrayConstructor {
  new (length: number): { [i: number]: unknown } & ArrayLike<unknown>;
  new (buffer: ArrayBuffer, byteOffset: number, length: number): ArrayLike<unknown>;
}

/**
 * The typed array of each numeric item type ({@link GgufArrayJs}): what `arr` builds and what the
 * reader views a file's bytes as (GGUF is little-endian, as is every platform the package supports).
 */
export const GGUF_TYPED_ARRAY: Readonly<Record<Exclude<GgufScalarTypeName, "str" | "bool">, GgufTypedArrayConstructor>> = {
  u8: Uint8Array,
  i8: Int8Array,
  u16: Uint16Array,
  i16: Int16Array,
  u32: Uint32Array,
  i32: Int32Array,
  f32: Float32Array,
  f64: Float64Array,
  u64: BigUint64Array,
  i64: BigInt64Array,
};

const SCALAR_MAKERS: Readonly<Record<GgufScalarTypeName, (v: never) => GgufScalarValue>> = {
  u8,
  i8,
  u16,
  i16,
  u32,
  i32,
  f32,
  f64,
  u64,
  i64,
  bool,
  str,
};

/** ggml tensor element types (`enum ggml_type`); ids are what GGUF stores. */
export enum GgmlType {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
  NVFP4 = 40,
  Q1_0 = 41,
  Q2_0 = 42,
}

const QK_K = 256;

/**
 * Block geometry of each known ggml type: `[elements per block, bytes per block]` (ggml's
 * `blck_size` / `type_size`). Needed to know how many bytes a tensor occupies; a type missing here
 * cannot be sized, so the reader rejects it.
 */
export const GGML_TYPE_SIZE: Readonly<Partial<Record<GgmlType, readonly [number, number]>>> = {
  [GgmlType.F32]: [1, 4],
  [GgmlType.F16]: [1, 2],
  [GgmlType.Q4_0]: [32, 2 + 16],
  [GgmlType.Q4_1]: [32, 2 + 2 + 16],
  [GgmlType.Q5_0]: [32, 2 + 4 + 16],
  [GgmlType.Q5_1]: [32, 2 + 2 + 4 + 16],
  [GgmlType.Q8_0]: [32, 2 + 32],
  [GgmlType.Q8_1]: [32, 4 + 4 + 32],
  [GgmlType.Q2_K]: [QK_K, 2 + 2 + QK_K / 16 + QK_K / 4],
  [GgmlType.Q3_K]: [QK_K, 2 + QK_K / 4 + QK_K / 8 + 12],
  [GgmlType.Q4_K]: [QK_K, 2 + 2 + QK_K / 2 + 12],
  [GgmlType.Q5_K]: [QK_K, 2 + 2 + QK_K / 2 + QK_K / 8 + 12],
  [GgmlType.Q6_K]: [QK_K, 2 + QK_K / 2 + QK_K / 4 + QK_K / 16],
  [GgmlType.Q8_K]: [QK_K, 4 + QK_K + QK_K / 8],
  [GgmlType.IQ2_XXS]: [QK_K, 2 + QK_K / 4],
  [GgmlType.IQ2_XS]: [QK_K, 2 + QK_K / 4 + QK_K / 32],
  [GgmlType.IQ3_XXS]: [QK_K, 2 + QK_K / 4 + QK_K / 8],
  [GgmlType.IQ1_S]: [QK_K, 2 + QK_K / 8 + QK_K / 16],
  [GgmlType.IQ4_NL]: [32, 2 + 16],
  [GgmlType.IQ3_S]: [QK_K, 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4],
  [GgmlType.IQ2_S]: [QK_K, 2 + QK_K / 4 + QK_K / 16],
  [GgmlType.IQ4_XS]: [QK_K, 2 + 2 + QK_K / 2 + QK_K / 64],
  [GgmlType.I8]: [1, 1],
  [GgmlType.I16]: [1, 2],
  [GgmlType.I32]: [1, 4],
  [GgmlType.I64]: [1, 8],
  [GgmlType.F64]: [1, 8],
  [GgmlType.IQ1_M]: [QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32],
  [GgmlType.BF16]: [1, 2],
  [GgmlType.TQ1_0]: [QK_K, 2 + 4 * 13],
  [GgmlType.TQ2_0]: [QK_K, 2 + 64],
  [GgmlType.MXFP4]: [32, 1 + 16],
  [GgmlType.NVFP4]: [64, 4 + 32],
  [GgmlType.Q1_0]: [128, 2 + 16],
  [GgmlType.Q2_0]: [64, 2 + 16],
};

/** Human name of a ggml type id (`"F16"`, `"Q8_0"`, or `"type<id>"` when unknown). */
export function ggmlTypeName(type: number): string {
  return (GgmlType as unknown as Record<number, string>)[type] ?? `type${type}`;
}

/**
 * Bytes occupied by `nElements` elements of `type`, or `undefined` when the type is unknown or the
 * count is not a whole number of blocks.
 */
export function ggmlNBytes(type: number, nElements: number): number | undefined {
  const geo = GGML_TYPE_SIZE[type as GgmlType];
  if (!geo) return undefined;
  const [blck, size] = geo;
  if (nElements % blck !== 0) return undefined;
  return (nElements / blck) * size;
}

/** One tensor as described in a GGUF header. */
export interface GgufTensorInfo {
  /** Tensor name, e.g. `blk.0.attn_q.weight`. */
  readonly name: string;
  /**
   * Dimensions in ggml's `ne` order as stored: `dims[0]` is the fastest-varying (contiguous) one.
   * A PyTorch `[out, in]` weight is stored as `[in, out]`.
   */
  readonly dims: readonly number[];
  /** Element type (a {@link GgmlType} id). */
  readonly type: GgmlType;
  /** Offset of the data relative to {@link GgufHeader.dataOffset} (multiple of the alignment). */
  readonly offset: number;
  /** Number of elements (product of dims). */
  readonly nElements: number;
  /** Size of the data in bytes. */
  readonly nBytes: number;
}

/** Everything in a GGUF file except the tensor data. */
export interface GgufHeader {
  /** GGUF version (2 or 3). */
  readonly version: number;
  /** Metadata in file order. */
  readonly metadata: Map<string, GgufValue>;
  /** Tensor descriptors in file order. */
  readonly tensors: GgufTensorInfo[];
  /** Absolute file offset of the tensor data section. */
  readonly dataOffset: number;
  /** Alignment of the data section and tensor offsets. */
  readonly alignment: number;
  /** Size of the file in bytes when the header was read. */
  readonly fileSize: number;
}
