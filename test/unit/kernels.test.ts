/**
 * The router's kernels against their float64 references and the paper's guarantees (appendix D):
 * Proposition 1 (distortion), Proposition 2 (cover + separation, size bracket), the vote-stability
 * corollary, native glance = reference glance, and argument validation.
 *
 * Inputs are fresh random draws on every run; the seed is logged so a failure can be replayed with
 * GAVEL_TEST_SEED=<seed>.
 */
import { describe, expect, it } from "vitest";
import { loadBinding } from "../../src/native/binding.js";
import { kernelIsas, restoreKernelIsaAfterEach, setKernelIsa } from "../helpers/isa.js";
import { coverFarthestFirst, decayWeights, glance, MAX_VOTE_K, routeVoteK, voteK } from "../../src/kernels/kernels.js";
import {
  distance,
  dot,
  referenceCover,
  referenceGlance,
  referenceMaxSim,
  referenceTopK,
  referenceVote,
  row,
} from "../oracles/glance-reference.js";
import { expectMaxSimNearReference } from "../helpers/glance-check.js";
import { caught, expectCodeSync, expectGavelError } from "../helpers/gavel-error.js";
import { freshSeed, gauss, rng } from "../helpers/random.js";

const SEED = freshSeed();
console.log(`kernels.test.ts seed: ${SEED} (replay with GAVEL_TEST_SEED=${SEED})`);

function normalise(v: Float64Array): Float64Array {
  const n = Math.sqrt(dot(v, v));
  for (let d = 0; d < v.length; d++) v[d] /= n;
  return v;
}

function unitVector(r: () => number, dim: number): Float64Array {
  return normalise(Float64Array.from({ length: dim }, () => gauss(r)));
}

/**
 * n unit keys drawn around a few random directions (a skill's tokens cluster by capability, which
 * is what makes the cover compress), `spread` controlling the cluster width. Float32 rows are
 * renormalised after rounding so they are unit to float32 precision.
 */
function clusteredKeys(r: () => number, n: number, dim: number, spread: number): Float32Array {
  const centres = Array.from({ length: 1 + Math.floor(r() * 5) }, () => unitVector(r, dim));
  const out = new Float32Array(n * dim);
  for (let j = 0; j < n; j++) {
    const c = centres[Math.floor(r() * centres.length)];
    const v = Float64Array.from({ length: dim }, (_, d) => c[d] + (spread * gauss(r)) / Math.sqrt(dim));
    out.set(normalise(v), j * dim);
  }
  return out;
}

function unitQueries(r: () => number, n: number, dim: number): Float32Array {
  const out = new Float32Array(n * dim);
  for (let i = 0; i < n; i++) out.set(unitVector(r, dim), i * dim);
  return out;
}

function gather(keys: Float32Array, dim: number, idx: ArrayLike<number>): Float32Array {
  const out = new Float32Array(idx.length * dim);
  for (let t = 0; t < idx.length; t++) out.set(row(keys, idx[t], dim), t * dim);
  return out;
}

/** A library: every skill's keys concatenated, with offsets. Some skills may be empty. */
function library(r: () => number, nSkills: number, dim: number, maxKeys: number, emptyRate: number) {
  const banks: Float32Array[] = [];
  for (let s = 0; s < nSkills; s++) {
    const n = r() < emptyRate ? 0 : 1 + Math.floor(r() * maxKeys);
    banks.push(clusteredKeys(r, n, dim, 0.3 + r()));
  }
  return concat(banks, dim);
}

function concat(banks: Float32Array[], dim: number) {
  const offsets = new Int32Array(banks.length + 1);
  banks.forEach((b, s) => (offsets[s + 1] = offsets[s] + b.length / dim));
  const bank = new Float32Array(offsets[banks.length] * dim);
  banks.forEach((b, s) => bank.set(b, offsets[s] * dim));
  return { bank, offsets, banks };
}

const TOL = 1e-5;

