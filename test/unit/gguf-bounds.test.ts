// The GGUF reader's caps on what a header may declare (src/gguf/stream.ts, metadata.ts): a string
// longer than MAX_GGUF_STRING_BYTES and an array of more items than MAX_GGUF_ARRAY_ITEMS (or
// MAX_GGUF_TOKENIZER_ITEMS for tokenizer.ggml.*) are refused with NOT_GGUF before they are read, even
// when the file holds them (sparse files here), and numeric arrays come back as typed arrays over the
// file's bytes, so an array costs its size. Model.load on such a file rejects with NOT_GGUF too.
import { openSync, closeSync, ftruncateSync, writeSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Model } from "../../src/index.js";
import { GGUF_TYPE_ID, GgufWriter, arr, readGgufHeader, type GgufScalarTypeName } from "../../src/gguf/index.js";
import { MAX_GGUF_STRING_BYTES } from "../../src/gguf/stream.js";
import { MAX_GGUF_ARRAY_ITEMS, MAX_GGUF_TOKENIZER_ITEMS } from "../../src/gguf/metadata.js";
import { expectCode } from "../helpers/gavel-error.js";
import { tempDirs } from "../helpers/temp-dirs.js";

const newDir = tempDirs("gavel-gguf-bounds-");

const u64b = (v: bigint | number) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(BigInt(v));
  return b;
};
const i32b = (v: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32LE(v);
  return b;
};
const strb = (s: string) => Buffer.concat([u64b(Buffer.byteLength(s)), Buffer.from(s)]);

/** A GGUF v3 file of one metadata key whose header is `rest`, then `tail` bytes of zeros (a hole: sparse). */
function sparseGguf(path: string, rest: Buffer[], tail: number): string {
  const head = Buffer.alloc(24);
  head.write("GGUF", 0, "latin1");
  head.writeUInt32LE(3, 4);
  head.writeBigInt64LE(0n, 8);
  head.writeBigInt64LE(1n, 16);
  const bytes = Buffer.concat([head, ...rest]);
  const fd = openSync(path, "w");
  try {
    writeSync(fd, bytes);
    ftruncateSync(fd, bytes.length + tail);
  } finally {
    closeSync(fd);
  }
  return path;
}

/** A file with one array `key` of `n` items of `type`, the items all present (zeros). */
function arrayGguf(key: string, type: GgufScalarTypeName, n: number, size: number): string {
  return sparseGguf(join(newDir(), "array.gguf"), [strb(key), i32b(GGUF_TYPE_ID.arr), i32b(GGUF_TYPE_ID[type]), u64b(n)], n * size + 64);
}

describe("GGUF strings", () => {
  it("one longer than 64 MiB is NOT_GGUF before it is read, though the file holds it", async () => {
    const n = MAX_GGUF_STRING_BYTES + 1;
    const value = sparseGguf(join(newDir(), "long-value.gguf"), [strb("k"), i32b(GGUF_TYPE_ID.str), u64b(n)], n + 64);
    await expectCode(readGgufHeader(value), "NOT_GGUF", /value of "k" at byte 37 is 67108865 bytes long, more than the 67108864 a metadata string may be/);
    const key = sparseGguf(join(newDir(), "long-key.gguf"), [u64b(n)], n + 64);
    await expectCode(readGgufHeader(key), "NOT_GGUF", /key #0 at byte 24 is 67108865 bytes long/);
    // 64 MiB itself is read
    const most = sparseGguf(join(newDir(), "most.gguf"), [strb("k"), i32b(GGUF_TYPE_ID.str), u64b(MAX_GGUF_STRING_BYTES)], MAX_GGUF_STRING_BYTES);
    const h = await readGgufHeader(most);
    expect((h.metadata.get("k")!.value as string).length).toBe(MAX_GGUF_STRING_BYTES);
  });

  it("Model.load of a model whose one string is 600,000,000 bytes rejects with NOT_GGUF, not a raw error", async () => {
    const n = 600_000_000;
    const path = sparseGguf(join(newDir(), "model.gguf"), [strb("general.name"), i32b(GGUF_TYPE_ID.str), u64b(n)], n + 64);
    await expectCode(Model.load(path), "NOT_GGUF", /value of "general\.name" at byte \d+ is 600000000 bytes long/);
  });
});

describe("GGUF arrays", () => {
  it("of more than 2^24 items are NOT_GGUF before they are read, though the file holds them", async () => {
    const n = MAX_GGUF_ARRAY_ITEMS + 1;
    await expectCode(readGgufHeader(arrayGguf("a", "u8", n, 1)), "NOT_GGUF", /array "a" at byte \d+ declares 16777217 items, more than the 16777216 a metadata array may hold/);
    await expectCode(readGgufHeader(arrayGguf("a", "str", n, 8)), "NOT_GGUF", /declares 16777217 items/);
  });

  it("of the tokenizer are capped at 2^22 items", async () => {
    const n = MAX_GGUF_TOKENIZER_ITEMS + 1;
    await expectCode(readGgufHeader(arrayGguf("tokenizer.ggml.token_type", "i32", n, 4)), "NOT_GGUF", /array "tokenizer\.ggml\.token_type" at byte \d+ declares 4194305 items, more than the 4194304 a tokenizer array may hold/);
    // the same count under another key is read
    const h = await readGgufHeader(arrayGguf("general.counts", "u8", n, 1));
    expect(h.metadata.get("general.counts")!.value).toHaveLength(n);
  });

  it("of numbers come back as typed arrays over the file's bytes, booleans and strings as arrays", async () => {
    const path = join(newDir(), "typed.gguf");
    const w = new GgufWriter();
    const values: Record<string, number[]> = { u8: [0, 255], i8: [-128, 127], u16: [65535, 1], i16: [-32768, 2], u32: [4294967295, 3], i32: [-2147483648, 4], f32: [0.5, -1.25], f64: [Math.PI, -0] };
    for (const [t, v] of Object.entries(values)) w.set(`a.${t}`, arr(t as GgufScalarTypeName, v));
    w.set("a.u64", arr("u64", [2n ** 64n - 1n, 0]));
    w.set("a.i64", arr("i64", [-(2n ** 63n), 5]));
    w.set("a.bool", arr("bool", [true, false]));
    w.set("a.str", arr("str", ["x", ""]));
    w.set("a.empty", arr("f32", []));
    await w.write(path);
    const h = await readGgufHeader(path);
    const kinds = { u8: Uint8Array, i8: Int8Array, u16: Uint16Array, i16: Int16Array, u32: Uint32Array, i32: Int32Array, f32: Float32Array, f64: Float64Array };
    for (const [t, cls] of Object.entries(kinds)) {
      const got = h.metadata.get(`a.${t}`)!.value;
      expect(got, t).toBeInstanceOf(cls);
      expect(Array.from(got as ArrayLike<number>), t).toEqual(values[t]);
    }
    expect(h.metadata.get("a.u64")!.value).toEqual(new BigUint64Array([2n ** 64n - 1n, 0n]));
    expect(h.metadata.get("a.i64")!.value).toEqual(new BigInt64Array([-(2n ** 63n), 5n]));
    expect(h.metadata.get("a.bool")!.value).toEqual([true, false]);
    expect(h.metadata.get("a.str")!.value).toEqual(["x", ""]);
    expect(h.metadata.get("a.empty")!.value).toEqual(new Float32Array(0));
    // the helper builds the same typed arrays, so a header read back equals what was written
    expect(arr("u16", [65535, 1])).toEqual(h.metadata.get("a.u16"));
    expect(arr("u64", [1, 2n]).value).toEqual(new BigUint64Array([1n, 2n]));
  });
});
