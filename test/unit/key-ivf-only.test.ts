/**
 * The key IVF glance over some of the bank's skills (KeyIvf.glance's `handles`: the route's routable
 * skills when some have disable-model-invocation or are excluded):
 * - probing every list, g over the listed skills equals the exact glance over those skills alone
 *   (KeyBank.glance with the same handles) bit for bit, plain, with the list bound, with the int8
 *   codes and with the spread probe, on fresh random banks (f32 and f16, skills without keys among
 *   both the listed and the left-out ones, k from 1 to past the listed count), on every instruction set;
 * - at a partial nprobe it equals the glance of an index holding the listed skills alone in the same
 *   lists (the same centroids, each key's list as exported), so a left-out skill takes no row's vote;
 *   the int8 codes and the bound change no bit of it; listing every skill is the unrestricted glance;
 * - handles the bank does not hold are left out; listing none of the indexed skills gives an empty
 *   result; a non-Int32Array is INVALID_ARGUMENT.
 *
 * Inputs are fresh random draws each run; the seed is logged (replay with GAVEL_TEST_SEED).
 */
import { describe, expect, it } from "vitest";
import { KeyBank } from "../../src/bank/key-bank.js";
import { KeyIvf } from "../../src/bank/key-ivf.js";
import { decayWeights } from "../../src/kernels/kernels.js";
import { loadBinding } from "../../src/native/binding.js";
import { kernelIsas, restoreKernelIsaAfterEach, setKernelIsa } from "../helpers/isa.js";
import { freshSeed, nearKeys, rng, unitKeys } from "../helpers/random.js";
import { expectCode } from "../helpers/gavel-error.js";

const SEED = freshSeed();
console.log(`key-ivf-only.test.ts seed: ${SEED} (replay with GAVEL_TEST_SEED=${SEED})`);

/** handle → g of a glance result. */
function byHandle(res: { g: Float32Array; handles: Int32Array }): Map<number, number> {
  const m = new Map<number, number>();
  for (let i = 0; i < res.handles.length; i++) m.set(res.handles[i], res.g[i]);
  return m;
}

/** A random subset of the bank's handles, in the bank's order (at least one). */
function subset(r: () => number, all: Int32Array): Int32Array {
  const share = [0.1, 0.5, 0.9, 1][Math.floor(r() * 4)];
  const kept = all.filter(() => r() < share);
  return kept.length > 0 ? kept : all.slice(0, 1);
}

