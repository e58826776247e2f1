// The states pass on several instances of one model (gavel train --states-workers): every entry is the
// one a single model computes, bit for bit, whichever instance computed it; another model is refused.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_MODEL } from "../../src/defaults.js";
import { Model } from "../../src/index.js";
import { StatesCache } from "../../src/model/states-cache.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";
import { freshSeed, rng } from "../helpers/random.js";
import { expectCode } from "../helpers/gavel-error.js";

describe("StatesCache with several workers", () => {
  const models: Model[] = [];
  let dir: string;
  beforeAll(async () => {
    for (let i = 0; i < 3; i++) models.push(await Model.load(TINY_LLAMA_PATH, { contextSize: 256, threads: 1 }));
    dir = await mkdtemp(join(tmpdir(), "gavel-states-workers-"));
  });
  afterAll(async () => {
    for (const m of models) await m.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  it("computes, concurrently over 3 models, the states one model computes", async () => {
    const seed = freshSeed();
    const r = rng(seed);
    const nVocab = models[0].info.nVocab;
    const seqs = Array.from({ length: 12 }, () => Int32Array.from({ length: 5 + Math.floor(r() * 60) }, () => 1 + Math.floor(r() * (nVocab - 1))));
    const one = await StatesCache.open(undefined, models[0], 3);
    const pool = await StatesCache.open(join(dir, "pool"), models[0], 3);
    await pool.addWorkers(models.slice(1));
    expect(pool.workers).toBe(3);
    const want: Float32Array[] = [];
    for (const t of seqs) want.push(await one.get(t, 1, t.length));
    const got = await Promise.all(seqs.map((t) => pool.get(t, 1, t.length)));
    got.forEach((g, i) => expect(Buffer.from(g.buffer).equals(Buffer.from(want[i].buffer)), `seed ${seed}, sequence ${i}`).toBe(true));
    // and read back from disk by a one-model cache
    const again = await StatesCache.open(join(dir, "pool"), models[0], 3);
    const back = await Promise.all(seqs.map((t) => again.get(t, 1, t.length)));
    expect(again.stats.hits).toBe(seqs.length);
    back.forEach((g, i) => expect(Buffer.from(g.buffer).equals(Buffer.from(want[i].buffer))).toBe(true));
  });

  it("refuses a worker that is another model", async () => {
    const other = await Model.load(DEFAULT_MODEL, { contextSize: 256, threads: 1 });
    try {
      const c = await StatesCache.open(undefined, models[0], 3);
      await expectCode(c.addWorkers([other]), "INVALID_ARGUMENT");
      expect(c.workers).toBe(1);
    } finally {
      await other.dispose();
    }
  });
});
