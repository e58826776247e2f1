/**
 * The glance's 16-bit keys and its device bookkeeping, on the CPU (issue 15):
 * - a KeyBank with f16 keys = the flat float32 glance over the same keys rounded to f16 by
 *   src/util/half.ts (bit for bit: the CPU max-sim converts exactly, then runs the float32 loops),
 *   over every instruction set the CPU has, with subnormal and round-half-even values planted;
 * - against the float64 reference over the *unrounded* keys: m within 2⁻¹¹ + 1e-5 (the f16
 *   rounding bound for unit vectors, |Δ⟨q, k⟩| ≤ 2⁻¹¹·‖q‖‖k‖, plus float32 accumulation), g within
 *   the same unless a near-tie at the k-th place swaps two skills; the vote on the bank's own m is
 *   the reference vote (1e-6);
 * - `detail`: the best columns by g, their m and argmax = those of the full glance;
 * - the device copy's bookkeeping (NativeBank._deviceLayoutProbe): a change uploads only the skills
 *   added since the last sync, removals upload nothing until holes pass a third of the rows, then
 *   one compaction; live ranges never overlap;
 * - bad inputs: keys beyond f16's range, a bad keyType or detail → INVALID_ARGUMENT.
 *
 * Fresh random inputs each run; the seed is logged (replay with GAVEL_TEST_SEED=<seed>).
 */
import { describe, expect, it } from "vitest";
import { loadBinding } from "../../src/native/binding.js";
import { kernelIsas, restoreKernelIsaAfterEach, setKernelIsa } from "../helpers/isa.js";
import { KeyBank } from "../../src/bank/key-bank.js";
import { glance } from "../../src/kernels/kernels.js";
import { floatToHalf, halfToFloat } from "../../src/util/half.js";
import { referenceGlance, referenceVote } from "../oracles/glance-reference.js";
import { expectMaxSimNearReference } from "../helpers/glance-check.js";
import { expectCode, expectCodeSync } from "../helpers/gavel-error.js";
import { freshSeed, rng, unitKeys } from "../helpers/random.js";

const SEED = freshSeed();
console.log(`bank-f16.test.ts seed: ${SEED} (replay with GAVEL_TEST_SEED=${SEED})`);

const F16_TOL = 2 ** -11 + 1e-5;

/** Values that exercise the rounding: f16 subnormals, exact halfway points, carries into the exponent. */
function plantRoundingCases(r: () => number, keys: Float32Array): void {
  const cases = [1e-7, -3e-6, 5.9604644775390625e-8, 2 ** -14, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 0.99951171875 + 2 ** -12, -(2 ** -25)];
  for (let i = 0; i < Math.min(keys.length, 64); i++) keys[Math.floor(r() * keys.length)] = cases[i % cases.length];
}

function flatten(skills: Float32Array[], dim: number) {
  const offsets = new Int32Array(skills.length + 1);
  skills.forEach((b, s) => (offsets[s + 1] = offsets[s] + b.length / dim));
  const bank = new Float32Array(offsets[skills.length] * dim);
  skills.forEach((b, s) => bank.set(b, offsets[s] * dim));
  return { bank, offsets };
}

const rounded = (x: Float32Array) => halfToFloat(floatToHalf(x));

function expectSameArray(got: ArrayLike<number>, want: ArrayLike<number>) {
  expect(got.length).toBe(want.length);
  for (let i = 0; i < want.length; i++) if (!Object.is(got[i], want[i])) expect([i, got[i]]).toEqual([i, want[i]]);
}

const binding = loadBinding();
const isas = kernelIsas(binding);
restoreKernelIsaAfterEach();