describe("key IVF glance over some skills", () => {
  restoreKernelIsaAfterEach();

  it("probing every list equals the exact glance over the listed skills bit for bit, on every ISA", async () => {
    const r = rng(SEED);
    for (const isa of kernelIsas(loadBinding())) {
      setKernelIsa(isa);
      for (const keyType of ["f32", "f16"] as const) {
        const dim = [8, 33, 64, 256][Math.floor(r() * 4)];
        const topics = unitKeys(r, 8, dim);
        const bank = new KeyBank(dim, { keyType });
        for (let s = 0; s < 40 + Math.floor(r() * 80); s++) bank.add(nearKeys(r, topics, dim, r() < 0.1 ? 0 : 1 + Math.floor(r() * 16), 0.3 + r()));
        const index = await KeyIvf.build(bank, { centroids: 1 + Math.floor(r() * 16), seed: Math.floor(r() * 1000), groups: r() < 0.5 ? 1 : 3 });
        expect(index.restricts).toBe(true);
        for (let round = 0; round < 3; round++) {
          const only = subset(r, bank.handles());
          const nq = 1 + Math.floor(r() * 40);
          const queries = nearKeys(r, topics, dim, nq, 0.5);
          const weights = decayWeights(nq, nq - 1 + Math.floor(r() * 40));
          for (const k of [undefined, 1, 5, only.length + 2]) {
            const exact = byHandle(await bank.glance(queries, { weights, k, handles: only }));
            const variants = [{}, { prune: true }, { i8: true }, { i8: true, prune: true }, { probeSpread: "weight" as const, i8: true, prune: true }];
            for (const v of variants) {
              const ivf = await index.glance(bank, queries, { weights, k, nprobe: "all", handles: only, ...v });
              expect(Array.from(ivf.handles)).toEqual(Array.from(only));
              expect(byHandle(ivf)).toEqual(exact);
            }
          }
        }
        bank.dispose();
      }
    }
  });

  it("at a partial nprobe equals the same lists holding the listed skills alone; codes and bound change no bit; every skill listed is the plain glance", async () => {
    const r = rng(SEED + 1);
    const dim = 32;
    const topics = unitKeys(r, 10, dim);
    const bank = new KeyBank(dim);
    const keysOf = new Map<number, Float32Array>();
    for (let s = 0; s < 150; s++) {
      const keys = nearKeys(r, topics, dim, r() < 0.05 ? 0 : 1 + Math.floor(r() * 12), 0.5);
      keysOf.set(bank.add(keys), keys);
    }
    const index = await KeyIvf.build(bank, { centroids: 24, seed: 7 });
    const codes = index.exportCodes();
    const stats = index.stats();
    for (let round = 0; round < 4; round++) {
      const only = subset(r, bank.handles());
      // the reference: a bank of the listed skills alone, their keys in the same lists (the same centroids)
      const alone = new KeyBank(dim);
      const twin = new Map<number, number>();
      const offsets = [0], lists: number[] = [], sims: number[] = [], handles: number[] = [];
      for (const h of only) {
        const h2 = alone.add(keysOf.get(h)!);
        twin.set(h2, h);
        const col = codes.handles.indexOf(h);
        for (let j = codes.offsets[col]; j < codes.offsets[col + 1]; j++) lists.push(codes.codes[j]);
        offsets.push(lists.length);
        sims.push(codes.simSums[col]);
        handles.push(h2);
      }
      const ref = KeyIvf._restore(dim, codes, stats.trainedRows, stats.trainMeanSim);
      expect(ref._load(alone, Int32Array.from(handles), Int32Array.from(offsets), Int32Array.from(lists), Float64Array.from(sims))).toBe(only.length);
      const queries = nearKeys(r, topics, dim, 12, 0.5);
      const weights = decayWeights(12, 20);
      for (const nprobe of [1, 5]) {
        const want = await ref.glance(alone, queries, { weights, nprobe });
        const plain = await index.glance(bank, queries, { weights, nprobe, handles: only });
        expect(Array.from(plain.handles)).toEqual(Array.from(want.handles, (h) => twin.get(h)));
        expect(plain.g).toEqual(want.g);
        const coded = await index.glance(bank, queries, { weights, nprobe, handles: only, i8: true, prune: true });
        expect(coded.handles).toEqual(plain.handles);
        expect(coded.g).toEqual(plain.g);
      }
      alone.dispose();
    }
    // every skill listed: the unrestricted glance
    const queries = nearKeys(r, topics, dim, 9, 0.5);
    const a = await index.glance(bank, queries, { nprobe: 5 });
    const b = await index.glance(bank, queries, { nprobe: 5, handles: bank.handles() });
    expect(b.handles).toEqual(a.handles);
    expect(b.g).toEqual(a.g);
    bank.dispose();
  });

  it("leaves out handles the bank does not hold; lists of nothing indexed glance nothing; refuses a non-Int32Array", async () => {
    const r = rng(SEED + 2);
    const dim = 16;
    const topics = unitKeys(r, 4, dim);
    const bank = new KeyBank(dim);
    for (let s = 0; s < 30; s++) bank.add(nearKeys(r, topics, dim, 1 + Math.floor(r() * 5), 0.5));
    const index = await KeyIvf.build(bank, { centroids: 4 });
    const queries = nearKeys(r, topics, dim, 3, 0.5);
    const some = bank.handles().slice(0, 5);
    const withStranger = Int32Array.from([...some, 999_999]);
    const res = await index.glance(bank, queries, { nprobe: "all", handles: withStranger });
    expect(Array.from(res.handles)).toEqual(Array.from(some));
    expect(byHandle(res)).toEqual(byHandle(await bank.glance(queries, { handles: some })));
    const none = await index.glance(bank, queries, { nprobe: "all", handles: Int32Array.from([999_999]), k: 1 });
    expect(none.handles.length).toBe(0);
    expect(none.g.length).toBe(0);
    await expectCode(index.glance(bank, queries, { handles: [1, 2] as unknown as Int32Array }), "INVALID_ARGUMENT");
    bank.dispose();
  });
});
