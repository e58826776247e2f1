// ModelLoadOptions.batchSequences (native/src/model/engine_batch.cpp, engine_cache.cpp): sequences kept
// for batched hidden-states passes, so that such a pass never drops the verdict's cached prefixes. On
// the embedded gavel-mini: without the reservation a wide batch drops them (they are decoded again,
// misses); with it, the same batch leaves them cached (hits), decodes in the free sequences only, and
// each task's rows are still those it gets alone; the cache stays within its cap after a score call
// of more distinct prefixes than the cap.
import { describe, expect, it } from "vitest";
import { Model } from "../../src/index.js";
import { DEFAULT_MODEL } from "../../src/defaults.js";
import { ALONE, errorCode, suiteModel } from "../helpers/model-suite.js";
import { freshSeed, maxAbsDiff, randomTokens, rng } from "../helpers/random.js";

/** As test/model/hidden-states-many.test.ts: batched rows equal single-task rows within 1e-4. */
const TOL = 1e-4;
const SEQUENCES = 6;

describe("batchSequences on gavel-mini", () => {
  const seed = freshSeed();
  const r = rng(seed);
  const alone = suiteModel(DEFAULT_MODEL, ALONE);
  const open = (batchSequences: number) => Model.load(DEFAULT_MODEL, { contextSize: 256, sequences: SEQUENCES, batchSequences, kvLayout: "streams", threads: 1, batchSize: 64 });

  /** Two prefixes scored (cached), a batch of more tasks than the context has sequences, the prefixes scored again. */
  async function scoreBatchScore(m: Model) {
    const nVocab = m.info.nVocab;
    const prefixes = [randomTokens(r, 20, 3, nVocab), randomTokens(r, 31, 3, nVocab)];
    const cont = randomTokens(r, 5, 3, nVocab);
    const first = await m.scoreMany(prefixes, cont);
    const s0 = m.cacheStats();
    const tasks = Array.from({ length: SEQUENCES + 3 }, (_, i) => randomTokens(r, 4 + ((i * 23) % 40), 3, nVocab));
    const rows = await m.hiddenStatesMany(tasks, [1]);
    const s1 = m.cacheStats();
    const again = await m.scoreMany(prefixes, cont);
    const s2 = m.cacheStats();
    for (let i = 0; i < prefixes.length; i++) expect(maxAbsDiff(again[i].logprobs, first[i].logprobs), `seed ${seed}`).toBeLessThanOrEqual(TOL);
    return { tasks, rows, s0, s1, s2 };
  }

  it("without it, a wide batched pass drops the cached prefixes (the score after it misses)", async () => {
    const m = await open(0);
    try {
      expect(m.info.batchSequences).toBe(0);
      const { s0, s1, s2 } = await scoreBatchScore(m);
      expect(s1.batchDrops - s0.batchDrops).toBeGreaterThan(0);
      expect(s2.misses - s1.misses).toBeGreaterThan(0);
    } finally {
      await m.dispose();
    }
  });

  it("with it, the batched pass keeps them (the score after it hits) and each task's rows are its own", async () => {
    const m = await open(3);
    try {
      expect(m.info.batchSequences).toBe(3);
      const { tasks, rows, s0, s1, s2 } = await scoreBatchScore(m);
      expect(s1.batchDrops).toBe(s0.batchDrops);
      expect(s1.entries).toBe(s0.entries);
      expect(s2.misses).toBe(s1.misses);
      expect(s2.hits - s1.hits).toBe(2);
      for (let t = 0; t < tasks.length; t++) expect(maxAbsDiff(rows[t][0], await alone().hiddenStates(tasks[t], 1)), `task ${t} (seed ${seed})`).toBeLessThanOrEqual(TOL);
    } finally {
      await m.dispose();
    }
  });

  it("keeps the cache within sequences − 1 − batchSequences prefixes after a wider score call", async () => {
    const m = await open(3);
    try {
      const nVocab = m.info.nVocab;
      const prefixes = Array.from({ length: 4 }, (_, i) => randomTokens(r, 10 + i * 7, 3, nVocab));
      const cont = randomTokens(r, 4, 3, nVocab);
      const got = await m.scoreMany(prefixes, cont);
      expect(m.cacheStats().entries).toBe(SEQUENCES - 1 - 3);
      const want = await alone().scoreMany(prefixes, cont);
      for (let i = 0; i < prefixes.length; i++) expect(maxAbsDiff(got[i].logprobs, want[i].logprobs), `seed ${seed}`).toBeLessThanOrEqual(TOL);
      // the free sequences are there for a batch: it drops nothing
      await m.hiddenStatesMany(Array.from({ length: 5 }, () => randomTokens(r, 9, 3, nVocab)), [1]);
      expect(m.cacheStats().batchDrops).toBe(0);
    } finally {
      await m.dispose();
    }
  });

  it("refuses more than sequences − 2", async () => {
    expect(await errorCode(open(SEQUENCES - 1))).toBe("INVALID_ARGUMENT");
  });
});
