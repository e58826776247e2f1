import { mkdtemp, readFile, rm, stat, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GavelError } from "../../src/errors.js";
import {
  GGUF_TYPE_ID,
  GgmlType,
  GgufWriter,
  arr,
  bool,
  f32,
  f64,
  floatToHalf,
  ggufMetaNumber,
  ggufMetaString,
  halfToFloat,
  i16,
  i32,
  i64,
  i8,
  readGgufHeader,
  readGgufTensor,
  readGgufTensorBytes,
  str,
  u16,
  u32,
  u64,
  u8,
  type GgufScalarTypeName,
  type GgufValue,
} from "../../src/gguf/index.js";
import {
  QWEN3_ENDOFTEXT,
  QWEN3_IM_END,
  QWEN3_IM_START,
  QWEN3_THINK,
  QWEN3_VOCAB_SIZE,
  defaultFixtureDir,
  makeQwen3Fixture,
} from "../fixtures/qwen3.js";
import { expectCode } from "../helpers/gavel-error.js";
import { rng } from "../helpers/random.js";
import { needsShared, repoRoot, SHARED, storiesPath } from "../helpers/paths.js";

const NO_SHARED = needsShared("stories260K, a llama.cpp-converted model", SHARED.stories);


let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "gavel-gguf-test-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});