describe("KeyBank with f16 keys", () => {
  it("equals the float32 glance over the f16-rounded keys, bit for bit, on every ISA", async () => {
    const r = rng(SEED);
    for (const isa of isas) {
      setKernelIsa(isa);
      for (const [nSkills, maxKeys, dim, nq] of [[1, 1, 1, 1], [9, 40, 17, 13], [40, 70, 256, 30], [25, 33, 100, 7]]) {
        const skills = Array.from({ length: nSkills }, (_, s) => unitKeys(r, s % 6 === 5 ? 0 : 1 + Math.floor(r() * maxKeys), dim));
        skills.forEach((k) => plantRoundingCases(r, k));
        const bank = new KeyBank(dim, { keyType: "f16" });
        expect(bank.keyType).toBe("f16");
        for (const k of skills) bank.add(k);
        const queries = unitKeys(r, nq, dim);
        const weights = Float32Array.from({ length: nq }, () => r());
        const k = 1 + Math.floor(r() * Math.min(nSkills, 5));
        const got = await bank.glance(queries, { weights, k });
        const { bank: flat, offsets } = flatten(skills.map(rounded), dim);
        const want = await glance(queries, flat, offsets, dim, { weights, k });
        expectSameArray(got.g, want.g);
        expectSameArray(got.m, want.m);
        expectSameArray(got.argmax, want.argmax);
        bank.dispose();
      }
    }
  });

  it("stays within the f16 rounding bound of the float64 reference over the unrounded keys", async () => {
    const r = rng(SEED + 1);
    const dim = 192, nSkills = 30, nq = 24, k = 4;
    const skills = Array.from({ length: nSkills }, () => unitKeys(r, 1 + Math.floor(r() * 50), dim));
    const bank = new KeyBank(dim, { keyType: "f16" });
    for (const s of skills) bank.add(s);
    const queries = unitKeys(r, nq, dim);
    const weights = Float32Array.from({ length: nq }, () => 0.1 + r());
    const got = await bank.glance(queries, { weights, k });
    const { bank: flat, offsets } = flatten(skills, dim);
    const want = referenceGlance(queries, flat, offsets, dim, weights, k);
    expectMaxSimNearReference(got, want, queries, flat, offsets, dim, nSkills, F16_TOL);
    const voteOnNative = referenceVote(got.m, nq, nSkills, weights, k);
    for (let s = 0; s < nSkills; s++) expect(Math.abs(got.g[s] - voteOnNative[s])).toBeLessThanOrEqual(1e-6);
    let nearTie = false;
    for (let i = 0; i < nq && !nearTie; i++) {
      const sorted = Array.from(want.m.subarray(i * nSkills, (i + 1) * nSkills)).sort((a, b) => b - a);
      nearTie = sorted[k - 1] - sorted[k] <= 2 * F16_TOL;
    }
    if (!nearTie) for (let s = 0; s < nSkills; s++) expect(Math.abs(got.g[s] - want.g[s])).toBeLessThanOrEqual(F16_TOL);
    // The rounding is real (this test could not pass with the f32 bank's tolerance by accident of
    // equal keys): some m differs from the f32 bank's.
    const f32 = new KeyBank(dim);
    for (const s of skills) f32.add(s);
    const exact = await f32.glance(queries, { weights, k });
    expect(got.m.some((v, c) => v !== exact.m[c])).toBe(true);
  });

  it("holds about half the memory of a float32 bank", () => {
    const r = rng(SEED + 2);
    const dim = 256;
    const a = new KeyBank(dim), b = new KeyBank(dim, { keyType: "f16" });
    for (let s = 0; s < 20; s++) {
      const k = unitKeys(r, 100, dim);
      a.add(k);
      b.add(k);
    }
    expect(a.keyType).toBe("f32");
    expect(b.bytes).toBeLessThan(a.bytes * 0.52);
    expect(b.bytes).toBeGreaterThan(a.bytes * 0.48);
  });

  it("rejects keys beyond f16's range, a bad keyType and a bad detail", async () => {
    const bank = new KeyBank(2, { keyType: "f16" });
    bank.add(new Float32Array([65504, -65519]));  // rounds to ±65504: representable
    expectCodeSync(() => bank.add(new Float32Array([0, 65520])), "INVALID_ARGUMENT");
    expectCodeSync(() => new KeyBank(2, { keyType: "bf16" as "f16" }), "INVALID_ARGUMENT");
    expectCodeSync(() => new (binding.NativeBank)(2, "f8" as "f16"), "INVALID_ARGUMENT");
    await expectCode(bank.glance(new Float32Array([1, 0]), { detail: -1 }), "INVALID_ARGUMENT");
    expect(bank.size).toBe(1);
  });
});

