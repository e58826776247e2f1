// Nothing JavaScript can pass may kill the process: a child node process throws every bad input we
// can think of at the public API and at the raw addon, and must exit normally, having seen a typed
// error for each.
import { describe, expect, it } from "vitest";
import { writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot } from "../helpers/paths.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";
import { run } from "../helpers/run.js";

const script = `
import { Model, GavelError } from ${JSON.stringify(join(repoRoot, "dist", "index.js"))};
import { loadBinding } from ${JSON.stringify(join(repoRoot, "dist", "index.js"))};
const seen = [];
async function expectCode(label, f) {
  try { await f(); seen.push(label + ":no-error"); }
  catch (e) { seen.push(label + ":" + (e instanceof GavelError ? e.code : "untyped " + e)); }
}
const stories = ${JSON.stringify(TINY_LLAMA_PATH)};
await expectCode("missing", () => Model.load("/nope.gguf"));
await expectCode("notgguf", () => Model.load(${JSON.stringify(join(repoRoot, "package.json"))}));
await expectCode("badopts", () => Model.load(stories, { contextSize: "big" }));
const m = await Model.load(stories, { contextSize: 64, sequences: 2, threads: 1 });
const t = m.tokenize("Once upon a time", { addBos: true });
await expectCode("layer", () => m.hiddenStates(t, 99));
await expectCode("layerNaN", () => m.hiddenStates(t, NaN));
await expectCode("vocab", () => m.hiddenStates([1, 2, 1e6], 1));
await expectCode("overflow", () => m.hiddenStates(new Int32Array(5000).fill(3), 1));
await expectCode("scoreOverflow", () => m.score(new Int32Array(200).fill(3), new Int32Array(200).fill(3)));
await expectCode("empty", () => m.score(new Int32Array(0), t));
await expectCode("readIds", () => m.score(t, t, { readIds: [-5] }));
await expectCode("detok", () => m.detokenize([70000]));
await expectCode("piece", () => m.tokenPiece(-1));
// the raw addon, bypassing every TypeScript check
const b = loadBinding();
const n = new b.NativeModel();
await expectCode("rawNotLoaded", () => n.hiddenStates(new Int32Array([1]), new Int32Array([0])));
await expectCode("rawTokAsyncNotLoaded", () => n.tokenizeAsync("x", false, false));
await expectCode("rawBadParams", () => n.load(stories, {}));
await expectCode("rawBadPath", () => n.load(42, {}));
await expectCode("rawLoadMissing", () => n.load("/nope.gguf", { gpuLayers: 0, contextSize: 64, threads: 1, batchSize: 8, sequences: 2, flashAttention: 0, kvF16: false, kvUnified: true, logprobsInGraph: false }));
const n2 = new b.NativeModel();
await n2.load(stories, { gpuLayers: 0, contextSize: 64, threads: 1, batchSize: 8, sequences: 2, flashAttention: 0, kvF16: false, kvUnified: true, logprobsInGraph: false });
await expectCode("rawTokens", () => n2.hiddenStates([1, 2], new Int32Array([0])));
await expectCode("rawLayer", () => n2.hiddenStates(new Int32Array([1, 2]), new Int32Array([5])));
await expectCode("rawVocab", () => n2.hiddenStates(new Int32Array([1, 600]), new Int32Array([1])));
await expectCode("rawOverflow", () => n2.logits(new Int32Array(300).fill(3)));
await expectCode("rawLayers", () => n2.hiddenStates(new Int32Array([1, 2]), 3));
await expectCode("rawLayersDup", () => n2.hiddenStates(new Int32Array([1, 2]), new Int32Array([1, 1])));
await expectCode("rawScore", () => n2.score([{ prefix: new Int32Array(0), continuation: new Int32Array([3]) }], new Int32Array(0)));
await expectCode("rawScoreShape", () => n2.score([{ prefix: "x" }], new Int32Array(0)));
await expectCode("rawScoreArr", () => n2.score(7, new Int32Array(0)));
await expectCode("rawDetok", () => n2.detokenize(new Int32Array([-7]), true));
await expectCode("rawPiece", () => n2.tokenPiece(1e12));
await expectCode("rawTokAsync", () => n2.tokenizeAsync(42, false, false));
await expectCode("rawTokAsyncLoose", () => Promise.all([n2.tokenizeAsync("\ud800 \u0000 x", undefined, {}), n2.tokenizeAsync("")]));
n2.dispose();
await expectCode("rawTokAsyncDisposed", () => n2.tokenizeAsync("x", false, false));
await expectCode("rawDisposed", () => n2.hiddenStates(new Int32Array([1]), new Int32Array([0])));
await m.dispose();
await expectCode("disposed", () => m.score(t, t));
console.log(JSON.stringify(seen));
`;

describe("crash safety", () => {
  it("a process that tries every bad input exits normally with typed errors", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gavel-crash-"));
    const file = join(dir, "bad-inputs.mjs");
    writeFileSync(file, script);
    const res = await run(process.execPath, [file], { timeoutMs: 120_000 });
    expect(res.signal, res.err).toBeNull();
    expect(res.code, res.err).toBe(0);
    const seen = JSON.parse(res.out.trim().split("\n").pop()!) as string[];
    const codes = Object.fromEntries(seen.map((s) => s.split(":") as [string, string]));
    expect(codes).toEqual({
      missing: "FILE_NOT_FOUND",
      notgguf: "NOT_GGUF",
      badopts: "INVALID_ARGUMENT",
      layer: "LAYER_OUT_OF_RANGE",
      layerNaN: "LAYER_OUT_OF_RANGE",
      vocab: "TOKEN_OUT_OF_VOCABULARY",
      overflow: "CONTEXT_OVERFLOW",
      scoreOverflow: "CONTEXT_OVERFLOW",
      empty: "INVALID_ARGUMENT",
      readIds: "TOKEN_OUT_OF_VOCABULARY",
      detok: "TOKEN_OUT_OF_VOCABULARY",
      piece: "TOKEN_OUT_OF_VOCABULARY",
      rawNotLoaded: "INVALID_ARGUMENT",
      rawTokAsyncNotLoaded: "INVALID_ARGUMENT",
      rawBadParams: "INVALID_ARGUMENT",
      rawBadPath: "INVALID_ARGUMENT",
      rawLoadMissing: "MODEL_LOAD_FAILED",
      rawTokens: "INVALID_ARGUMENT",
      rawLayer: "LAYER_OUT_OF_RANGE",
      rawVocab: "TOKEN_OUT_OF_VOCABULARY",
      rawOverflow: "CONTEXT_OVERFLOW",
      rawLayers: "INVALID_ARGUMENT",
      rawLayersDup: "INVALID_ARGUMENT",
      rawScore: "INVALID_ARGUMENT",
      rawScoreShape: "INVALID_ARGUMENT",
      rawScoreArr: "INVALID_ARGUMENT",
      rawDetok: "TOKEN_OUT_OF_VOCABULARY",
      rawPiece: "INVALID_ARGUMENT",
      rawTokAsync: "INVALID_ARGUMENT",
      rawTokAsyncLoose: "no-error",
      rawTokAsyncDisposed: "DISPOSED",
      rawDisposed: "DISPOSED",
      disposed: "DISPOSED",
    });
  });
});
