/**
 * The key IVF runs one native job at a time, and its synchronous reads waited on the JavaScript thread
 * for the job under way: a glance at the default nprobe read the centroid count that way, so a route
 * that glanced while an install retrained the index froze the event loop for the whole training.
 * KeyIvf queues its jobs and reads in call order (src/bank/key-ivf.ts):
 * - a glance called while a training runs returns at once, the event loop turns while the training
 *   goes on, and the glance then reads the new centroids (the same g as a glance made after it);
 * - statsAsync and exportAsync wait their turn the same way and agree with the synchronous reads
 *   made once nothing runs.
 * Inputs are fresh random draws each run; the seed is logged (replay with GAVEL_TEST_SEED).
 */
import { describe, expect, it } from "vitest";
import { KeyBank } from "../../src/bank/key-bank.js";
import { defaultNprobe, KeyIvf } from "../../src/bank/key-ivf.js";
import { freshSeed, rng, unitKeys } from "../helpers/random.js";

const SEED = freshSeed();
console.log(`key-ivf-queue.test.ts seed: ${SEED} (replay with GAVEL_TEST_SEED=${SEED})`);

/** Resolves on the event loop's next check phase: whether `busy()` still held then. */
function nextTurn(busy: () => boolean): Promise<boolean> {
  return new Promise((resolve) => setImmediate(() => resolve(busy())));
}

describe("the key IVF's jobs in call order", () => {
  it("a glance called during a training leaves the event loop free and reads the new centroids", async () => {
    const r = rng(SEED);
    const dim = 32;
    const bank = new KeyBank(dim);
    // enough keys that a training takes many turns of the event loop, even on a fast machine
    for (let s = 0; s < 200; s++) bank.add(unitKeys(r, 300, dim));
    const index = await KeyIvf.build(bank, { centroids: 16, seed: 1 });
    const queries = unitKeys(r, 12, dim);
    let training = true;
    const trained = index.train(bank, { seed: 2, iters: 20 }).finally(() => (training = false));
    // the training under way on its worker thread (before, a glance called now waited for it)
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(training).toBe(true);
    const during = index.glance(bank, queries); // the default nprobe: read when its turn comes
    const stats = index.statsAsync();
    // the loop turns while the training runs (before, the glance call itself waited for it)
    expect(await nextTurn(() => training)).toBe(true);
    await trained;
    const s = await stats;
    expect(s).toEqual(index.stats());
    const after = await index.glance(bank, queries, { nprobe: defaultNprobe(s.centroids) });
    const g = await during;
    expect(Array.from(g.handles)).toEqual(Array.from(after.handles));
    expect(Array.from(g.g)).toEqual(Array.from(after.g));
    const { codes, stats: s2 } = await index.exportAsync();
    expect(s2).toEqual(index.stats());
    expect(codes.centroids).toEqual(index.exportCodes().centroids);
  }, 300_000);
});
