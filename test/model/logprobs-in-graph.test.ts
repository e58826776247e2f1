// Score's log-probs read where the logits are (logprobsInGraph, native/src/model/logprob_reducer.h)
// against the host path (full logits copied out, float64 log-normaliser), on stories260K (f32 weights)
// and the embedded gavel-mini (Q8_0). On the CPU backend this runs the reducer's host branch (the CUDA
// kernel's twin) and all of its bookkeeping: samplers attached per sequence, rows mapped to sequences
// and targets across ubatches, results scattered back.
// Random candidate sets: several prefixes (cold, then cached), continuations, read ids, batches
// smaller than the work (so one decode spans several ubatches and a sequence's rows several graphs).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Model, GavelError, type ModelLoadOptions } from "../../src/index.js";
import { DEFAULT_MODEL } from "../../src/defaults.js";
import { resolveLogprobsInGraph } from "../../src/model/load-options.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";
import { freshSeed, logSoftmax, maxAbsDiff, randomTokens, rng } from "../helpers/random.js";

/**
 * Tolerance: both paths sum in float64 with the same kernel, so over the same logits they agree to the
 * bit; the two models below batch differently (batchSize 64 against 256), which moves the logits by
 * float32 reordering (≤ 1e-6 nats in score-layout.test.ts): 1e-4 nats, as there.
 */
const TOL = 1e-4;

/**
 * The same model loaded twice for the calling suite: log-probs from the copied logits (host) and in
 * the graph; `graphBatch`, when given, is the graph side's batchSize.
 */
function hostAndGraph(path: string, options: ModelLoadOptions, graphBatch?: number): { host: Model; graph: Model } {
  const pair = {} as { host: Model; graph: Model };
  beforeAll(async () => {
    pair.host = await Model.load(path, { ...options, logprobsInGraph: false });
    pair.graph = await Model.load(path, { ...options, ...(graphBatch ? { batchSize: graphBatch } : {}), logprobsInGraph: true });
  });
  afterAll(async () => {
    await pair.host?.dispose();
    await pair.graph?.dispose();
  });
  return pair;
}

const models = [
  { name: "stories260K", path: TINY_LLAMA_PATH, maxPrefix: 60 },
  { name: "gavel-mini", path: DEFAULT_MODEL, maxPrefix: 120 },
];

describe.each(models)("log-probs in the graph on $name", (mx) => {
  const seed = freshSeed();
  const r = rng(seed);
  // the graph side with a batch smaller than most waves: several decodes, each of several ubatches
  const pair = hostAndGraph(mx.path, { contextSize: 256, sequences: 6, kvLayout: "streams", threads: 2, batchSize: 256 }, 64);

  it("says where its log-probs are reduced", () => {
    expect(pair.host.info.logprobsInGraph).toBe(false);
    expect(pair.graph.info.logprobsInGraph).toBe(true);
  });

  it(`equals the host path within ${TOL} nats, cold and cached (seed ${seed})`, async () => {
    const nVocab = pair.host.info.nVocab;
    for (let round = 0; round < 3; round++) {
      const n = 1 + Math.floor(r() * 4);
      const prefixes = Array.from({ length: n }, () => randomTokens(r, 1 + Math.floor(r() * mx.maxPrefix), 3, nVocab));
      const cont = randomTokens(r, 1 + Math.floor(r() * 40), 3, nVocab);
      const readIds = randomTokens(r, Math.floor(r() * 4), 0, nVocab);
      const want = await pair.host.scoreMany(prefixes, cont, { readIds });
      for (const pass of ["cold", "cached"]) {
        const got = await pair.graph.scoreMany(prefixes, cont, { readIds });
        for (let i = 0; i < n; i++) {
          expect(got[i].logprobs.length, pass).toBe(cont.length);
          expect(got[i].final.length, pass).toBe(readIds.length);
          expect(maxAbsDiff(got[i].logprobs, want[i].logprobs), `${pass} candidate ${i}`).toBeLessThanOrEqual(TOL);
          if (readIds.length) expect(maxAbsDiff(got[i].final, want[i].final), `${pass} candidate ${i}`).toBeLessThanOrEqual(TOL);
        }
      }
    }
  });

  it("matches a float64 log-softmax of a fresh decode's logits", async () => {
    const nVocab = pair.host.info.nVocab;
    const prefix = randomTokens(r, 5 + Math.floor(r() * 30), 3, nVocab);
    const cont = randomTokens(r, 8, 3, nVocab);
    const [got] = await pair.graph.scoreMany([prefix], cont);
    const all = new Int32Array([...prefix, ...cont]);
    const logits = await pair.host.logits(all);
    for (let j = 0; j < cont.length; j++) {
      const row = logits.subarray((prefix.length - 1 + j) * nVocab, (prefix.length + j) * nVocab);
      expect(Math.abs(got.logprobs[j] - logSoftmax(row)[cont[j]])).toBeLessThanOrEqual(TOL);
    }
  });

  it("leaves generation's raw logits alone after a score", async () => {
    const nVocab = pair.host.info.nVocab;
    const prefix = randomTokens(r, 10, 3, nVocab);
    await pair.graph.scoreMany([prefix], randomTokens(r, 5, 3, nVocab));
    const a = await pair.graph.logits(prefix);
    const b = await pair.host.logits(prefix);
    expect(maxAbsDiff(a, b)).toBeLessThanOrEqual(TOL);
  });
});

