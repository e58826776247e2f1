/**
 * The key IVF's centroid scores (native/src/kivf/kivf_core.h, CentroidScores): every task row against
 * every centroid, the scores that pick each row's probed lists and bound every list. They are written
 * straight into the glance's score buffer from queries packed once, and must equal the addon's GEMM
 * (kernels::MatMulABt, what the glance used before) bit for bit, so a glance picks the same lists, and
 * lie within float32 rounding of a float64 product, on every instruction set the CPU has.
 *
 * Shapes straddle the micro-tile's edges (rows not a multiple of 6 or 12, centroids not a multiple
 * of the 8-32 panel width nor of the 128-centroid block, dims not a multiple of the k-block); inputs
 * are fresh random draws each run, the seed logged (replay with GAVEL_TEST_SEED).
 */
import { describe, expect, it } from "vitest";
import { loadBinding } from "../../src/native/binding.js";
import { kernelIsas, restoreKernelIsaAfterEach, setKernelIsa } from "../helpers/isa.js";
import { freshSeed, gauss, rng } from "../helpers/random.js";

const SEED = freshSeed();
console.log(`kivf-centroid-scores.test.ts seed: ${SEED} (replay with GAVEL_TEST_SEED=${SEED})`);

const b = loadBinding();
const ISAS = kernelIsas(b);
restoreKernelIsaAfterEach();

function draw(r: () => number, n: number, dim: number, scale: number): Float32Array {
  const v = new Float32Array(n * dim);
  for (let i = 0; i < v.length; i++) v[i] = scale * gauss(r);
  return v;
}

describe("kivfCentroidScores: the glance's centroid scores", () => {
  let seed = SEED;
  for (const isa of ISAS)
    it(`${isa}: equal to the GEMM bit for bit, within rounding of a float64 product`, () => {
      setKernelIsa(isa);
      let cases = 0;
      for (const [nq, nc, dim] of [
        [1, 1, 1],
        [5, 31, 7],
        [13, 129, 64],
        [25, 300, 130],
        [12, 257, 256],
        [37, 200, 300],
      ]) {
        const r = rng(seed++);
        const scale = 10 ** (2 * r() - 1);
        const q = draw(r, nq, dim, scale), c = draw(r, nc, dim, 1);
        const out = b.kivfCentroidScores(q, c, dim);
        expect(out.isa).toBe(isa);
        expect(out.scores.length).toBe(nq * nc);
        // bit for bit (Object.is tells -0 from +0 and would flag a NaN left unwritten)
        for (let i = 0; i < nq * nc; i++) if (!Object.is(out.scores[i], out.gemm[i])) expect([i, out.scores[i]]).toEqual([i, out.gemm[i]]);
        for (let i = 0; i < nq; i++)
          for (let j = 0; j < nc; j++) {
            let dot = 0, abs = 0;
            for (let d = 0; d < dim; d++) {
              dot += q[i * dim + d] * c[j * dim + d];
              abs += Math.abs(q[i * dim + d] * c[j * dim + d]);
            }
            // a float32 FMA chain's error: at most dim · 2⁻²³ · Σ|q_d c_d| (the bound the glance uses)
            expect(Math.abs(out.scores[i * nc + j] - dot)).toBeLessThanOrEqual(dim * 2 ** -23 * abs + 1e-30);
          }
        cases++;
      }
      expect(cases).toBe(6);
    });

  it("rejects what the glance would never pass: non-finite input, ragged rows", () => {
    expect(() => b.kivfCentroidScores(new Float32Array([NaN, 0]), new Float32Array(2), 2)).toThrow(/finite/);
    expect(() => b.kivfCentroidScores(new Float32Array(3), new Float32Array(4), 2)).toThrow(/multiple|dim/);
  });
});
