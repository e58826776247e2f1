// The scorer's KV layouts, physical batch and packed cold prefixes, on stories260K (f32 weights) and
// the embedded gavel-mini (Q8_0): scoreMany over random candidate sets must equal each candidate
// scored alone in a fresh context, and its native log-probs must equal a float64 log-softmax of the
// full-vocabulary logits of a fresh decode.
import { describe, expect, it } from "vitest";
import { Model, type ScoreResult } from "../../src/index.js";
import { DEFAULT_MODEL } from "../../src/defaults.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";
import { freshSeed, logSoftmax, maxAbsDiff, randomTokens, rng } from "../helpers/random.js";
import { ALONE, errorCode, suiteModel } from "../helpers/model-suite.js";

/**
 * Tolerances, fp32 on the CPU (f32 KV cache, no flash attention).
 * - "streams": a continuation's attention covers its own stream only, so scoreMany repeats a fresh
 *   decode's arithmetic except where a ubatch mixes streams of other lengths (the KQ product is then
 *   padded to the longest): measured ≤ 1e-6 nats on both models; 1e-4 allowed.
 * - "unified": the KQ product spans the whole pool, so results move with whatever else is cached. On
 *   stories (f32 weights) that stays in float32 rounding (≤ 4e-6, 2e-4 allowed, as model.test.ts); on
 *   gavel-mini the Q8_0 matrices requantize each activation, and a last-bit difference flips a rounding
 *   step: up to 0.22 nats seen with one other prefix in the pool. So "unified" is only checked on
 *   stories, and that spread is why "streams" is the verdict's layout.
 * - gavel-mini under "streams" with the AVX-512 kernels: the same requantization flip happens, rarely,
 *   when a ubatch pads streams of other lengths: 0.0275 nats on one read id (seed 675156633, warm call;
 *   the AVX2 build gives ≤ 1e-4 on that seed); 0.095 nats once under load (seed 1888527093, a CI run
 *   beside another suite; not reproduced alone); 0.086 nats between a 2048-token ubatch packing nine
 *   cold prefixes and 16-token ubatches (seed 2082542326, reproduced alone). So gavel-mini's bound is
 *   0.15 nats, far under what a layout error gives (whole nats), and stories260K, whose f32 weights
 *   requantize nothing, keeps the strict one and with it the layout check itself.
 */
const TOL = { streams: 1e-4, unified: 2e-4 };
const Q8_STREAMS_TOL = 0.15;

const models = [
  { name: "stories260K", path: TINY_LLAMA_PATH, layouts: ["streams", "unified"] as const, maxPrefix: 60, tol: TOL },
  { name: "gavel-mini", path: DEFAULT_MODEL, layouts: ["streams"] as const, maxPrefix: 120, tol: { ...TOL, streams: Q8_STREAMS_TOL } },
];