// ---------------------------------------------------------------------------------------------
describe("farthest-first cover (Propositions 1 and 2)", () => {
  const r = rng(SEED);
  const cases: Array<[number, number, number]> = []; // [dim, n, eps]
  for (const dim of [2, 3, 8, 33, 64, 768])
    for (const eps of [0.05, 0.3, 0.6, 0.83, 1.2]) cases.push([dim, dim >= 768 ? 120 : 40 + Math.floor(r() * 260), eps]);

  it.each(cases)("dim %i, n %i, eps %f: a cover, separated, equal to the reference", (dim, n, eps) => {
    for (let trial = 0; trial < 4; trial++) {
      const keys = clusteredKeys(r, n, dim, 0.2 + 2 * r());
      const kept = coverFarthestFirst(keys, dim, eps);
      expect(kept).toBeInstanceOf(Int32Array);
      expect(kept[0]).toBe(0);
      expect(new Set(kept).size).toBe(kept.length);
      for (const j of kept) expect(j >= 0 && j < n).toBe(true);
      // Cover: every key within eps of a retained one (float64 check, float32 kernel: tolerance).
      for (let j = 0; j < n; j++) {
        let best = Infinity;
        for (const c of kept) best = Math.min(best, distance(row(keys, j, dim), row(keys, c, dim)));
        expect(best).toBeLessThanOrEqual(eps + TOL);
      }
      // Separation: each key was retained while the farthest distance exceeded eps, so retained
      // keys are pairwise > eps apart (the paper's ≥ eps), up to float32 rounding.
      for (let a = 0; a < kept.length; a++)
        for (let b = a + 1; b < kept.length; b++)
          expect(distance(row(keys, kept[a], dim), row(keys, kept[b], dim))).toBeGreaterThanOrEqual(eps - TOL);
      expectSameTraversal(keys, dim, eps, Array.from(kept), referenceCover(keys, dim, eps));

      // Proposition 1: eps lower, never higher, for unit queries.
      const cover = gather(keys, dim, kept);
      const queries = unitQueries(r, 20, dim);
      for (let i = 0; i < 20; i++) {
        const q = row(queries, i, dim);
        const full = referenceMaxSim(q, keys, dim).m;
        const compressed = referenceMaxSim(q, cover, dim).m;
        expect(compressed).toBeLessThanOrEqual(full);
        expect(compressed).toBeGreaterThanOrEqual(full - eps - TOL);
      }
    }
  });

  /**
   * The native traversal (float32 distances) must match the float64 one; where they part, it must
   * be at a near-tie the float32 rounding can flip: two candidates at almost the same distance,
   * or the farthest distance almost exactly eps.
   */
  function expectSameTraversal(keys: Float32Array, dim: number, eps: number, got: number[], want: number[]) {
    let t = 0;
    while (t < got.length && t < want.length && got[t] === want[t]) t++;
    if (t === got.length && t === want.length) return;
    const minDist = (j: number) => Math.min(...got.slice(0, t).map((c) => distance(row(keys, j, dim), row(keys, c, dim))));
    if (t < got.length && t < want.length) {
      expect(Math.abs(minDist(got[t]) - minDist(want[t]))).toBeLessThan(TOL);
    } else {
      const next = t < got.length ? got[t] : want[t];
      expect(Math.abs(minDist(next) - eps)).toBeLessThan(TOL);
    }
  }

  it("edge cases: no keys, one key, eps 0 (duplicates dropped), eps ≥ 2 (key 0 only)", () => {
    expect(Array.from(coverFarthestFirst(new Float32Array(0), 4, 0.5))).toEqual([]);
    expect(Array.from(coverFarthestFirst(new Float32Array([0, 1, 0]), 3, 0.5))).toEqual([0]);
    const keys = clusteredKeys(r, 30, 8, 1);
    const withDup = new Float32Array(31 * 8);
    withDup.set(keys);
    withDup.set(row(keys, 7, 8), 30 * 8);
    const all = coverFarthestFirst(withDup, 8, 0);
    expect(all.length).toBe(30);
    expect(Array.from(all)).not.toContain(30); // the duplicate of key 7 is within 0 of it
    expect(Array.from(coverFarthestFirst(keys, 8, 2))).toEqual([0]);
  });

  /** Exact covering and packing numbers by brute force over subsets (n ≤ 12). */
  function coveringNumber(keys: Float32Array, dim: number, eps: number): number {
    const n = keys.length / dim;
    let best = n;
    for (let mask = 1; mask < 1 << n; mask++) {
      const size = popcount(mask);
      if (size >= best) continue;
      let covers = true;
      for (let j = 0; j < n && covers; j++) {
        let ok = false;
        for (let c = 0; c < n && !ok; c++) if (mask & (1 << c) && distance(row(keys, j, dim), row(keys, c, dim)) <= eps) ok = true;
        covers = ok;
      }
      if (covers) best = size;
    }
    return best;
  }
  function packingNumber(keys: Float32Array, dim: number, eps: number): number {
    const n = keys.length / dim;
    let best = 1;
    for (let mask = 1; mask < 1 << n; mask++) {
      const size = popcount(mask);
      if (size <= best) continue;
      let separated = true;
      for (let a = 0; a < n && separated; a++)
        for (let b = a + 1; b < n && separated; b++)
          if (mask & (1 << a) && mask & (1 << b) && distance(row(keys, a, dim), row(keys, b, dim)) < eps) separated = false;
      if (separated) best = size;
    }
    return best;
  }
  const popcount = (x: number) => {
    let c = 0;
    for (; x; x &= x - 1) c++;
    return c;
  };

  it("Proposition 2: N_eps ≤ |C| ≤ P_eps (and P_2eps ≤ N_eps), exact numbers on small banks", () => {
    let checked = 0;
    for (let trial = 0; trial < 60; trial++) {
      const dim = 2 + (trial % 2);
      const n = 6 + Math.floor(r() * 7);
      const keys = clusteredKeys(r, n, dim, 0.5 + 2 * r());
      const eps = 0.2 + r();
      const size = coverFarthestFirst(keys, dim, eps).length;
      const N = coveringNumber(keys, dim, eps);
      const P = packingNumber(keys, dim, eps);
      expect(N).toBeLessThanOrEqual(size);
      expect(size).toBeLessThanOrEqual(P);
      expect(packingNumber(keys, dim, 2 * eps)).toBeLessThanOrEqual(N);
      checked++;
    }
    expect(checked).toBe(60);
  });
});

