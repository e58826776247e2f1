// Model.generate on stories260K, each check against an independent path: greedy tokens against the
// argmax of a fresh logits decode of the same sequence, captured ℓ states against a fresh
// hiddenStates of the same tokens, seeds, stop strings, abort and option checks.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GavelError, Model } from "../../src/index.js";
import type { GenerateChunk, GenerateResult } from "../../src/model/generate.js";
import { storiesPath } from "../helpers/paths.js";

const PROMPT = "Once upon a time there was a little girl";

async function collect(it: AsyncGenerator<GenerateChunk, GenerateResult, undefined>) {
  const chunks: GenerateChunk[] = [];
  for (;;) {
    const r = await it.next();
    if (r.done) return { chunks, result: r.value };
    chunks.push(r.value);
  }
}

function argmax(row: Float32Array, off: number, n: number): number {
  let best = 0;
  for (let i = 1; i < n; i++) if (row[off + i] > row[off + best]) best = i;
  return best;
}

describe("Model.generate (stories260K)", () => {
  let model: Model;
  beforeAll(async () => {
    model = await Model.load(storiesPath, { contextSize: 512, threads: 1 });
  });
  afterAll(async () => {
    await model.dispose();
  });

  it("greedy output is the argmax continuation of a fresh logits decode", async () => {
    const { chunks, result } = await collect(model.generate(PROMPT, { temperature: 0, maxTokens: 24, ignoreEog: true }));
    expect(result.reason).toBe("max-tokens");
    expect(chunks.length).toBe(24);
    const prompt = model.tokenize(PROMPT, { addBos: model.info.addBos });
    const all = Int32Array.from([...prompt, ...result.tokens]);
    const logits = await model.logits(all);
    const nv = model.info.nVocab;
    for (let i = 0; i < result.tokens.length; i++) {
      expect(result.tokens[i]).toBe(argmax(logits, (prompt.length - 1 + i) * nv, nv));
    }
    expect(chunks.map((c) => c.text).join("")).toBe(result.text);
    expect(result.text).toBe(model.detokenize(result.tokens, { special: false }));
  });

  it("captures ℓ states equal to a fresh hiddenStates of the whole sequence (|Δ| ≤ 1e-4 · max|h|)", async () => {
    const layer = 2;
    let promptStates: Float32Array | undefined;
    const { chunks, result } = await collect(
      model.generate(PROMPT, { temperature: 0.9, seed: 7, maxTokens: 20, captureLayer: layer, onPrompt: (s) => (promptStates = s) }),
    );
    const prompt = model.tokenize(PROMPT, { addBos: model.info.addBos });
    const all = Int32Array.from([...prompt, ...result.tokens]);
    const ref = await model.hiddenStates(all, layer);
    const d = model.info.nEmbd;
    const got = new Float32Array(all.length * d);
    got.set(promptStates!, 0);
    chunks.forEach((c, i) => got.set(c.state, (prompt.length + i) * d));
    let maxRef = 0;
    let maxDiff = 0;
    for (let i = 0; i < ref.length; i++) {
      maxRef = Math.max(maxRef, Math.abs(ref[i]));
      maxDiff = Math.max(maxDiff, Math.abs(ref[i] - got[i]));
    }
    expect(maxRef).toBeGreaterThan(0);
    expect(maxDiff).toBeLessThanOrEqual(1e-4 * maxRef);
  });

  it("the same seed gives the same text; other seeds give other texts", async () => {
    const run = async (seed: number) =>
      (await collect(model.generate(PROMPT, { temperature: 1.5, topK: 0, topP: 1, minP: 0, seed, maxTokens: 30, ignoreEog: true }))).result.tokens;
    const a = await run(1234);
    expect(Array.from(await run(1234))).toEqual(Array.from(a));
    // At temperature 1.5 over the whole vocabulary, 4 other seeds all repeating 30 tokens exactly
    // would mean the seed is ignored.
    const others = await Promise.all([1, 2, 3, 4].map(run));
    expect(others.some((o) => Array.from(o).join() !== Array.from(a).join())).toBe(true);
  });

  it("stop strings cut the text exactly before the first occurrence", async () => {
    const free = await collect(model.generate(PROMPT, { temperature: 0, maxTokens: 40, ignoreEog: true }));
    const full = free.result.text;
    // A stop string taken from the middle of the greedy text: the cut must land right before it.
    const stop = full.slice(10, 13);
    const at = full.indexOf(stop);
    const { chunks, result } = await collect(model.generate(PROMPT, { temperature: 0, maxTokens: 40, ignoreEog: true, stop: ["zzzq", stop] }));
    expect(result.reason).toBe("stop-string");
    expect(result.stop).toBe(stop);
    expect(result.text).toBe(full.slice(0, at));
    expect(chunks.map((c) => c.text).join("")).toBe(full.slice(0, at));
  });

  it("stop tokens end the generation without emitting them", async () => {
    const free = await collect(model.generate(PROMPT, { temperature: 0, maxTokens: 10, ignoreEog: true }));
    const stopTok = free.result.tokens[4];
    const first = Array.from(free.result.tokens).indexOf(stopTok);
    const { result } = await collect(model.generate(PROMPT, { temperature: 0, maxTokens: 10, ignoreEog: true, stopTokens: [stopTok] }));
    expect(result.reason).toBe("stop-token");
    expect(Array.from(result.tokens)).toEqual(Array.from(free.result.tokens.subarray(0, first)));
  });

  it("abort mid-stream stops promptly with ABORTED and leaves the model usable", async () => {
    const ac = new AbortController();
    const seen: number[] = [];
    let err: unknown;
    try {
      for await (const c of model.generate(PROMPT, { temperature: 0, maxTokens: 400, ignoreEog: true, signal: ac.signal })) {
        seen.push(c.token);
        if (seen.length === 3) ac.abort();
      }
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GavelError);
    expect((err as GavelError).code).toBe("ABORTED");
    expect(seen.length).toBeLessThanOrEqual(4);
    // Usable: a fresh greedy run matches a run before any abort, and other verbs work.
    const a = await collect(model.generate(PROMPT, { temperature: 0, maxTokens: 8, ignoreEog: true }));
    expect(Array.from(a.result.tokens.subarray(0, 3))).toEqual(seen.slice(0, 3));
    const h = await model.hiddenStates(model.tokenize(PROMPT), 1);
    expect(h.length).toBeGreaterThan(0);
  });

  it("breaking out of the loop frees the generation's sequence", async () => {
    // More generations than the context has sequences: each must give its sequence back.
    for (let i = 0; i < 40; i++) {
      for await (const _ of model.generate(PROMPT, { temperature: 0, maxTokens: 5 })) break;
    }
    const { result } = await collect(model.generate(PROMPT, { temperature: 0, maxTokens: 3, ignoreEog: true }));
    expect(result.tokens.length).toBe(3);
  });

  it("invalid options are typed errors before llama.cpp sees them", () => {
    const bad: [unknown, string][] = [
      [{ temperature: -1 }, "INVALID_ARGUMENT"],
      [{ temperature: Number.NaN }, "INVALID_ARGUMENT"],
      [{ topK: -1 }, "INVALID_ARGUMENT"],
      [{ topK: 1.5 }, "INVALID_ARGUMENT"],
      [{ topP: 0 }, "INVALID_ARGUMENT"],
      [{ topP: 1.1 }, "INVALID_ARGUMENT"],
      [{ minP: -0.1 }, "INVALID_ARGUMENT"],
      [{ seed: -1 }, "INVALID_ARGUMENT"],
      [{ seed: 2 ** 32 }, "INVALID_ARGUMENT"],
      [{ repeatPenalty: 0 }, "INVALID_ARGUMENT"],
      [{ penaltyLastN: -2 }, "INVALID_ARGUMENT"],
      [{ maxTokens: 0 }, "INVALID_ARGUMENT"],
      [{ stop: [""] }, "INVALID_ARGUMENT"],
      [{ stop: "x" }, "INVALID_ARGUMENT"],
      [{ stopTokens: [1e9] }, "TOKEN_OUT_OF_VOCABULARY"],
      [{ captureLayer: 99 }, "LAYER_OUT_OF_RANGE"],
      [{ signal: 3 }, "INVALID_ARGUMENT"],
      [{ onPrompt: 3 }, "INVALID_ARGUMENT"],
      ["x", "INVALID_ARGUMENT"],
    ];
    for (const [o, code] of bad) {
      let err: unknown;
      try {
        model.generate(PROMPT, o as never);
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(o)).toBeInstanceOf(GavelError);
      expect((err as GavelError).code, JSON.stringify(o)).toBe(code);
    }
    expect(() => model.generate([], {})).toThrow(GavelError);
    expect(() => model.generate([1e9], {})).toThrow(/vocabulary|token/i);
  });

  it("a prompt past the context is CONTEXT_OVERFLOW", () => {
    const long = new Int32Array(model.info.contextSize + 1).fill(5);
    expect(() => model.generate(long)).toThrow(expect.objectContaining({ code: "CONTEXT_OVERFLOW" }));
  });
});

describe("generateChat (stories260K, ChatML fallback)", () => {
  it("generates from the rendered chat exactly as from its tokens", async () => {
    const { generateChat, renderChat } = await import("../../src/index.js");
    const model = await Model.load(storiesPath, { contextSize: 512, threads: 1 });
    try {
      const messages = [{ role: "user", content: "Tell me a story about a cat." }];
      const a = await collect(generateChat(model, messages, { temperature: 0, maxTokens: 12, ignoreEog: true }));
      const text = renderChat(null, messages, { addGenerationPrompt: true });
      expect(text.endsWith("<|im_start|>assistant\n")).toBe(true);
      const tokens = model.tokenize(text, { special: true, addBos: model.info.addBos });
      const b = await collect(model.generate(tokens, { temperature: 0, maxTokens: 12, ignoreEog: true }));
      expect(Array.from(a.result.tokens)).toEqual(Array.from(b.result.tokens));
      expect(() => generateChat(model, [{ role: "user" } as never])).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
      expect(() => generateChat(model, [])).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    } finally {
      await model.dispose();
    }
  });
});
