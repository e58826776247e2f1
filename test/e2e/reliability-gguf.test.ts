// Issue 17, "corrupt model files abort the host process": 9 of 442 mutated GGUF models died with
// SIGABRT in llama.cpp's GGML_ASSERT (block_count 0 or 0xFFFFFFFF, rms epsilon NaN or −1, a header
// bit flip that duplicates a vocabulary string). Each mutation below is written to a temp dir from
// ../shared/models/stories260Ktok512.gguf, refused by Model.load with a typed error naming the file
// and the field, in this process and in a child process that loads them all and exits normally.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Model } from "../../src/model/Model.js";
import { checkModelHeader, readGgufHeader, type GgufValue } from "../../src/gguf/index.js";
import { repoRoot } from "../helpers/paths.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";
import { run } from "../helpers/run.js";

const dir = mkdtempSync(join(tmpdir(), "gavel-rel-gguf-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const original = readFileSync(TINY_LLAMA_PATH);

/** Byte offset of the value of metadata key `key` (after its u32 type id), and that type id. */
function valueAt(buf: Buffer, key: string): { at: number; type: number } {
  const k = Buffer.from(key, "utf8");
  const pat = Buffer.alloc(8 + k.length);
  pat.writeBigUInt64LE(BigInt(k.length));
  k.copy(pat, 8);
  const i = buf.indexOf(pat);
  if (i < 0) throw new Error(`no key ${key}`);
  return { at: i + pat.length + 4, type: buf.readUInt32LE(i + pat.length) };
}

type Mutation = [name: string, field: RegExp, mutate: (b: Buffer) => void];
const u32At = (key: string, v: number) => (b: Buffer) => b.writeUInt32LE(v, valueAt(b, key).at);
const f32At = (key: string, v: number) => (b: Buffer) => b.writeFloatLE(v, valueAt(b, key).at);
const mutations: Mutation[] = [
  ["block_count 0", /llama\.block_count is 0, outside \[1, 512\]/, u32At("llama.block_count", 0)],
  ["block_count 0xFFFFFFFF", /llama\.block_count is 4294967295/, u32At("llama.block_count", 0xffffffff)],
  ["block_count 513 (past LLAMA_MAX_LAYERS)", /llama\.block_count is 513/, u32At("llama.block_count", 513)],
  ["rms epsilon NaN", /layer_norm_rms_epsilon is NaN/, f32At("llama.attention.layer_norm_rms_epsilon", NaN)],
  ["rms epsilon -1", /layer_norm_rms_epsilon is -1/, f32At("llama.attention.layer_norm_rms_epsilon", -1)],
  ["rms epsilon +Inf", /layer_norm_rms_epsilon is Infinity/, f32At("llama.attention.layer_norm_rms_epsilon", Infinity)],
  ["head_count 7 (does not divide 64)", /head_count is 7, which does not divide embedding_length 64/, u32At("llama.attention.head_count", 7)],
  ["head_count_kv 3 (does not divide 8)", /head_count_kv is 3, which does not divide head_count 8/, u32At("llama.attention.head_count_kv", 3)],
  ["head_count_kv 0", /head_count_kv is 0, outside \[1, head_count 8\]/, u32At("llama.attention.head_count_kv", 0)],
  ["context_length 0", /context_length is 0, not positive/, u32At("llama.context_length", 0)],
  ["embedding_length 63", /embedding_length 63|token_embd\.weight has shape/, u32At("llama.embedding_length", 63)],
  [
    "a bit flip that duplicates a vocabulary string",
    /tokenizer\.ggml\.tokens holds "<0x00>" twice/,
    (b) => {
      // "<0x01>" → "<0x00>": one bit of the header
      const at = b.indexOf(Buffer.from("<0x01>"));
      b[at + 4] ^= 0x01;
    },
  ],
];

function write(name: string, mutate: (b: Buffer) => void): string {
  const b = Buffer.from(original);
  mutate(b);
  const path = join(dir, `${name.replace(/\W+/g, "_")}.gguf`);
  writeFileSync(path, b);
  return path;
}

describe("GGUF models are validated before llama.cpp sees them", () => {
  it("the real models pass, and the check reads each vocabulary string about once", async () => {
    // The check's one pass that grows with the model is the vocabulary's (duplicates as llama.cpp
    // reads them). It guards complexity, not speed, and without a clock: the token reads are counted
    // (a search for each token's duplicate among the others would read ~n²/2 of the n = 512).
    const h = await readGgufHeader(TINY_LLAMA_PATH);
    const tokens = h.metadata.get("tokenizer.ggml.tokens")!;
    const list = tokens.value as string[];
    let reads = 0;
    const counted = new Proxy(list, {
      get: (target, key, receiver) => {
        if (typeof key === "string" && /^\d+$/.test(key)) reads++;
        return Reflect.get(target, key, receiver) as unknown;
      },
    });
    const metadata = new Map(h.metadata).set("tokenizer.ggml.tokens", { ...tokens, value: counted } as GgufValue);
    checkModelHeader({ ...h, metadata }, TINY_LLAMA_PATH);
    expect(list.length).toBe(512);
    expect(reads).toBeGreaterThanOrEqual(list.length);
    expect(reads).toBeLessThanOrEqual(2 * list.length);
    for (const p of [TINY_LLAMA_PATH, join(repoRoot, "models", "gavel-mini.gguf")]) checkModelHeader(await readGgufHeader(p), p);
  });

  it.each(mutations)("%s: MODEL_LOAD_FAILED naming the file and the field", async (name, field, mutate) => {
    const path = write(name, mutate);
    const err = await Model.load(path, { contextSize: 64, threads: 1 }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "MODEL_LOAD_FAILED" });
    expect((err as Error).message.startsWith(`${path}: `)).toBe(true);
    expect((err as Error).message).toMatch(field);
  });

  it("a corrupt key length gives a short, escaped message, not the file's bytes", async () => {
    const path = write("key-length", (b) => {
      const k = Buffer.from("llama.block_count");
      const i = b.indexOf(k) - 8;
      b.writeBigUInt64LE(BigInt(200_000), i); // the key now runs 200 KB into the vocabulary
    });
    const err = await Model.load(path).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: expect.stringMatching(/NOT_GGUF|MODEL_LOAD_FAILED/) });
    expect((err as Error).message.length).toBeLessThan(600);
  });

  it("a child process that loads every mutation exits normally (no SIGABRT)", async () => {
    const paths = mutations.map(([name, , mutate]) => write(name, mutate));
    const child = join(dir, "child.mts");
    writeFileSync(
      child,
      `import { Model } from ${JSON.stringify(join(repoRoot, "src", "model", "Model.js"))};
const codes = [];
for (const p of ${JSON.stringify(paths)}) {
  try { const m = await Model.load(p, { contextSize: 64, threads: 1 }); await m.hiddenStates(m.tokenize("hello"), 1); codes.push("loaded"); await m.dispose(); }
  catch (e) { codes.push(e.code ?? String(e)); }
}
console.log(JSON.stringify(codes));
`,
    );
    const res = await run(join(repoRoot, "node_modules", ".bin", "vite-node"), [child], { cwd: repoRoot, timeoutMs: 120_000 });
    expect(res.signal, res.err).toBeNull();
    expect(res.code, res.err).toBe(0);
    const codes = JSON.parse(res.out.trim().split("\n").pop()!) as string[];
    expect(codes).toEqual(mutations.map(() => "MODEL_LOAD_FAILED"));
  });
});