// ---------------------------------------------------------------------------------------------
describe("vote stability (appendix D corollary)", () => {
  const r = rng(SEED + 1);
  const cases: Array<[number, number, boolean]> = [];
  for (const eps of [0.1, 0.4, 0.83, 1.0]) for (const decayed of [false, true]) cases.push([eps, 12 + Math.floor(r() * 40), decayed]);

  it.each(cases)("eps %f, N %i, decayed weights %s: |g̃ − g| ≤ eps + (1/W) Σ_{B_x(s)} w_i", async (eps, nSkills, decayed) => {
    for (let trial = 0; trial < 3; trial++) {
      const dim = 16 + Math.floor(r() * 48);
      const { bank, offsets, banks } = library(r, nSkills, dim, 30, 0);
      const compressed = concat(
        banks.map((b) => gather(b, dim, coverFarthestFirst(b, dim, eps))),
        dim,
      );
      const nq = 5 + Math.floor(r() * 60);
      const queries = unitQueries(r, nq, dim);
      const weights = decayed ? decayWeights(nq, nq - 1 + Math.floor(r() * 100)) : new Float32Array(nq).fill(1);
      const k = voteK(nSkills);
      const full = await glance(queries, bank, offsets, dim, { weights, k });
      const comp = await glance(queries, compressed.bank, compressed.offsets, dim, { weights, k });
      const W = weights.reduce((a, b) => a + b, 0);
      for (let s = 0; s < nSkills; s++) {
        let boundaryWeight = 0;
        for (let i = 0; i < nq; i++) {
          const others = Array.from({ length: nSkills }, (_, t) => full.m[i * nSkills + t]).filter((_, t) => t !== s);
          others.sort((a, b) => b - a);
          const a = others.length >= k ? others[k - 1] : -Infinity; // no boundary when N − 1 < k
          // B_x(s), widened by the float32 tolerance so rounding cannot move a token out of it.
          if (Math.abs(full.m[i * nSkills + s] - a) <= eps + TOL) boundaryWeight += weights[i];
        }
        const diff = comp.g[s] - full.g[s];
        expect(Math.abs(diff)).toBeLessThanOrEqual(eps + boundaryWeight / W + TOL);
        if (boundaryWeight === 0) {
          expect(diff).toBeLessThanOrEqual(TOL);
          expect(diff).toBeGreaterThanOrEqual(-eps - TOL);
        }
      }
      // Proposition 1 per (token, skill) through the native kernel too.
      for (let c = 0; c < full.m.length; c++) {
        expect(comp.m[c]).toBeLessThanOrEqual(full.m[c] + TOL);
        expect(comp.m[c]).toBeGreaterThanOrEqual(full.m[c] - eps - TOL);
      }
    }
  });
});