describe.each(models)("scoreMany on $name", (mx) => {
  const seed = freshSeed();
  const r = rng(seed);
  const fresh = suiteModel(mx.path, ALONE); // the reference: one request at a time, cache cleared before each

  /** A random candidate set: 2–9 prefixes of random lengths, one sharing another's start, one repeated. */
  function candidates(nVocab: number): { prefixes: Int32Array[]; cont: Int32Array; readIds: Int32Array } {
    const n = 2 + Math.floor(r() * 8);
    const prefixes = Array.from({ length: n }, () => randomTokens(r, 1 + Math.floor(r() * mx.maxPrefix), 3, nVocab));
    const base = prefixes[0];
    if (base.length > 2) prefixes.push(base.subarray(0, 1 + Math.floor(r() * (base.length - 1))));
    prefixes.push(prefixes[Math.floor(r() * n)]);
    return { prefixes, cont: randomTokens(r, 1 + Math.floor(r() * 40), 3, nVocab), readIds: randomTokens(r, 3, 0, nVocab) };
  }

  async function alone(prefix: Int32Array, cont: Int32Array, readIds: Int32Array) {
    await fresh().clearCache();
    return fresh().score(prefix, cont, { readIds });
  }

  for (const layout of mx.layouts) {
    it(`"${layout}": random candidate sets, cold and warm, equal each candidate alone in a fresh context`, async () => {
      const sequences = 6; // fewer than some sets' candidates: waves and evictions happen
      const m = await Model.load(mx.path, { contextSize: layout === "unified" ? 1024 : 256, sequences, kvLayout: layout, threads: 1, batchSize: 128 });
      try {
        expect(m.info.kvLayout).toBe(layout);
        for (let trial = 0; trial < 3; trial++) {
          const { prefixes, cont, readIds } = candidates(m.info.nVocab);
          await m.clearCache();
          const cold = await m.scoreMany(prefixes, cont, { readIds });
          const warm = await m.scoreMany(prefixes, cont, { readIds });
          for (let i = 0; i < prefixes.length; i++) {
            const one = await alone(prefixes[i], cont, readIds);
            const what = `trial ${trial} candidate ${i} of ${prefixes.length} (seed ${seed})`;
            expect(maxAbsDiff(cold[i].logprobs, one.logprobs), what).toBeLessThan(mx.tol[layout]);
            expect(maxAbsDiff(cold[i].final, one.final), what).toBeLessThan(mx.tol[layout]);
            expect(maxAbsDiff(warm[i].logprobs, one.logprobs), what).toBeLessThan(mx.tol[layout]);
            expect(maxAbsDiff(warm[i].final, one.final), what).toBeLessThan(mx.tol[layout]);
          }
        }
      } finally {
        await m.dispose();
      }
    });
  }

  it("native log-probs equal a float64 log-softmax of a fresh decode's full logits", async () => {
    const { nVocab } = fresh().info;
    const tokens = randomTokens(r, 30 + Math.floor(r() * 60), 3, nVocab);
    const cut = 1 + Math.floor(r() * (tokens.length - 2));
    const readIds = randomTokens(r, 4, 0, nVocab);
    await fresh().clearCache();
    const got = await fresh().score(tokens.subarray(0, cut), tokens.subarray(cut), { readIds });
    const logits = await fresh().logits(tokens);
    const expected = Array.from({ length: tokens.length - cut }, (_, i) => logSoftmax(logits.subarray((cut - 1 + i) * nVocab, (cut + i) * nVocab))[tokens[cut + i]]);
    const last = logSoftmax(logits.subarray((tokens.length - 1) * nVocab));
    // the same decode's logits: only the log-normaliser's float32 exps (summed in double) differ
    expect(maxAbsDiff(got.logprobs, expected), `seed ${seed}`).toBeLessThan(1e-5);
    expect(maxAbsDiff(got.final, Array.from(readIds, (id) => last[id])), `seed ${seed}`).toBeLessThan(1e-5);
  });

  it("a wave reads the same log-probs, to the bit, whether its prefixes were cached or not", async () => {
    // Cold prefixes are decoded alone, never beside another sequence's tokens: their KV, and so
    // every log-prob read over them, cannot depend on the cache's state (on CUDA, kernels round with
    // a ubatch's shape; here the Q8_0 activations of gavel-mini requantize per ubatch row).
    const m = await Model.load(mx.path, { contextSize: 2048, sequences: 10, kvLayout: "streams", threads: 1, batchSize: 2048 });
    try {
      const { nVocab } = m.info;
      for (let trial = 0; trial < 3; trial++) {
        const n = 2 + Math.floor(r() * 7);
        const prefixes = Array.from({ length: n }, () => randomTokens(r, 2 + Math.floor(r() * 3 * mx.maxPrefix), 3, nVocab));
        const cont = randomTokens(r, 1 + Math.floor(r() * 40), 3, nVocab);
        const readIds = randomTokens(r, 3, 0, nVocab);
        await m.clearCache();
        const cold = await m.scoreMany(prefixes, cont, { readIds });
        const warm = await m.scoreMany(prefixes, cont, { readIds });
        // some prefixes cached (by a call of their own), the others decoded by the wave
        await m.clearCache();
        const some = prefixes.filter(() => r() < 0.5);
        if (some.length > 0) await m.scoreMany(some, cont, { readIds });
        const mixed = await m.scoreMany(prefixes, cont, { readIds });
        for (let i = 0; i < n; i++) {
          const what = `trial ${trial} candidate ${i} of ${n} (seed ${seed})`;
          const bits = (x: ScoreResult) => [Array.from(x.logprobs), Array.from(x.final)];
          expect(bits(warm[i]), what).toEqual(bits(cold[i]));
          expect(bits(mixed[i]), what).toEqual(bits(cold[i]));
        }
      }
    } finally {
      await m.dispose();
    }
  });

  it("a physical batch above 512, and packed cold prefixes, equal one-by-one small batches", async () => {
    const big = await Model.load(mx.path, { contextSize: 2048, sequences: 10, kvLayout: "streams", threads: 1, batchSize: 2048 });
    const small = await Model.load(mx.path, { contextSize: 2048, sequences: 10, kvLayout: "streams", threads: 1, batchSize: 16 });
    try {
      expect(big.info.batchSize).toBe(2048);
      expect(big.info.ubatchSize).toBe(2048);
      expect(small.info.ubatchSize).toBe(16);
      const { nVocab } = big.info;
      // 9 prefixes of up to 700 tokens: one 2048-token decode packs several cold prefixes
      const prefixes = Array.from({ length: 9 }, () => randomTokens(r, 300 + Math.floor(r() * 400), 3, nVocab));
      const cont = randomTokens(r, 20, 3, nVocab);
      const packed = await big.scoreMany(prefixes, cont);
      for (let i = 0; i < prefixes.length; i++) {
        await small.clearCache();
        const one = await small.score(prefixes[i], cont);
        expect(maxAbsDiff(packed[i].logprobs, one.logprobs), `candidate ${i} (seed ${seed})`).toBeLessThan(mx.tol.streams);
      }
    } finally {
      await big.dispose();
      await small.dispose();
    }
    // gavel-mini decodes ~4,500 tokens twice on one thread: past 120 s on a loaded 2-core machine
  }, 600_000);
});

