// Model.generate on stories260K, each check against an independent path: greedy tokens against the
// argmax of a fresh logits decode of the same sequence, captured ℓ states against a fresh
// hiddenStates of the same tokens, seeds, stop strings, abort and option checks.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GavelError, Model } from "../../src/index.js";
import type { GenerateChunk, GenerateResult } from "../../src/model/generate.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";
import { collectGarbage } from "../helpers/gc.js";

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

describe("Model.generate (the tiny llama)", () => {
  let model: Model;
  beforeAll(async () => {
    model = await Model.load(TINY_LLAMA_PATH, { contextSize: 512, threads: 1 });
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

  it("finalState: the current position's final-layer state equals a fresh hiddenStates(nLayer − 1) row; ℓ* capture unchanged", async () => {
    const layer = 2;
    const last = model.info.nLayer - 1;
    expect(layer).toBeLessThan(last);
    const opts = { temperature: 0.9, seed: 7, maxTokens: 20, captureLayer: layer };
    let promptStates: Float32Array | undefined;
    let promptFinal: Float32Array | undefined;
    const on = await collect(model.generate(PROMPT, { ...opts, finalState: true, onPrompt: (s, _t, f) => ((promptStates = s), (promptFinal = f)) }));
    let plainPrompt: Float32Array | undefined;
    const off = await collect(model.generate(PROMPT, { ...opts, onPrompt: (s, ...rest) => ((plainPrompt = s), expect(rest.length).toBe(1)) }));
    // The ℓ* capture and the sampled tokens are bit for bit those of the same run without finalState.
    expect(Array.from(on.result.tokens)).toEqual(Array.from(off.result.tokens));
    expect(Array.from(promptStates!)).toEqual(Array.from(plainPrompt!));
    on.chunks.forEach((c, i) => expect(Array.from(c.state)).toEqual(Array.from(off.chunks[i].state)));
    // Off: nothing extra.
    for (const c of off.chunks) expect("finalState" in c).toBe(false);
    const prompt = model.tokenize(PROMPT, { addBos: model.info.addBos });
    const all = Int32Array.from([...prompt, ...on.result.tokens]);
    const [, ref] = await model.hiddenStatesAt(all, [layer, last]);
    const d = model.info.nEmbd;
    // Row p of the reference against the state generate gave for position p.
    const rows: [number, Float32Array][] = [[prompt.length - 1, promptFinal!], ...on.chunks.map((c, i): [number, Float32Array] => [prompt.length + i, c.finalState!])];
    let maxRef = 0;
    let maxDiff = 0;
    for (const [p, got] of rows) {
      expect(got).toBeInstanceOf(Float32Array);
      expect(got.length).toBe(d);
      for (let j = 0; j < d; j++) {
        maxRef = Math.max(maxRef, Math.abs(ref[p * d + j]));
        maxDiff = Math.max(maxDiff, Math.abs(ref[p * d + j] - got[j]));
      }
    }
    expect(maxRef).toBeGreaterThan(0);
    expect(maxDiff).toBeLessThanOrEqual(1e-4 * maxRef);
  });

  it("finalState with captureLayer = nLayer − 1 is the chunk's own state", async () => {
    const last = model.info.nLayer - 1;
    let promptStates: Float32Array | undefined;
    let promptFinal: Float32Array | undefined;
    const { chunks } = await collect(
      model.generate(PROMPT, { temperature: 0, maxTokens: 6, ignoreEog: true, captureLayer: last, finalState: true, onPrompt: (s, _t, f) => ((promptStates = s), (promptFinal = f)) }),
    );
    const d = model.info.nEmbd;
    expect(Array.from(promptFinal!)).toEqual(Array.from(promptStates!.subarray(promptStates!.length - d)));
    for (const c of chunks) expect(Array.from(c.finalState!)).toEqual(Array.from(c.state));
  });

  it("finalState over a prompt prefilled in several batches (only the last one outputs a row)", async () => {
    const small = await Model.load(TINY_LLAMA_PATH, { contextSize: 128, batchSize: 4, threads: 1 });
    try {
      const last = small.info.nLayer - 1;
      const prompt = small.tokenize(PROMPT, { addBos: small.info.addBos });
      expect(prompt.length).toBeGreaterThan(8);
      let promptFinal: Float32Array | undefined;
      const { chunks, result } = await collect(
        small.generate(prompt, { temperature: 0, maxTokens: 4, ignoreEog: true, captureLayer: 1, finalState: true, onPrompt: (_s, _t, f) => (promptFinal = f) }),
      );
      const all = Int32Array.from([...prompt, ...result.tokens]);
      const ref = await small.hiddenStates(all, last);
      const d = small.info.nEmbd;
      const rows: [number, Float32Array][] = [[prompt.length - 1, promptFinal!], ...chunks.map((c, i): [number, Float32Array] => [prompt.length + i, c.finalState!])];
      let maxRef = 0;
      let maxDiff = 0;
      for (const [p, got] of rows) {
        expect(got.length).toBe(d);
        for (let j = 0; j < d; j++) {
          maxRef = Math.max(maxRef, Math.abs(ref[p * d + j]));
          maxDiff = Math.max(maxDiff, Math.abs(ref[p * d + j] - got[j]));
        }
      }
      expect(maxDiff).toBeLessThanOrEqual(1e-4 * maxRef);
    } finally {
      await small.dispose();
    }
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
      [{ finalState: 1 }, "INVALID_ARGUMENT"],
      [{ finalState: "yes" }, "INVALID_ARGUMENT"],
      [{ finalState: null }, "INVALID_ARGUMENT"],
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

  it("the raw binding re-checks finalState (a non-boolean is INVALID_ARGUMENT, not a crash)", async () => {
    const { loadBinding } = await import("../../src/native/binding.js");
    const raw = new (loadBinding().NativeModel)();
    await raw.load(TINY_LLAMA_PATH, { gpuLayers: 0, contextSize: 64, threads: 1, batchSize: 8, sequences: 2, flashAttention: 0, kvF16: false, kvUnified: true, logprobsInGraph: false });
    try {
      const params = { temperature: 0, topK: 0, topP: 1, minP: 0, seed: 1, penaltyLastN: 0, repeatPenalty: 1, frequencyPenalty: 0, presencePenalty: 0 };
      for (const bad of [1, "yes", null, {}]) {
        expect(() => raw.generation(1, params, bad as never), String(bad)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
      }
      const gen = raw.generation(1, params, true);
      const step = await gen.append(Int32Array.of(1, 2, 3));
      expect(step.states.length).toBe(3 * raw.info().nEmbd);
      expect(step.finalState!.length).toBe(raw.info().nEmbd);
      await gen.close();
      const plain = raw.generation(1, params);
      expect("finalState" in (await plain.append(Int32Array.of(1, 2, 3)))).toBe(false);
      await plain.close();
    } finally {
      raw.dispose();
    }
  });

  it("a prompt past the context is CONTEXT_OVERFLOW", () => {
    const long = new Int32Array(model.info.contextSize + 1).fill(5);
    expect(() => model.generate(long)).toThrow(expect.objectContaining({ code: "CONTEXT_OVERFLOW" }));
  });
});

describe("Model.generate's sequences (the tiny llama, one sequence for generations)", () => {
  let model: Model;
  beforeAll(async () => {
    // two sequences: one scratch, one that a generation may take
    model = await Model.load(TINY_LLAMA_PATH, { contextSize: 64, threads: 1, sequences: 2 });
  });
  afterAll(async () => {
    await model.dispose();
  });
  const opts = { temperature: 0, ignoreEog: true } as const;

  it("a generation left open holds the sequence: the next one's CONTEXT_OVERFLOW names it; return() frees it", async () => {
    const a = model.generate(PROMPT, { ...opts, maxTokens: 20 });
    expect((await a.next()).done).toBe(false);
    const err = await model.generate(PROMPT, { ...opts, maxTokens: 3 }).next().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GavelError);
    expect((err as GavelError).code).toBe("CONTEXT_OVERFLOW");
    expect((err as GavelError).message).toMatch(/1 other generation is still open/);
    expect((err as GavelError).message).toMatch(/return\(\)/);
    await a.return(undefined as never);
    const { result } = await collect(model.generate(PROMPT, { ...opts, maxTokens: 3 }));
    expect(result.tokens.length).toBe(3);
  });

  it("an aborted signal frees the sequence at once, though the iterator is not read again; its next read is ABORTED", async () => {
    const ac = new AbortController();
    const a = model.generate(PROMPT, { ...opts, maxTokens: 20, signal: ac.signal });
    expect((await a.next()).done).toBe(false);
    ac.abort();
    const { result } = await collect(model.generate(PROMPT, { ...opts, maxTokens: 3 }));
    expect(result.tokens.length).toBe(3);
    await expect(a.next()).rejects.toMatchObject({ name: "GavelError", code: "ABORTED" });
  });

  it("an iterator dropped on a long-lived signal gives its sequence back once collected and no longer counts as open", async () => {
    const app = new AbortController(); // app-wide: never aborts here
    const collected = { n: 0 };
    const reg = new FinalizationRegistry<number>(() => collected.n++);
    const openAndDrop = async () => {
      const it = model.generate(PROMPT, { ...opts, maxTokens: 20, signal: app.signal });
      reg.register(it, 0);
      expect((await it.next()).done).toBe(false);
    };
    await openAndDrop();
    await collectGarbage(() => collected.n === 1);
    expect(collected.n).toBe(1);
    await collectGarbage(() => false, 3); // and the library's own finalization callback, which closes it
    // the sequence is free again (its close went through the model's queue, before this generation's
    // prefill), and the dropped generation no longer counts as open
    const a = model.generate(PROMPT, { ...opts, maxTokens: 20, signal: app.signal });
    expect((await a.next()).done).toBe(false);
    const err = await model.generate(PROMPT, { ...opts, maxTokens: 3, signal: app.signal }).next().catch((e: unknown) => e);
    expect((err as GavelError).code).toBe("CONTEXT_OVERFLOW");
    expect((err as GavelError).message).toMatch(/: 1 other generation is still open/);
    await a.return(undefined as never);
    const { result } = await collect(model.generate(PROMPT, { ...opts, maxTokens: 3, signal: app.signal }));
    expect(result.tokens.length).toBe(3);
  });

  it("an abort after the model was disposed is quiet: nothing is left to give back, the next read is a typed error", async () => {
    const m = await Model.load(TINY_LLAMA_PATH, { contextSize: 64, threads: 1, sequences: 2 });
    const ac = new AbortController();
    const a = m.generate(PROMPT, { ...opts, maxTokens: 5, signal: ac.signal });
    expect((await a.next()).done).toBe(false);
    await m.dispose();
    ac.abort();
    await expect(a.next()).rejects.toMatchObject({ name: "GavelError", code: expect.stringMatching(/^(ABORTED|DISPOSED)$/) });
  });

  it("a generation that runs past the context is CONTEXT_OVERFLOW naming the prompt, the tokens generated and maxTokens", async () => {
    const prompt = model.tokenize(PROMPT, { addBos: model.info.addBos });
    const maxTokens = model.info.contextSize;
    const err = await collect(model.generate(prompt, { ...opts, maxTokens })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GavelError);
    expect((err as GavelError).code).toBe("CONTEXT_OVERFLOW");
    const generated = model.info.contextSize - prompt.length;
    expect((err as GavelError).message).toContain(`the prompt's ${prompt.length} tokens and the ${generated} generated fill the context of ${model.info.contextSize} tokens (maxTokens ${maxTokens}`);
    // the sequence was given back
    const { result } = await collect(model.generate(PROMPT, { ...opts, maxTokens: 3 }));
    expect(result.tokens.length).toBe(3);
  });
});

describe("generateChat (the tiny llama, ChatML fallback)", () => {
  it("generates from the rendered chat exactly as from its tokens", async () => {
    const { generateChat, renderChat } = await import("../../src/index.js");
    const model = await Model.load(TINY_LLAMA_PATH, { contextSize: 512, threads: 1 });
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