function randomScalar(r: () => number, type: GgufScalarTypeName): GgufValue["value"] {
  const int = (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
  switch (type) {
    case "u8":
      return int(0, 255);
    case "i8":
      return int(-128, 127);
    case "u16":
      return int(0, 65535);
    case "i16":
      return int(-32768, 32767);
    case "u32":
      return int(0, 0xffffffff);
    case "i32":
      return int(-0x80000000, 0x7fffffff);
    case "f32":
      return Math.fround((r() - 0.5) * 1e6);
    case "f64":
      return (r() - 0.5) * 1e300;
    case "u64":
      return (BigInt(int(0, 0xffffffff)) << 32n) | BigInt(int(0, 0xffffffff));
    case "i64":
      return BigInt.asIntN(64, (BigInt(int(0, 0xffffffff)) << 32n) | BigInt(int(0, 0xffffffff)));
    case "bool":
      return r() < 0.5;
    case "str": {
      const alphabet = ["a", "Z", " ", "é", "漢", "🦙", "\n", "Ġ", "<|im_start|>"];
      let s = "";
      const n = int(0, 20);
      for (let i = 0; i < n; i++) s += alphabet[int(0, alphabet.length - 1)];
      return s;
    }
  }
}

const SCALARS: GgufScalarTypeName[] = ["u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str", "u64", "i64", "f64"];

/** A small valid file for the corruption tests. */
async function writeSmall(path: string): Promise<void> {
  const w = new GgufWriter();
  w.set("general.architecture", str("test"));
  w.set("test.name", str("hello"));
  w.set("test.list", arr("u32", [1, 2, 3]));
  w.addTensor("a", [4, 2], new Float32Array(8).map((_, i) => i));
  w.addTensor("b", [3], new Float32Array([1, 2, 3]));
  await w.write(path);
}

describe("GGUF typing helpers", () => {
  it("range-check integers and round f32", () => {
    expect(() => u8(256)).toThrow(RangeError);
    expect(() => i8(-129)).toThrow(RangeError);
    expect(() => u32(-1)).toThrow(RangeError);
    expect(() => i32(1.5)).toThrow(RangeError);
    expect(() => u64(-1n)).toThrow(RangeError);
    expect(u64(5).value).toBe(5n);
    expect(f32(0.1).value).toBe(Math.fround(0.1));
    expect(arr("u64", [1, 2n]).value).toEqual(new BigUint64Array([1n, 2n]));
    expect(() => arr("u8", [1, 300])).toThrow(RangeError);
  });
});

describe("GGUF round trip", () => {
  it("writes and reads back metadata of every type and F32/F16/Q8_0 tensors", async () => {
    const r = rng(42);
    const w = new GgufWriter();
    const expected = new Map<string, GgufValue>();
    const makers = { u8, i8, u16, i16, u32, i32, f32, f64, u64, i64, bool, str } as Record<
      GgufScalarTypeName,
      (v: never) => GgufValue
    >;
    for (const t of SCALARS) {
      for (let k = 0; k < 3; k++) {
        const v = makers[t](randomScalar(r, t) as never);
        w.set(`scalar.${t}.${k}`, v);
        expected.set(`scalar.${t}.${k}`, v);
      }
      const items = Array.from({ length: 1 + Math.floor(r() * 50) }, () => randomScalar(r, t));
      const a = arr(t, items as never);
      w.set(`array.${t}`, a);
      expected.set(`array.${t}`, a);
      const empty = arr(t, []);
      w.set(`empty.${t}`, empty);
      expected.set(`empty.${t}`, empty);
    }
    // Non-default alignment must be honoured for offsets and the data section.
    w.set("general.alignment", u32(64));
    expected.set("general.alignment", u32(64));

    const t1 = new Float32Array(7 * 5).map(() => (r() - 0.5) * 10);
    const t2 = new Float32Array(32 * 3).map(() => (r() - 0.5) * 2);
    const t3 = new Float32Array(2 * 3 * 4 * 5).map(() => r());
    // Q8_0 as raw bytes: 2 blocks of (f16 scale, 32 int8).
    const q8 = new Uint8Array(2 * 34);
    const q8dv = new DataView(q8.buffer);
    const q8Expected = new Float32Array(64);
    for (let b = 0; b < 2; b++) {
      const scaleHalf = floatToHalf(new Float32Array([0.125 * (b + 1)]))[0];
      q8dv.setUint16(b * 34, scaleHalf, true);
      for (let j = 0; j < 32; j++) {
        const q = Math.floor(r() * 255) - 127;
        q8dv.setInt8(b * 34 + 2 + j, q);
        q8Expected[b * 32 + j] = 0.125 * (b + 1) * q;
      }
    }
    w.addTensor("t.f32", [7, 5], t1);
    w.addTensor("t.f16", [32, 3], () => t2, GgmlType.F16);
    w.addTensor("t.4d", [2, 3, 4, 5], t3);
    w.addTensor("t.q8", [64], q8, GgmlType.Q8_0);
    w.addTensor("t.empty", [0], new Float32Array(0));

    const path = join(dir, "roundtrip.gguf");
    await w.write(path);
    const h = await readGgufHeader(path);
    expect(h.version).toBe(3);
    expect(h.alignment).toBe(64);
    expect(h.dataOffset % 64).toBe(0);
    expect([...h.metadata.keys()]).toEqual([...expected.keys()]);
    for (const [k, v] of expected) expect(h.metadata.get(k), k).toEqual(v);

    expect(h.tensors.map((t) => [t.name, t.dims, t.type])).toEqual([
      ["t.f32", [7, 5], GgmlType.F32],
      ["t.f16", [32, 3], GgmlType.F16],
      ["t.4d", [2, 3, 4, 5], GgmlType.F32],
      ["t.q8", [64], GgmlType.Q8_0],
      ["t.empty", [0], GgmlType.F32],
    ]);
    for (const t of h.tensors) expect(t.offset % 64).toBe(0);

    expect(await readGgufTensor(path, h, "t.f32")).toEqual(t1);
    expect(await readGgufTensor(path, h, "t.4d")).toEqual(t3);
    expect(await readGgufTensor(path, h, "t.f16")).toEqual(halfToFloat(floatToHalf(t2)));
    expect(await readGgufTensor(path, h, "t.q8")).toEqual(q8Expected);
    expect(await readGgufTensorBytes(path, h, "t.q8")).toEqual(q8);
    expect(await readGgufTensor(path, h, "t.empty")).toEqual(new Float32Array(0));
    expect(ggufMetaNumber(h, "scalar.u32.0")).toBe(expected.get("scalar.u32.0")!.value);
    expect(ggufMetaNumber(h, "scalar.str.0")).toBeUndefined();
    expect(ggufMetaString(h, "scalar.str.0")).toBe(expected.get("scalar.str.0")!.value);
    await expectCode(readGgufTensor(path, h, "nope"), "INVALID_ARGUMENT");
  });

  it("writes a file without tensors", async () => {
    const path = join(dir, "meta-only.gguf");
    await new GgufWriter().set("k", str("v")).set("n", u64(2 ** 40)).set("big", u64(1n << 60n)).write(path);
    const h = await readGgufHeader(path);
    expect(h.tensors).toEqual([]);
    expect(h.metadata.get("k")).toEqual(str("v"));
    expect(ggufMetaNumber(h, "n")).toBe(2 ** 40);
    expect(ggufMetaNumber(h, "big")).toBeUndefined(); // not a safe integer
  });

  it("converts f32 to f16 with round-to-nearest-even", () => {
    const cases: [number, number][] = [
      [0, 0x0000],
      [-0, 0x8000],
      [1, 0x3c00],
      [-2, 0xc000],
      [65504, 0x7bff],
      [65520, 0x7c00], // rounds up past the largest half
      [1e10, 0x7c00],
      [-Infinity, 0xfc00],
      [2 ** -24, 0x0001], // smallest subnormal
      [2 ** -25, 0x0000], // tie → even (0)
      [3 * 2 ** -25, 0x0002], // tie → even (2)
      [2 ** -14, 0x0400], // smallest normal
      [1 + 2 ** -11, 0x3c00], // tie → even
      [1 + 3 * 2 ** -11, 0x3c02], // tie → even (up)
    ];
    const h = floatToHalf(new Float32Array(cases.map((c) => c[0])));
    expect([...h].map((x) => x.toString(16))).toEqual(cases.map((c) => c[1].toString(16)));
    expect(Number.isNaN(halfToFloat(floatToHalf(new Float32Array([NaN])))[0])).toBe(true);
    // Every finite half survives half → float → half.
    const all = new Uint16Array(65536).map((_, i) => i);
    const back = floatToHalf(halfToFloat(all));
    for (let i = 0; i < 65536; i++) {
      if (((i >> 10) & 0x1f) === 0x1f && (i & 0x3ff) !== 0) continue; // NaN payloads
      if (back[i] !== i) throw new Error(`half ${i.toString(16)} came back as ${back[i].toString(16)}`);
    }
  });

  it("rejects bad writer input", () => {
    const w = new GgufWriter();
    w.addTensor("x", [2], new Float32Array(2));
    expect(() => w.addTensor("x", [2], new Float32Array(2))).toThrow(GavelError);
    expect(() => w.addTensor("y", [3], new Float32Array(2))).toThrow(/values/);
    expect(() => w.addTensor("z", [33], new Uint8Array(34), GgmlType.Q8_0)).toThrow(/blocks/);
    expect(() => w.addTensor("q", [32], new Float32Array(32), GgmlType.Q8_0)).toThrow(/F32 or F16/);
    expect(() => w.set("general.alignment", u32(24))).toThrow(/power of two/);
    expect(() => w.set("general.alignment", u64(32))).toThrow(/power of two/);
  });

  it("writes a ~40 MB model (F32 and F16) that reads back", async () => {
    const w = new GgufWriter();
    w.set("general.architecture", str("perf"));
    const big = new Float32Array(5_000_000).map((_, i) => (i % 97) / 97);
    w.addTensor("a", [1000, 5000], big);
    w.addTensor("b", [1000, 5000], big, GgmlType.F16);
    w.addTensor("c", [1000, 5000], big, GgmlType.F16);
    const path = join(dir, "big.gguf");
    // no clock (how fast it writes is a benchmark's business; the write fsyncs, slow on a busy disk)
    await w.write(path);
    expect((await stat(path)).size).toBeGreaterThan(40e6);
    const h = await readGgufHeader(path);
    expect((await readGgufTensor(path, h, "a"))[4_999_999]).toBe(big[4_999_999]);
    expect((await readGgufTensor(path, h, "c"))[96]).toBeCloseTo(96 / 97, 3);
  });
});

describe("GGUF reader errors", () => {
  it("FILE_NOT_FOUND for a missing file", async () => {
    await expectCode(readGgufHeader(join(dir, "missing.gguf")), "FILE_NOT_FOUND");
  });

  it("NOT_GGUF for a wrong magic, empty file, bad versions", async () => {
    const good = join(dir, "good.gguf");
    await writeSmall(good);
    const bytes = await readFile(good);

    const magic = join(dir, "magic.gguf");
    await writeFile(magic, Buffer.concat([Buffer.from("GGUX"), bytes.subarray(4)]));
    await expectCode(readGgufHeader(magic), "NOT_GGUF");

    const empty = join(dir, "empty.gguf");
    await writeFile(empty, Buffer.alloc(0));
    await expectCode(readGgufHeader(empty), "NOT_GGUF");

    for (const v of [1, 4, 0x03000000]) {
      const p = join(dir, `v${v}.gguf`);
      const b = Buffer.from(bytes);
      b.writeUInt32LE(v, 4);
      await writeFile(p, b);
      await expectCode(readGgufHeader(p), "NOT_GGUF");
    }
  });

  it("NOT_GGUF for a header truncated anywhere", async () => {
    const good = join(dir, "good2.gguf");
    await writeSmall(good);
    const h = await readGgufHeader(good);
    const bytes = await readFile(good);
    // Every cut inside the header proper (padding is shorter than the alignment) fails cleanly.
    for (let cut = 0; cut < h.dataOffset - h.alignment; cut += 3) {
      const p = join(dir, "trunc.gguf");
      await writeFile(p, bytes.subarray(0, cut));
      await expectCode(readGgufHeader(p), "NOT_GGUF");
    }
  });

  it("CORRUPT_FILE when tensor data is cut off", async () => {
    const p = join(dir, "short-data.gguf");
    await writeSmall(p);
    const h = await readGgufHeader(p);
    await truncate(p, h.dataOffset + 8);
    await expectCode(readGgufHeader(p), "CORRUPT_FILE");
    // A file that shrank after its header was read.
    const q = join(dir, "shrunk.gguf");
    await writeSmall(q);
    const hq = await readGgufHeader(q);
    await truncate(q, hq.dataOffset + 8);
    await expectCode(readGgufTensor(q, hq, "b"), "CORRUPT_FILE");
  });

  /** Hand-built header: magic, version, counts, then caller bytes. */
  function header(nTensors: bigint, nKv: bigint, ...rest: Buffer[]): Buffer {
    const b = Buffer.alloc(24);
    b.write("GGUF", 0, "latin1");
    b.writeUInt32LE(3, 4);
    b.writeBigInt64LE(nTensors, 8);
    b.writeBigInt64LE(nKv, 16);
    return Buffer.concat([b, ...rest, Buffer.alloc(64)]);
  }
  const u64b = (v: bigint) => {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(v);
    return b;
  };
  const i32b = (v: number) => {
    const b = Buffer.alloc(4);
    b.writeInt32LE(v);
    return b;
  };
  const strb = (s: string) => Buffer.concat([u64b(BigInt(Buffer.byteLength(s))), Buffer.from(s)]);

  it("NOT_GGUF for absurd lengths and counts, without allocating them", async () => {
    const cases: Record<string, Buffer> = {
      hugeKeyLength: header(0n, 1n, u64b(0xffffffffffffn)),
      hugeStringValue: header(0n, 1n, strb("k"), i32b(GGUF_TYPE_ID.str), u64b(1n << 62n)),
      hugeArrayCount: header(0n, 1n, strb("k"), i32b(GGUF_TYPE_ID.arr), i32b(GGUF_TYPE_ID.u64), u64b(1n << 40n)),
      hugeStringArray: header(0n, 1n, strb("k"), i32b(GGUF_TYPE_ID.arr), i32b(GGUF_TYPE_ID.str), u64b(1n << 33n)),
      nestedArray: header(0n, 1n, strb("k"), i32b(GGUF_TYPE_ID.arr), i32b(GGUF_TYPE_ID.arr), u64b(1n)),
      badValueType: header(0n, 1n, strb("k"), i32b(99)),
      hugeTensorCount: header(1n << 50n, 0n),
      negativeKvCount: header(0n, -1n),
      hugeKvCount: header(0n, 1n << 40n),
      tooManyDims: header(1n, 0n, strb("t"), i32b(5)),
    };
    for (const [name, bytes] of Object.entries(cases)) {
      const p = join(dir, `${name}.gguf`);
      await writeFile(p, bytes);
      const err = await expectCode(readGgufHeader(p), "NOT_GGUF");
      expect(err.message, name).toMatch(/GGUF/);
    }
  });

  it("CORRUPT_FILE for inconsistent headers", async () => {
    const tensor = (name: string, dims: bigint[], type: number, offset: bigint) =>
      Buffer.concat([strb(name), i32b(dims.length), ...dims.map((d) => u64b(d)), i32b(type), u64b(offset)]);
    const cases: Record<string, Buffer> = {
      duplicateKey: header(0n, 2n, strb("k"), i32b(GGUF_TYPE_ID.u8), Buffer.from([1]), strb("k"), i32b(GGUF_TYPE_ID.u8), Buffer.from([1])),
      badAlignment: header(0n, 1n, strb("general.alignment"), i32b(GGUF_TYPE_ID.u32), i32b(24)),
      unknownTensorType: header(1n, 0n, tensor("t", [4n], 77, 0n)),
      misalignedOffset: header(1n, 0n, tensor("t", [4n], GgmlType.F32, 4n)),
      dataBeyondEnd: header(1n, 0n, tensor("t", [1n << 30n], GgmlType.F32, 0n)),
      partialBlock: header(1n, 0n, tensor("t", [33n], GgmlType.Q8_0, 0n)),
    };
    for (const [name, bytes] of Object.entries(cases)) {
      const p = join(dir, `${name}.gguf`);
      await writeFile(p, bytes);
      await expectCode(readGgufHeader(p), "CORRUPT_FILE");
    }
  });
});

describe.skipIf(NO_SHARED)("stories260K (a real llama.cpp model)", () => {
  it("reads its header and tensors", async () => {
    const h = await readGgufHeader(storiesPath);
    expect(h.version).toBe(3);
    expect(ggufMetaString(h, "general.architecture")).toBe("llama");
    expect(ggufMetaNumber(h, "llama.block_count")).toBe(5);
    expect(ggufMetaNumber(h, "llama.embedding_length")).toBe(64);
    const names = h.tensors.map((t) => t.name);
    expect(names).toContain("token_embd.weight");
    expect(names).toContain("output_norm.weight");
    expect(names).toContain("blk.4.ffn_down.weight");
    const emb = h.tensors.find((t) => t.name === "token_embd.weight")!;
    expect(emb.dims).toEqual([64, 512]);
    const tokens = h.metadata.get("tokenizer.ggml.tokens");
    expect(tokens?.type === "arr" && tokens.value.length).toBe(512);
    const norm = await readGgufTensor(storiesPath, h, "output_norm.weight");
    expect(norm.length).toBe(64);
    expect(norm.every(Number.isFinite)).toBe(true);
  });
});

describe("gavel-mini (a converted llama model in the repository)", () => {
  it("reads its header and tensors", async () => {
    const mini = join(repoRoot, "models", "gavel-mini.gguf");
    const h = await readGgufHeader(mini);
    expect(h.version).toBe(3);
    expect(ggufMetaString(h, "general.architecture")).toBe("llama");
    const blocks = ggufMetaNumber(h, "llama.block_count")!;
    const width = ggufMetaNumber(h, "llama.embedding_length")!;
    expect(blocks).toBeGreaterThan(1);
    const names = h.tensors.map((t) => t.name);
    expect(names).toContain("token_embd.weight");
    expect(names).toContain(`blk.${blocks - 1}.ffn_down.weight`);
    expect(names).not.toContain(`blk.${blocks}.ffn_down.weight`);
    const tokens = h.metadata.get("tokenizer.ggml.tokens");
    const nVocab = tokens?.type === "arr" ? tokens.value.length : 0;
    expect(h.tensors.find((t) => t.name === "token_embd.weight")!.dims).toEqual([width, nVocab]);
    // every tensor lies inside the file, in order, aligned
    let end = 0;
    for (const t of h.tensors) {
      expect(t.offset % h.alignment).toBe(0);
      expect(t.offset).toBeGreaterThanOrEqual(end);
      end = t.offset + t.nBytes;
    }
    expect(h.dataOffset + end).toBeLessThanOrEqual(h.fileSize);
    const norm = await readGgufTensor(mini, h, "output_norm.weight");
    expect(norm.length).toBe(width);
    expect(norm.every(Number.isFinite)).toBe(true);
  });
});

describe("qwen3 fixture", () => {
  it("is a qwen3 model with the real Qwen3 tokenizer and chat template", async () => {
    const path = await makeQwen3Fixture(defaultFixtureDir());
    expect(await makeQwen3Fixture(defaultFixtureDir())).toBe(path); // cached
    const h = await readGgufHeader(path);
    expect(ggufMetaString(h, "general.architecture")).toBe("qwen3");
    expect(ggufMetaNumber(h, "qwen3.block_count")).toBe(3);
    expect(ggufMetaNumber(h, "qwen3.embedding_length")).toBe(64);
    expect(ggufMetaNumber(h, "qwen3.attention.head_count")).toBe(4);
    expect(ggufMetaNumber(h, "qwen3.attention.head_count_kv")).toBe(2);
    expect(ggufMetaNumber(h, "qwen3.attention.key_length")).toBe(16);
    expect(ggufMetaNumber(h, "qwen3.context_length")).toBe(4096);
    expect(ggufMetaString(h, "tokenizer.ggml.model")).toBe("gpt2");
    expect(ggufMetaString(h, "tokenizer.ggml.pre")).toBe("qwen2");
    expect(ggufMetaNumber(h, "tokenizer.ggml.eos_token_id")).toBe(QWEN3_IM_END);
    expect(ggufMetaNumber(h, "tokenizer.ggml.padding_token_id")).toBe(QWEN3_ENDOFTEXT);
    expect(h.metadata.get("tokenizer.ggml.add_bos_token")).toEqual(bool(false));

    const tokens = h.metadata.get("tokenizer.ggml.tokens");
    const types = h.metadata.get("tokenizer.ggml.token_type");
    const merges = h.metadata.get("tokenizer.ggml.merges");
    if (tokens?.type !== "arr" || types?.type !== "arr" || merges?.type !== "arr") throw new Error("arrays missing");
    expect(tokens.itemType).toBe("str");
    expect(tokens.value.length).toBe(QWEN3_VOCAB_SIZE);
    expect(types.itemType).toBe("i32");
    expect(types.value.length).toBe(QWEN3_VOCAB_SIZE);
    expect(merges.value.length).toBe(151387);
    expect(merges.value[0]).toBe("Ġ Ġ");
    expect(tokens.value[QWEN3_IM_START]).toBe("<|im_start|>");
    expect(tokens.value[QWEN3_IM_END]).toBe("<|im_end|>");
    expect(tokens.value[QWEN3_THINK]).toBe("<think>");
    expect(types.value[QWEN3_IM_START]).toBe(3); // control
    expect(types.value[QWEN3_THINK]).toBe(4); // user-defined
    expect(types.value[0]).toBe(1); // normal
    expect(tokens.value[QWEN3_VOCAB_SIZE - 1]).toBe(`[PAD${QWEN3_VOCAB_SIZE - 1}]`);
    expect(types.value[QWEN3_VOCAB_SIZE - 1]).toBe(5); // unused

    const tpl = ggufMetaString(h, "tokenizer.chat_template");
    expect(tpl).toContain("<|im_start|>");
    expect(tpl).toContain("<think>");

    const names = new Set(h.tensors.map((t) => t.name));
    for (const n of ["token_embd.weight", "output_norm.weight"]) expect(names).toContain(n);
    for (let i = 0; i < 3; i++) {
      for (const t of ["attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "attn_q_norm", "attn_k_norm", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"]) {
        expect(names).toContain(`blk.${i}.${t}.weight`);
      }
    }
    const emb = h.tensors.find((t) => t.name === "token_embd.weight")!;
    expect(emb.dims).toEqual([64, QWEN3_VOCAB_SIZE]);
    expect(emb.type).toBe(GgmlType.F16);
    const k = h.tensors.find((t) => t.name === "blk.0.attn_k.weight")!;
    expect(k.dims).toEqual([64, 32]);

    const q = await readGgufTensor(path, h, "blk.1.attn_q.weight");
    const mean = q.reduce((a, b) => a + b, 0) / q.length;
    const sd = Math.sqrt(q.reduce((a, b) => a + (b - mean) ** 2, 0) / q.length);
    expect(Math.abs(mean)).toBeLessThan(0.005);
    expect(sd).toBeGreaterThan(0.017);
    expect(sd).toBeLessThan(0.023);
    expect((await readGgufTensor(path, h, "blk.2.attn_k_norm.weight")).every((x) => x === 1)).toBe(true);
  });

  it("is deterministic per seed and differs across seeds", async () => {
    const small = { nLayer: 1, weightType: "f32" as const };
    const a = await makeQwen3Fixture(dir, { ...small, seed: 7 });
    const b = await makeQwen3Fixture(join(dir, "other"), { ...small, seed: 7 });
    const c = await makeQwen3Fixture(dir, { ...small, seed: 8, tiedEmbeddings: false });
    expect(a).not.toBe(c);
    const [ha, hb, hc] = await Promise.all([readGgufHeader(a), readGgufHeader(b), readGgufHeader(c)]);
    const wa = await readGgufTensor(a, ha, "blk.0.ffn_up.weight");
    expect(await readGgufTensor(b, hb, "blk.0.ffn_up.weight")).toEqual(wa);
    expect(await readGgufTensor(c, hc, "blk.0.ffn_up.weight")).not.toEqual(wa);
    expect(hc.tensors.some((t) => t.name === "output.weight")).toBe(true);
    expect(ha.tensors.some((t) => t.name === "output.weight")).toBe(false);
  });
});
