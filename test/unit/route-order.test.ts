/**
 * The route's two orderings of a whole library against the comparator sorts they replace: the
 * glance's ranking (`orderByG`: g best first, ties by the lower column) and the re-ranker's lexical
 * leaders (`topK`: the k largest, ties by the lower index). Fresh random inputs every run, with ties,
 * −0 and the sizes of a real library; the seed is logged (replay with GAVEL_TEST_SEED=<seed>).
 */
import { describe, expect, it } from "vitest";
import { orderByG } from "../../src/route/glance.js";
import { topK } from "../../src/route/rerank.js";
import { freshSeed, gauss, rng } from "../helpers/random.js";

const SEED = freshSeed();
console.log(`route-order.test.ts seed: ${SEED} (replay with GAVEL_TEST_SEED=${SEED})`);

/** The plain reference: every index sorted by the comparator, then the first k. */
function reference(n: number, k: number, v: (i: number) => number): number[] {
  const idx = Array.from({ length: n }, (_, i) => i);
  idx.sort((a, b) => v(b) - v(a) || a - b);
  return idx.slice(0, k);
}

/** n float32 values: Gaussian, or drawn from a few levels (many ties), with zeros of both signs. */
function values(r: () => number, n: number, levels: number): Float32Array {
  const g = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const x = levels > 0 ? Math.floor(r() * levels) - levels / 2 : gauss(r) * 3;
    g[i] = x === 0 && r() < 0.5 ? -0 : x;
  }
  return g;
}

describe("orderByG: the glance's ranking", () => {
  it("equals the comparator sort on fresh random g, ties and −0 included", () => {
    const r = rng(SEED);
    for (const n of [0, 1, 2, 17, 1000, 30_593]) {
      for (const levels of [0, 3, 40]) {
        const g = values(r, n, levels);
        const got = Array.from(orderByG(g));
        expect(got, `n ${n}, levels ${levels}`).toEqual(reference(n, n, (i) => g[i]));
      }
    }
  });

  it("keeps extreme and subnormal float32 values in order", () => {
    const g = new Float32Array([3.4e38, -3.4e38, 1e-45, -1e-45, 0, -0, Infinity, -Infinity, 1, -1, 1e-45]);
    expect(Array.from(orderByG(g))).toEqual(reference(g.length, g.length, (i) => g[i]));
  });
});

describe("topK: the re-ranker's lexical leaders", () => {
  it("equals the first k of the comparator sort on fresh random values", () => {
    const r = rng(SEED ^ 0x5bd1e995);
    for (const n of [0, 1, 5, 40, 30_593]) {
      for (const levels of [0, 2, 25]) {
        const v = Array.from(values(r, n, levels), (x) => (r() < 0.3 ? x * 1.5 : x));
        for (const k of [0, 1, 3, 20, n, n + 5]) {
          expect(topK(n, k, (i) => v[i]), `n ${n}, levels ${levels}, k ${k}`).toEqual(reference(n, k, (i) => v[i]));
        }
      }
    }
  });

  it("falls back to the comparator's order when a value is not finite", () => {
    const v = [1, NaN, 3, Infinity, 2, -Infinity, 3];
    for (const k of [1, 3, 7]) expect(topK(v.length, k, (i) => v[i])).toEqual(reference(v.length, k, (i) => v[i]));
  });
});
