/**
 * How a key IVF row picks its probed lists (native/src/kivf/kivf_core.h, SelectBest): the n best
 * centroid scores by (value desc, index asc), listed as those above the n-th best value in index
 * order, then those at it. The native selection first takes a threshold from a sample (runs of 8
 * values every nc/64) and selects among the values above it, falling back to every value when too
 * few reach it; whichever path runs, and on every instruction set (the counts and the compaction are
 * the ISA's), the result must equal a plain sort's, value ties included. Fresh random inputs each
 * run, shaped to reach both paths (smooth scores, heavy ties, a sample that overshoots θ) and the
 * float order's edges (both zeros, subnormals, the whole range, either sign); the seed is logged
 * (replay with GAVEL_TEST_SEED).
 */
import { describe, expect, it } from "vitest";
import { loadBinding } from "../../src/native/binding.js";
import { kernelIsas, restoreKernelIsaAfterEach, setKernelIsa } from "../helpers/isa.js";
import { freshSeed, gauss, rng } from "../helpers/random.js";

const SEED = freshSeed();
console.log(`kivf-select.test.ts seed: ${SEED} (replay with GAVEL_TEST_SEED=${SEED})`);

const b = loadBinding();
const ISAS = kernelIsas(b);
restoreKernelIsaAfterEach();

/**
 * The plain reference: every index sorted by (value desc, index asc), the first n; listed as the
 * native selection lists them, those above the n-th best value θ in index order, then those at θ.
 */
function reference(values: Float32Array, n: number): number[] {
  const best = Array.from(values.keys()).sort((x, y) => values[y] - values[x] || x - y).slice(0, n);
  const theta = values[best[n - 1]];
  const byIndex = best.sort((x, y) => x - y);
  return [...byIndex.filter((c) => values[c] > theta), ...byIndex.filter((c) => values[c] === theta)];
}

type Shape = "gauss" | "ties" | "steps" | "spike" | "aliased" | "signs" | "wide";
/** nc values: gaussian; a few distinct values (ties across θ); sorted steps; a few large values among
 * many equal small ones (the sample misses most); large values exactly where the sample looks (its threshold overshoots θ when n exceeds them: the fallback). */
function draw(r: () => number, nc: number, shape: Shape): Float32Array {
  const v = new Float32Array(nc);
  for (let c = 0; c < nc; c++) {
    if (shape === "gauss") v[c] = gauss(r);
    else if (shape === "ties") v[c] = Math.floor(r() * 5) / 4;
    else if (shape === "steps") v[c] = Math.floor((c / nc) * 16) + 0.01 * gauss(r);
    else if (shape === "spike") v[c] = r() < 0.01 ? 10 + gauss(r) : 0;
    else if (shape === "aliased") v[c] = c % Math.max(1, Math.floor(nc / 64)) < 8 ? 1 + r() : 0.5 * r();
    // both zeros (equal as floats: index order decides), negatives and subnormals around them
    else if (shape === "signs") v[c] = [0, -0, 1e-40, -1e-40, -1, 1, -2.5][Math.floor(r() * 7)] * (r() < 0.5 ? 1 : 1 + r());
    // magnitudes over the whole float range, either sign
    else v[c] = (r() < 0.5 ? -1 : 1) * Math.fround(10 ** (76 * r() - 38));
  }
  return v;
}

describe("kivfSelectBest: a row's probed lists", () => {
  for (const isa of ISAS)
    it(`${isa}: equals a plain sort's n best (value desc, index asc), sampled path and fallback alike`, () => {
      setKernelIsa(isa);
      const r = rng(SEED);
      let cases = 0;
      for (const shape of ["gauss", "ties", "steps", "spike", "aliased", "signs", "wide"] as const) {
        for (let t = 0; t < 12; t++) {
          // sizes on both sides of the sampled path's bounds (nc ≥ 512, n ≤ nc / 4)
          const nc = [1, 7, 17, 511, 512, 1000, 4096, 8195, 20000][Math.floor(r() * 9)];
          const values = draw(r, nc, shape);
          for (const n of new Set([1, Math.max(1, Math.floor(nc / 64)), Math.max(1, Math.floor(nc / 4)), Math.floor(nc / 4) + 1, 1 + Math.floor(r() * nc), nc])) {
            if (n < 1 || n > nc) continue;
            expect(Array.from(b.kivfSelectBest(values, n))).toEqual(reference(values, n));
            cases++;
          }
        }
      }
      expect(cases).toBeGreaterThan(100);
    });

  it("refuses bad arguments", () => {
    expect(() => b.kivfSelectBest(new Float32Array([1, 2, 3]), 0)).toThrow();
    expect(() => b.kivfSelectBest(new Float32Array([1, 2, 3]), 4)).toThrow();
    expect(() => b.kivfSelectBest(new Float32Array([1, NaN, 3]), 1)).toThrow(/finite/);
    expect(() => b.kivfSelectBest(new Float32Array(0), 1)).toThrow();
  });
});
