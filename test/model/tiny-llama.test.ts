// The generated tiny llama model (test/fixtures/tiny-llama.ts) is a model llama.cpp loads and runs:
// the tests that need *a* llama model for mechanics use it, so they run on a plain clone.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { Model } from "../../src/index.js";
import { ggufMetaNumber, readGgufHeader } from "../../src/gguf/index.js";
import { TINY_LLAMA, tinyLlamaPath, writeTinyLlama } from "../fixtures/tiny-llama.js";

describe("the generated tiny llama model", () => {
  let path: string;
  let model: Model;
  beforeAll(async () => {
    path = await tinyLlamaPath();
    model = await Model.load(path, { contextSize: 256, sequences: 2, threads: 1 });
  });
  afterAll(async () => {
    await model?.dispose();
  });

  it("is deterministic: a second generation writes the same bytes", async () => {
    const again = join(tmpdir(), `gavel-tiny-llama-${process.pid}.gguf`);
    await writeTinyLlama(again);
    expect(Buffer.compare(await readFile(again), await readFile(path))).toBe(0);
  });

  it("loads with stories260K's shape and gavel-mini's vocabulary prefix", async () => {
    expect(model.info.nEmbd).toBe(TINY_LLAMA.nEmbd);
    expect(model.info.nLayer).toBe(TINY_LLAMA.nLayer);
    expect(model.info.nVocab).toBe(TINY_LLAMA.nVocab);
    expect(ggufMetaNumber(await readGgufHeader(path), "llama.context_length")).toBe(TINY_LLAMA.nCtxTrain);
    const text = "Once upon a time the parser failed.";
    const tokens = model.tokenize(text, { addBos: true });
    expect(tokens[0]).toBe(1);
    expect(tokens.length).toBeGreaterThan(8);
    expect(model.detokenize(tokens.subarray(1))).toBe(text);
  });
});