// ---------------------------------------------------------------------------------------------
describe("native glance = float64 reference", () => {
  const r = rng(SEED + 2);
  const binding = loadBinding();
  const isas = kernelIsas(binding);
  restoreKernelIsaAfterEach();

  const Ns = [1, 2, 3, 4, 29, 30, 34, 35, 36, 99, 100, 101, 150];
  const cases: Array<[number, string]> = [];
  for (const N of Ns) for (const isa of isas) cases.push([N, isa]);

  it.each(cases)("N = %i on %s", async (N, isa) => {
    setKernelIsa(isa);
    expect(binding.kernelIsa()).toBe(isa);
    for (const decayed of [false, true]) {
      // Odd dims exercise the SIMD tails; 768 with many keys the threaded path.
      const dim = [7, 37, 64, 768][Math.floor(r() * 4)];
      const { bank, offsets } = library(r, N, dim, dim === 768 ? 12 : 9, 0.15);
      const nq = 1 + Math.floor(r() * 40);
      const queries = unitQueries(r, nq, dim);
      const weights = decayed ? decayWeights(nq, nq - 1 + Math.floor(r() * 200)) : new Float32Array(nq).fill(1);
      for (const k of [voteK(N), N + 1 + Math.floor(r() * 3), 1]) {
        const got = await glance(queries, bank, offsets, dim, { weights, k });
        const want = referenceGlance(queries, bank, offsets, dim, weights, k);
        expect(got.g.length).toBe(N);
        expect(got.m.length).toBe(nq * N);
        // argmax may differ only on a near-tie between the two keys
        expectMaxSimNearReference(got, want, queries, bank, offsets, dim, N, TOL);
        for (let c = 0; c < nq * N; c++) {
          if (offsets[(c % N) + 1] === offsets[c % N]) {
            expect(got.m[c]).toBe(-1);
            expect(got.argmax[c]).toBe(-1);
          }
        }
        // The vote on the kernel's own scores must match exactly (same ties, same values)…
        const voteOnNative = referenceVote(got.m, nq, N, weights, k);
        for (let s = 0; s < N; s++) expect(Math.abs(got.g[s] - voteOnNative[s])).toBeLessThanOrEqual(1e-6);
        // …and the float64 glance too, unless a top-k boundary is a near-tie float32 can flip.
        if (!hasNearTieAtBoundary(want.m, nq, N, k)) {
          for (let s = 0; s < N; s++) expect(Math.abs(got.g[s] - want.g[s])).toBeLessThanOrEqual(TOL);
        }
      }
    }
  });

  function hasNearTieAtBoundary(m: Float64Array, nq: number, N: number, k: number): boolean {
    if (k >= N) return false;
    for (let i = 0; i < nq; i++) {
      const sorted = Array.from(m.subarray(i * N, (i + 1) * N)).sort((a, b) => b - a);
      if (sorted[k - 1] - sorted[k] <= 2 * TOL) return true;
    }
    return false;
  }

  it("exact ties: identical skills go to the lower index", async () => {
    const dim = 24;
    const one = clusteredKeys(r, 5, dim, 1);
    const banks = Array.from({ length: 8 }, () => one);
    const { bank, offsets } = concat(banks, dim);
    const queries = unitQueries(r, 6, dim);
    const got = await glance(queries, bank, offsets, dim, { k: 3 });
    expect(Array.from(got.g.slice(3))).toEqual([0, 0, 0, 0, 0]);
    for (let s = 0; s < 3; s++) expect(got.g[s]).toBeCloseTo(got.g[0], 12);
    expect(referenceTopK([0.5, 0.7, 0.5, 0.7], 3)).toEqual([1, 3, 0]);
  });

  it("empty banks score −1 and still compete for the top-k", async () => {
    const dim = 8;
    const { bank, offsets } = concat([new Float32Array(0), clusteredKeys(r, 3, dim, 1), new Float32Array(0)], dim);
    const got = await glance(unitQueries(r, 2, dim), bank, offsets, dim, { k: 3 });
    expect(got.g[0]).toBeCloseTo(-1, 6);
    expect(got.g[2]).toBeCloseTo(-1, 6);
    const none = await glance(unitQueries(r, 2, dim), new Float32Array(0), new Int32Array([0, 0]), dim, { k: 1 });
    expect(Array.from(none.m)).toEqual([-1, -1]);
    expect(Array.from(none.argmax)).toEqual([-1, -1]);
  });
});