describe("scorer limits are typed errors before llama.cpp sees them", () => {
  it("rejects a batch above the context, an unknown layout and a KV cache over 2^24 cells", async () => {
    expect(await errorCode(Model.load(TINY_LLAMA_PATH, { contextSize: 256, batchSize: 257 }))).toBe("INVALID_ARGUMENT");
    expect(await errorCode(Model.load(TINY_LLAMA_PATH, { kvLayout: "paged" as "streams" }))).toBe("INVALID_ARGUMENT");
    expect(await errorCode(Model.load(TINY_LLAMA_PATH, { contextSize: 1 << 20, sequences: 32, kvLayout: "streams" }))).toBe("INVALID_ARGUMENT");
    // the same limits on the native side, for callers of the raw binding
    const { loadBinding } = await import("../../src/native/binding.js");
    const base = { gpuLayers: 0, contextSize: 64, threads: 1, batchSize: 8, sequences: 2, flashAttention: 0, kvF16: false, kvUnified: true, logprobsInGraph: false };
    for (const params of [{ ...base, batchSize: 65 }, { ...base, contextSize: 1 << 20, sequences: 32, kvUnified: false }]) {
      const raw = new (loadBinding().NativeModel)();
      expect(await errorCode(raw.load(TINY_LLAMA_PATH, params))).toBe("INVALID_ARGUMENT");
      raw.dispose();
    }
    // and the same raw parameters within the limits load
    const ok = new (loadBinding().NativeModel)();
    await ok.load(TINY_LLAMA_PATH, { ...base, batchSize: 64, kvUnified: false });
    expect(ok.info().kvLayout).toBe("streams");
    ok.dispose();
  });

  it("a batch smaller than the number of sequences decodes (llama.cpp's output bound is raised, not asserted)", async () => {
    const m = await Model.load(TINY_LLAMA_PATH, { contextSize: 64, batchSize: 4, sequences: 8, threads: 1 });
    try {
      const tokens = m.tokenize("Once upon a time there was a little girl", { addBos: m.info.addBos });
      expect((await m.hiddenStates(tokens, 1)).length).toBe(tokens.length * m.info.nEmbd);
      const r = await m.score(tokens.subarray(0, 5), tokens.subarray(5));
      expect(r.logprobs.length).toBe(tokens.length - 5);
    } finally {
      await m.dispose();
    }
  });

  it("a small contextSize lowers the default batch to it", async () => {
    const m = await Model.load(TINY_LLAMA_PATH, { contextSize: 64, sequences: 2 });
    expect(m.info.batchSize).toBe(64);
    await m.dispose();
  });
});