describe("glance detail", () => {
  it("reports m and argmax of the best columns by g only, equal to the full glance's", async () => {
    const r = rng(SEED + 3);
    for (const keyType of ["f32", "f16"] as const) {
      const dim = 48, nSkills = 37, nq = 11;
      const bank = new KeyBank(dim, { keyType });
      const handles = Array.from({ length: nSkills }, (_, s) => bank.add(unitKeys(r, s % 7 === 6 ? 0 : 1 + Math.floor(r() * 20), dim)));
      const queries = unitKeys(r, nq, dim);
      for (const only of [undefined, Int32Array.from(handles.filter(() => r() < 0.5))]) {
        const full = await bank.glance(queries, { handles: only });
        const n = full.g.length;
        for (const detail of [0, 1, 5, 20, n + 3]) {  // ≤ 32: the one-pass selection; n + 3: the sort
          const got = await bank.glance(queries, { handles: only, detail });
          expectSameArray(got.g, full.g);
          const want = Array.from({ length: n }, (_, s) => s).sort((a, b) => full.g[b] - full.g[a] || a - b).slice(0, detail);
          expectSameArray(got.columns!, want);
          const nd = want.length;
          expect(got.m.length).toBe(nq * nd);
          for (let i = 0; i < nq; i++)
            for (let j = 0; j < nd; j++) {
              expect(got.m[i * nd + j]).toBe(full.m[i * n + want[j]]);
              expect(got.argmax[i * nd + j]).toBe(full.argmax[i * n + want[j]]);
            }
        }
        expect(full.columns).toBeUndefined();
      }
    }
  });
});