// ---------------------------------------------------------------------------------------------
describe("voteK and decayWeights", () => {
  it("k = min(10, max(3, round(N/10)))", () => {
    const table: Array<[number, number]> = [
      [0, 3], [1, 3], [2, 3], [3, 3], [4, 3], [29, 3], [30, 3], [34, 3], [35, 4], [36, 4], [45, 5], [94, 9], [95, 10],
      [99, 10], [100, 10], [101, 10], [150, 10], [30000, 10],
    ];
    for (const [N, k] of table) expect(voteK(N)).toBe(k);
  });
  it("a route's vote size: the paper's k at share 0, else max(k, round(s·N)) up to MAX_VOTE_K, on fresh random sizes", () => {
    const r = rng(SEED + 7);
    for (let i = 0; i < 500; i++) {
      const N = Math.floor(r() * (i % 2 ? 200 : 2_000_000));
      const s = i % 5 === 0 ? 0 : r() * (i % 3 ? 0.02 : 1);
      const paper = N < 35 ? 3 : N >= 95 ? 10 : Math.round(N / 10);
      const want = s === 0 ? paper : Math.min(1024, Math.max(paper, Math.floor(s * N + 0.5)));
      expect(routeVoteK(N, s), `N ${N}, s ${s}`).toBe(want);
    }
    expect(routeVoteK(30593, 0.01)).toBe(306);
    expect(routeVoteK(3000, 0.01)).toBe(30);
    expect(routeVoteK(500, 0.01)).toBe(10);
    expect(MAX_VOTE_K).toBe(1024);
    for (const bad of [-0.1, 1.5, Number.NaN, "0.1" as unknown as number]) expect(() => routeVoteK(100, bad)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
  });
  it("w_i = 2^(−a_i/64)", () => {
    const w = decayWeights(130);
    expect(w[129]).toBe(1);
    expect(w[129 - 64]).toBeCloseTo(0.5, 7);
    expect(w[1]).toBeCloseTo(0.25, 7);
    const later = decayWeights(10, 73);
    expect(later[9]).toBeCloseTo(2 ** (-64 / 64), 7);
  });
  it("every weight in (0, 1]: float32's rounding of 2^(−a/64) while it is positive, 2^−149 past that", () => {
    // ages 0 … 9599 back from the decision point: 2^(−a/64) rounds to a positive float32 up to 9535
    const w = decayWeights(9600);
    for (let a = 0; a < 9600; a++) {
      const exact = Math.fround(2 ** (-a / 64));
      expect(w[9599 - a], `age ${a}`).toBe(exact > 0 ? exact : 2 ** -149);
    }
    // a span read long before its decision point still weighs something, uniformly, and glances
    const far = decayWeights(3, 100_000);
    expect(Array.from(far)).toEqual([2 ** -149, 2 ** -149, 2 ** -149]);
    expect(Array.from(decayWeights(1, 10_000))).toEqual([2 ** -149]);
  });
  it("a glance over weights of a far decision point votes as a uniform glance does", async () => {
    const q = new Float32Array([1, 0, 0, 1, 0.6, 0.8]);
    const bank = new Float32Array([1, 0, 0, 1, 0.8, 0.6]);
    const off = new Int32Array([0, 1, 2, 3]);
    const far = await glance(q, bank, off, 2, { weights: decayWeights(3, 50_000), k: 1 });
    const uniform = await glance(q, bank, off, 2, { k: 1 });
    expect(Array.from(far.g)).toEqual(Array.from(uniform.g));
  });
});

// ---------------------------------------------------------------------------------------------
describe("bad inputs reject with INVALID_ARGUMENT and never crash", () => {
  const binding = loadBinding();
  const dim = 4;
  const q = new Float32Array([1, 0, 0, 0]);
  const bank = new Float32Array([1, 0, 0, 0, 0, 1, 0, 0]);
  const off = new Int32Array([0, 1, 2]);
  const w = new Float32Array([1]);

  const expectInvalidSync = (fn: () => unknown) => expectCodeSync(fn, "INVALID_ARGUMENT");
  const expectInvalid = async (fn: () => unknown) => expectGavelError(await caught(fn), "INVALID_ARGUMENT");

  const badGlance: Array<[string, unknown[]]> = [
    ["queries as number[]", [[1, 0, 0, 0], bank, off, dim, w, 1]],
    ["queries as Float64Array", [new Float64Array(4), bank, off, dim, w, 1]],
    ["bank as Int32Array", [q, new Int32Array(8), off, dim, w, 1]],
    ["offsets as Uint32Array", [q, bank, new Uint32Array([0, 1, 2]), dim, w, 1]],
    ["offsets as number[]", [q, bank, [0, 1, 2], dim, w, 1]],
    ["weights as null", [q, bank, off, dim, null, 1]],
    ["NaN dim", [q, bank, off, NaN, w, 1]],
    ["zero dim", [q, bank, off, 0, w, 1]],
    ["fractional dim", [q, bank, off, 1.5, w, 1]],
    ["string dim", [q, bank, off, "4", w, 1]],
    ["huge dim", [q, bank, off, 2 ** 40, w, 1]],
    ["queries not a multiple of dim", [new Float32Array(5), bank, off, dim, w, 1]],
    ["no query tokens", [new Float32Array(0), bank, off, dim, new Float32Array(0), 1]],
    ["bank not a multiple of dim", [q, new Float32Array(7), off, dim, w, 1]],
    ["empty offsets", [q, bank, new Int32Array(0), dim, w, 1]],
    ["offsets[0] ≠ 0", [q, bank, new Int32Array([1, 1, 2]), dim, w, 1]],
    ["offsets decreasing", [q, bank, new Int32Array([0, 2, 1, 2]), dim, w, 1]],
    ["offsets last ≠ rows", [q, bank, new Int32Array([0, 1, 3]), dim, w, 1]],
    ["offsets negative", [q, bank, new Int32Array([0, -5, 2]), dim, w, 1]],
    ["weights too short", [new Float32Array(8).fill(0.5), bank, off, dim, w, 1]],
    ["negative weight", [q, bank, off, dim, new Float32Array([-1]), 1]],
    ["NaN weight", [q, bank, off, dim, new Float32Array([NaN]), 1]],
    ["Infinity weight", [q, bank, off, dim, new Float32Array([Infinity]), 1]],
    ["zero weights", [q, bank, off, dim, new Float32Array([0]), 1]],
    ["k = 0", [q, bank, off, dim, w, 0]],
    ["k = −1", [q, bank, off, dim, w, -1]],
    ["k NaN", [q, bank, off, dim, w, NaN]],
    ["k fractional", [q, bank, off, dim, w, 2.5]],
    ["k Infinity", [q, bank, off, dim, w, Infinity]],
    ["NaN query", [new Float32Array([NaN, 0, 0, 0]), bank, off, dim, w, 1]],
    ["Infinity query", [new Float32Array([Infinity, 0, 0, 0]), bank, off, dim, w, 1]],
    ["NaN in bank", [q, new Float32Array([1, 0, 0, 0, 0, NaN, 0, 0]), off, dim, w, 1]],
    ["Infinity in bank", [q, new Float32Array([1, 0, 0, 0, 0, 0, -Infinity, 0]), off, dim, w, 1]],
  ];

  it.each(badGlance)("native glance: %s", async (_name, args) => {
    await expectInvalid(() => (binding.glance as (...a: unknown[]) => unknown)(...args));
  });

  it.each(badGlance)("glance wrapper: %s", async (_name, args) => {
    const [qq, bb, oo, dd, ww, kk] = args;
    await expectInvalid(() =>
      (glance as (...a: unknown[]) => unknown)(qq, bb, oo, dd, { weights: ww, k: kk }),
    );
  });

  it("native glance with too few arguments", async () => {
    await expectInvalid(() => (binding.glance as (...a: unknown[]) => unknown)(q, bank, off, dim, w));
    await expectInvalid(() => (binding.glance as (...a: unknown[]) => unknown)());
  });

  const badCover: Array<[string, unknown[]]> = [
    ["keys as number[]", [[1, 0, 0, 0], dim, 0.5]],
    ["keys undefined", [undefined, dim, 0.5]],
    ["NaN dim", [bank, NaN, 0.5]],
    ["negative dim", [bank, -4, 0.5]],
    ["dim as string", [bank, "4", 0.5]],
    ["length not a multiple of dim", [bank, 3, 0.5]],
    ["NaN eps", [bank, dim, NaN]],
    ["negative eps", [bank, dim, -0.1]],
    ["Infinity eps", [bank, dim, Infinity]],
    ["eps as string", [bank, dim, "0.5"]],
    ["NaN key", [new Float32Array([1, 0, NaN, 0]), dim, 0.5]],
  ];
  it.each(badCover)("coverFarthestFirst: %s", (_name, args) => {
    expectInvalidSync(() => (binding.coverFarthestFirst as (...a: unknown[]) => unknown)(...args));
    expectInvalidSync(() => (coverFarthestFirst as (...a: unknown[]) => unknown)(...args));
  });

  it("glance refuses options that are not an object or hold an unknown key", async () => {
    await expectInvalid(() => (glance as (...a: unknown[]) => unknown)(q, bank, off, dim, null));
    await expectInvalid(() => (glance as (...a: unknown[]) => unknown)(q, bank, off, dim, "k"));
    await expectInvalid(() => (glance as (...a: unknown[]) => unknown)(q, bank, off, dim, [1]));
    const err = await caught(() => (glance as (...a: unknown[]) => unknown)(q, bank, off, dim, { topk: 1 }));
    expectGavelError(err, "INVALID_ARGUMENT", /unknown option "topk" in glance options/);
    // a rejection, never a synchronous throw
    const p = (glance as (...a: unknown[]) => Promise<unknown>)(q, bank, off, dim, null);
    expect(p).toBeInstanceOf(Promise);
    await p.catch(() => undefined);
  });

  it("voteK / decayWeights reject bad sizes", () => {
    expectInvalidSync(() => voteK(-1));
    expectInvalidSync(() => voteK(2.5));
    expectInvalidSync(() => decayWeights(0));
    expectInvalidSync(() => decayWeights(10, 5));
    expectInvalidSync(() => decayWeights(NaN));
  });

  it("the process is still fine afterwards", async () => {
    const res = await glance(q, bank, off, dim, { k: 1 });
    expect(Array.from(res.g)).toEqual([1, 0]);
  });
});
