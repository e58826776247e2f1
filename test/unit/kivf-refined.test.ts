/**
 * The key IVF's refined scores (native/src/kivf/kivf_i8.h): a key that passes the int8 bound is scored
 * again from its int8 code and its residual's 4-bit code against the float32 row, and the float32 scan
 * reads it only if that score plus the refined bound reaches the row's floor. The bound must hold for
 * every pair, against a float64 product and against the f32 glance's own score of the pair, on every
 * instruction set the CPU has; and it must be far tighter than the int8 bound it follows (else it
 * would skip nothing).
 *
 * Inputs are fresh random draws each run; the seed is logged (replay with GAVEL_TEST_SEED).
 */
import { describe, expect, it } from "vitest";
import { loadBinding } from "../../src/native/binding.js";
import { kernelIsas, restoreKernelIsaAfterEach, setKernelIsa } from "../helpers/isa.js";
import { freshSeed, gauss, rng } from "../helpers/random.js";

const SEED = freshSeed();
console.log(`kivf-refined.test.ts seed: ${SEED} (replay with GAVEL_TEST_SEED=${SEED})`);

const b = loadBinding();
const ISAS = kernelIsas(b);
restoreKernelIsaAfterEach();

type Shape = "unit" | "clustered" | "spiky" | "scaled" | "sparse";
/** n rows of dim: unit gaussian directions; clustered near one direction (near-ties); spiky (one
 * coordinate 30× the rest, the int8 scale's worst case); scaled (norms from 1e-3 to 1e3); sparse (most
 * coordinates 0). */
function draw(r: () => number, n: number, dim: number, shape: Shape, center: Float32Array): Float32Array {
  const v = new Float32Array(n * dim);
  for (let i = 0; i < n; i++) {
    let ss = 0;
    for (let d = 0; d < dim; d++) {
      let x = gauss(r);
      if (shape === "clustered") x = 6 * center[d] + x;
      if (shape === "sparse" && r() < 0.8) x = 0;
      v[i * dim + d] = x;
      ss += x * x;
    }
    if (shape === "spiky") v[i * dim + Math.floor(r() * dim)] += 30 * Math.sqrt(ss / dim);
    let s2 = 0;
    for (let d = 0; d < dim; d++) s2 += v[i * dim + d] ** 2;
    const scale = (shape === "scaled" ? 10 ** (6 * r() - 3) : 1) / Math.sqrt(s2 || 1);
    for (let d = 0; d < dim; d++) v[i * dim + d] *= scale;
  }
  return v;
}

describe("kivfRefined: the refined bound", () => {
  let seed = SEED;
  const shapes: Shape[] = ["unit", "clustered", "spiky", "scaled", "sparse"];
  for (const isa of ISAS)
    for (const dim of [7, 64, 256])
      it(`${isa}, dim ${dim}: |fl32(q·k) − R| and |q·k − R| within the bound, every shape`, async () => {
        setKernelIsa(isa);
        for (const shape of shapes) {
          const r = rng(seed++);
          const center = new Float32Array(dim).map(() => gauss(r));
          const n = 200 + Math.floor(r() * 100), nr = 9;
          const keys = draw(r, n, dim, shape, center), rows = draw(r, nr, dim, shape, center);
          const out = b.kivfRefined(keys, dim, rows);
          expect(out.refined.length).toBe(nr * n);
          // the f32 glance's score of each pair: every key its own skill, so m is that key's product
          const offsets = Int32Array.from({ length: n + 1 }, (_, i) => i);
          const m32 = (await b.glance(rows, keys, offsets, dim, new Float32Array(nr).fill(1), 1)).m;
          let bad = 0, worst = 0;
          for (let i = 0; i < nr; i++)
            for (let j = 0; j < n; j++) {
              let dot = 0;
              for (let d = 0; d < dim; d++) dot += rows[i * dim + d] * keys[j * dim + d];
              const R = out.refined[i * n + j];
              if (!(Math.abs(R - dot) <= out.bound[i]) || !(Math.abs(R - m32[i * n + j]) <= out.bound[i])) bad++;
              worst = Math.max(worst, Math.abs(R - dot) / out.bound[i]);
            }
          expect(bad, `${shape}: pairs outside the bound (worst ${worst.toFixed(3)} of it)`).toBe(0);
          for (let i = 0; i < nr; i++) {
            expect(out.bound[i]).toBeGreaterThanOrEqual(0);
            // 4 more bits of the key, and the row's own rounding gone: far tighter than the int8 bound
            if (dim >= 64) expect(out.bound[i], shape).toBeLessThan(out.int8Bound[i] / 4);
          }
        }
      });

  // The int8 kernel takes a list's rows in passes of up to 16 (fewer tiles a step as rows grow), so
  // every row count from 1 to past two passes, and list lengths off whole tiles and tile steps.
  for (const isa of ISAS)
    it(`${isa}: the int8 scores of 1 to 40 rows against a list equal the plain loops' bit for bit`, () => {
      setKernelIsa(isa);
      const dim = 256;
      for (const nr of [...Array.from({ length: 20 }, (_, i) => i + 1), 23, 31, 32, 33, 40]) {
        const r = rng(seed++);
        const center = new Float32Array(dim).map(() => gauss(r));
        const n = 1 + Math.floor(r() * 200);
        const shape: Shape = (["unit", "clustered", "spiky", "scaled", "sparse"] as const)[nr % 5];
        const out = b.kivfRefined(draw(r, n, dim, shape, center), dim, draw(r, nr, dim, shape, center));
        expect(out.scores8.length).toBe(nr * n);
        let differ = 0;
        for (let i = 0; i < nr * n; i++) if (!Object.is(out.scores8[i], out.scores8Plain[i])) differ++;
        expect(differ, `${nr} rows × ${n} keys (${shape}, ${out.isa})`).toBe(0);
        expect(out.scores8.some((x) => x !== 0)).toBe(true);
      }
    });

  it("refuses what it cannot code: non-finite values, a wrong length, too many keys", () => {
    const dim = 8;
    const ok = new Float32Array(dim * 3).fill(0.5);
    const bad = ok.slice();
    bad[5] = NaN;
    expect(() => b.kivfRefined(bad, dim, ok)).toThrow(/finite/);
    expect(() => b.kivfRefined(ok, dim, ok.subarray(1))).toThrow(/multiple of dim/);
    expect(() => b.kivfRefined(new Float32Array(4097 * dim), dim, ok)).toThrow(/4,096 keys/);
  });
});