describe("log-probs in the graph with one shared pool", () => {
  // A pool too small for every prefix at once: later calls evict cached prefixes, and the rows of one
  // decode span several ubatches of several sequences.
  const seed = freshSeed();
  const r = rng(seed);
  const pair = hostAndGraph(TINY_LLAMA_PATH, { contextSize: 160, sequences: 6, kvLayout: "unified", threads: 2, batchSize: 48 });

  it(`equals the host path while prefixes are evicted (seed ${seed})`, async () => {
    const nVocab = pair.host.info.nVocab;
    // unified pool: results move with what else is cached (float32 reordering), as score-layout.test.ts
    const tol = 2e-4;
    for (let round = 0; round < 6; round++) {
      const prefixes = Array.from({ length: 2 + Math.floor(r() * 2) }, () => randomTokens(r, 10 + Math.floor(r() * 30), 3, nVocab));
      const cont = randomTokens(r, 1 + Math.floor(r() * 12), 3, nVocab);
      const readIds = randomTokens(r, 2, 0, nVocab);
      const want = await pair.host.scoreMany(prefixes, cont, { readIds });
      const got = await pair.graph.scoreMany(prefixes, cont, { readIds });
      for (let i = 0; i < prefixes.length; i++) {
        expect(maxAbsDiff(got[i].logprobs, want[i].logprobs), `round ${round} candidate ${i}`).toBeLessThanOrEqual(tol);
        expect(maxAbsDiff(got[i].final, want[i].final), `round ${round} candidate ${i}`).toBeLessThanOrEqual(tol);
      }
    }
  });
});

describe("log-probs in the graph beside a generation", () => {
  // One cached-prefix sequence only: the generation must take the very sequence a score left its
  // sampler on, which it detaches (its decodes need raw logits), and the next score attaches again.
  const seed = freshSeed();
  const r = rng(seed);
  const pair = hostAndGraph(TINY_LLAMA_PATH, { contextSize: 128, sequences: 2, kvLayout: "streams", threads: 2, batchSize: 64 });

  async function tokensOf(m: Model, prompt: Int32Array): Promise<number[]> {
    const out: number[] = [];
    for await (const c of m.generate(prompt, { temperature: 0, maxTokens: 12, ignoreEog: true })) out.push(c.token);
    return out;
  }

  it(`scores, generates, scores again: each equal to the host path (seed ${seed})`, async () => {
    const nVocab = pair.host.info.nVocab;
    for (let round = 0; round < 3; round++) {
      const prefix = randomTokens(r, 5 + Math.floor(r() * 30), 3, nVocab);
      const cont = randomTokens(r, 1 + Math.floor(r() * 20), 3, nVocab);
      const [want] = await pair.host.scoreMany([prefix], cont);
      const [got] = await pair.graph.scoreMany([prefix], cont);
      expect(maxAbsDiff(got.logprobs, want.logprobs), `round ${round}, score`).toBeLessThanOrEqual(TOL);
      expect(await tokensOf(pair.graph, prefix), `round ${round}, generation`).toEqual(await tokensOf(pair.host, prefix));
    }
  });
});

describe("logprobsInGraph option", () => {
  it("rejects a value that is not true, false or \"auto\"", async () => {
    for (const v of ["yes", 1, null, "AUTO", "on"]) {
      await expect(Model.load(TINY_LLAMA_PATH, { logprobsInGraph: v as never })).rejects.toSatisfy(
        (e: unknown) => e instanceof GavelError && e.code === "INVALID_ARGUMENT" && /logprobsInGraph/.test(e.message),
      );
    }
  });

  it("\"auto\" (the default) is on only where the logits live on a CUDA device", () => {
    const gpu = ["CPU (AMD EPYC)", "CUDA0 (NVIDIA H200)"];
    expect(resolveLogprobsInGraph(undefined, { cuda: true, devices: gpu, gpuLayers: -1 })).toBe(true);
    expect(resolveLogprobsInGraph("auto", { cuda: true, devices: gpu, gpuLayers: 12 })).toBe(true);
    // no layer offloaded, no CUDA device found, or a CPU build: the host path
    expect(resolveLogprobsInGraph("auto", { cuda: true, devices: gpu, gpuLayers: 0 })).toBe(false);
    expect(resolveLogprobsInGraph("auto", { cuda: true, devices: ["CPU (AMD EPYC)"], gpuLayers: -1 })).toBe(false);
    expect(resolveLogprobsInGraph(undefined, { cuda: false, devices: gpu, gpuLayers: -1 })).toBe(false);
    // an explicit value wins either way
    expect(resolveLogprobsInGraph(true, { cuda: false, devices: [], gpuLayers: 0 })).toBe(true);
    expect(resolveLogprobsInGraph(false, { cuda: true, devices: gpu, gpuLayers: -1 })).toBe(false);
  });

  it("resolves to the host path on this CPU build, by default and as \"auto\"", async () => {
    for (const options of [{}, { logprobsInGraph: "auto" as const }]) {
      const m = await Model.load(TINY_LLAMA_PATH, { contextSize: 64, threads: 1, ...options });
      try {
        expect(m.info.logprobsInGraph).toBe(false);
      } finally {
        await m.dispose();
      }
    }
  });
});