describe("the device copy's bookkeeping (layout probe, no device needed)", () => {
  // KeyBank keeps its NativeBank private; the probe is the NativeBank's, so these build one directly.
  it("uploads only what changed, compacts once holes pass a third", () => {
    const dim = 4;
    const b = new (binding.NativeBank)(dim);
    const rows = (n: number) => new Float32Array(n * dim).fill(0.5);
    const a = b.add(rows(3));
    b.add(rows(0));
    const c = b.add(rows(5));
    let p = b._deviceLayoutProbe();
    expect([Array.from(p.uploads), p.uploadedRows, p.end, p.live, p.compacted]).toEqual([[0, 2], 8, 8, 8, false]);
    expect(Array.from(p.rows)).toEqual([0, 3, 3]);
    p = b._deviceLayoutProbe(); // nothing changed: nothing to upload
    expect([Array.from(p.uploads), p.uploadedRows, p.end]).toEqual([[], 0, 8]);
    b.add(rows(4));
    p = b._deviceLayoutProbe();
    expect([Array.from(p.uploads), p.uploadedRows, p.end, p.live]).toEqual([[3], 4, 12, 12]);
    expect(Array.from(p.rows)).toEqual([0, 3, 3, 8]);
    b.remove(a); // 3 hole rows of 12: kept
    p = b._deviceLayoutProbe();
    expect([Array.from(p.uploads), p.uploadedRows, p.end, p.live, p.compacted]).toEqual([[], 0, 12, 9, false]);
    expect(Array.from(p.rows)).toEqual([3, 3, 8]);
    b.remove(c); // 8 hole rows of 12: compaction, the 2 live skills placed afresh (one has no rows)
    p = b._deviceLayoutProbe();
    expect([Array.from(p.uploads), p.uploadedRows, p.end, p.live, p.compacted]).toEqual([[1], 4, 4, 4, true]);
    expect(Array.from(p.rows)).toEqual([0, 0]);
    b.clear();
    p = b._deviceLayoutProbe();
    expect([p.uploadedRows, p.end, p.live]).toEqual([0, 0, 0]);
    b.dispose();
  });

  it("keeps live ranges disjoint and uploads exactly the new skills, over random changes", () => {
    const r = rng(SEED + 4);
    const dim = 2;
    const b = new (binding.NativeBank)(dim);
    const count = new Map<number, number>();
    const placed = new Map<number, number>(); // handle → row, as of the last probe
    for (let step = 0; step < 300; step++) {
      const op = r();
      if (op < 0.55 || count.size === 0) {
        const n = Math.floor(r() * 6);
        count.set(b.add(new Float32Array(n * dim).fill(0.25)), n);
      } else if (op < 0.97) {
        const hs = [...count.keys()];
        const h = hs[Math.floor(r() * hs.length)];
        b.remove(h);
        count.delete(h);
      } else {
        b.clear();
        count.clear();
      }
      if (r() < 0.3) continue; // several changes between two syncs
      const p = b._deviceLayoutProbe();
      const handles = Array.from(b.handles());
      const uploaded = new Set(Array.from(p.uploads, (e) => handles[e]));
      let live = 0, fresh = 0;
      const spans: [number, number][] = [];
      handles.forEach((h, e) => {
        const n = count.get(h)!;
        live += n;
        const isNew = !placed.has(h);
        if (isNew || p.compacted) fresh += n;
        // a skill keeps its rows unless the sync compacted; a new one is uploaded iff it has rows
        if (!p.compacted && !isNew) expect(p.rows[e]).toBe(placed.get(h));
        expect(uploaded.has(h)).toBe((isNew || p.compacted) && n > 0);
        if (n > 0) spans.push([p.rows[e], p.rows[e] + n]);
      });
      expect(p.live).toBe(live);
      expect(p.uploadedRows).toBe(fresh);
      expect(3 * (p.end - p.live)).toBeLessThanOrEqual(p.end);
      spans.sort((x, y) => x[0] - y[0]);
      for (let i = 0; i < spans.length; i++) {
        expect(spans[i][0]).toBeGreaterThanOrEqual(i ? spans[i - 1][1] : 0);
        expect(spans[i][1]).toBeLessThanOrEqual(p.end);
      }
      placed.clear();
      handles.forEach((h, e) => placed.set(h, p.rows[e]));
    }
    b.dispose();
  });

  it("an unchanged bank syncs at once and reuses its columns; any change, in place or copied, syncs again", async () => {
    const dim = 2;
    const b = new (binding.NativeBank)(dim);
    const rows = (n: number) => new Float32Array(n * dim).fill(0.5);
    const a = b.add(rows(2));
    b.add(rows(1));
    let p = b._deviceLayoutProbe();
    expect([p.columnsReused, Array.from(p.rows)]).toEqual([false, [0, 2]]);
    p = b._deviceLayoutProbe();
    expect([Array.from(p.uploads), p.uploadedRows, p.end, p.live, p.compacted, p.columnsReused, Array.from(p.rows)]).toEqual([[], 0, 3, 3, false, true, [0, 2]]);
    expect(() => b.remove(9999)).toThrow(); // no change: still the same snapshot
    expect(b._deviceLayoutProbe().columnsReused).toBe(true);
    b.add(rows(0)); // mutated in place (no glance holds the snapshot)
    p = b._deviceLayoutProbe();
    expect([Array.from(p.uploads), p.columnsReused, Array.from(p.rows)]).toEqual([[], false, [0, 2, 3]]);
    // A glance holds the snapshot: the next add copies it, and the copy is a new snapshot to the layout.
    const pending = b.glance(new Float32Array([1, 0]), new Float32Array([1]), 1, null, 0, 0);
    const c = b.add(rows(4));
    p = b._deviceLayoutProbe();
    expect([Array.from(p.uploads), p.uploadedRows, p.columnsReused, Array.from(p.rows)]).toEqual([[3], 4, false, [0, 2, 3, 3]]);
    await pending;
    b.remove(a); // 2 hole rows of 7: kept, and the columns follow
    p = b._deviceLayoutProbe();
    expect([p.end, p.live, p.columnsReused, Array.from(p.rows)]).toEqual([7, 5, false, [2, 3, 3]]);
    expect(b._deviceLayoutProbe().columnsReused).toBe(true);
    b.remove(c); // 6 hole rows of 7: compaction moves the rows; the columns move with them
    p = b._deviceLayoutProbe();
    expect([p.compacted, p.end, p.columnsReused, Array.from(p.rows)]).toEqual([true, 1, false, [0, 1]]);
    p = b._deviceLayoutProbe();
    expect([p.compacted, p.end, p.columnsReused, Array.from(p.rows)]).toEqual([false, 1, true, [0, 1]]);
    b.clear();
    p = b._deviceLayoutProbe();
    expect([p.end, p.live, p.columnsReused, p.rows.length]).toEqual([0, 0, false, 0]);
    expect(b._deviceLayoutProbe().columnsReused).toBe(true);
    b.dispose();
  });

  it("a second probe with no change between reuses everything, over random changes", () => {
    const r = rng(SEED + 5);
    const dim = 2;
    const b = new (binding.NativeBank)(dim);
    const held: number[] = [];
    for (let step = 0; step < 200; step++) {
      const op = r();
      if (op < 0.6 || held.length === 0) held.push(b.add(new Float32Array(Math.floor(r() * 5) * dim).fill(0.25)));
      else if (op < 0.97) b.remove(held.splice(Math.floor(r() * held.length), 1)[0]);
      else {
        b.clear();
        held.length = 0;
      }
      if (r() < 0.3) continue;
      const p = b._deviceLayoutProbe();
      expect(p.columnsReused).toBe(false);
      const q = b._deviceLayoutProbe();
      expect([Array.from(q.uploads), q.uploadedRows, q.end, q.live, q.compacted, q.columnsReused]).toEqual([[], 0, p.end, p.live, false, true]);
      expect(Array.from(q.rows)).toEqual(Array.from(p.rows));
    }
    b.dispose();
  });
});
