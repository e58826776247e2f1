/**
 * The scorer's log-normaliser kernel (kernels::LogSumExp: a vectorised exp, float lanes summed into
 * double by blocks) against a float64 logsumexp of the same float32 rows, on every instruction set
 * this CPU has, over row lengths that exercise the vector tails and vocabulary sizes, and logit
 * spreads from flat to one dominant entry (terms below e^-87 are clamped, see simd_body.inc).
 * Fresh random rows every run; the seed is logged (replay with GAVEL_TEST_SEED).
 */
import { describe, expect, it } from "vitest";
import { GavelError } from "../../src/errors.js";
import { loadBinding } from "../../src/native/binding.js";
import { kernelIsas, restoreKernelIsaAfterEach, setKernelIsa } from "../helpers/isa.js";
import { freshSeed, gauss, rng } from "../helpers/random.js";

const SEED = freshSeed();
console.log(`logsumexp.test.ts seed: ${SEED} (replay with GAVEL_TEST_SEED=${SEED})`);

/** ≤ 1e-6 relative error of the sum (16 terms ≤ 1 per float lane a block) moves the log by ≤ 1e-6. */
const TOL = 2e-6;

function reference(row: Float32Array): number {
  let mx = -Infinity;
  for (const v of row) mx = Math.max(mx, v);
  let s = 0;
  for (const v of row) s += Math.exp(v - mx);
  return mx + Math.log(s);
}

describe("logSumExp = float64 logsumexp", () => {
  const binding = loadBinding();
  const isas = kernelIsas(binding);
  restoreKernelIsaAfterEach();
  const r = rng(SEED);
  const lengths = [1, 3, 4, 7, 8, 15, 16, 17, 31, 33, 255, 257, 513, 32000, 151936];
  const spreads: Array<[string, (i: number, n: number) => number]> = [
    ["flat", () => 0.25 * gauss(r)],
    ["logit-like", () => 3 * gauss(r) - 2],
    ["wide", () => 40 * gauss(r)],
    ["one dominant", (i) => (i === 0 ? 90 : -90 + gauss(r))],
    ["very negative", () => -1e4 + 5 * gauss(r)],
  ];

  it.each(isas)("on %s", (isa) => {
    setKernelIsa(isa);
    expect(binding.kernelIsa()).toBe(isa);
    let worst = 0;
    for (const n of lengths) {
      for (const [name, draw] of spreads) {
        const rows = 1 + Math.floor(r() * 3);
        const data = new Float32Array(rows * n);
        for (let k = 0; k < rows; k++) {
          for (let i = 0; i < n; i++) data[k * n + i] = draw(i, n);
          // the maximum anywhere in the row, not only in the first vector
          if (n > 1 && name === "one dominant") {
            const j = Math.floor(r() * n);
            [data[k * n], data[k * n + j]] = [data[k * n + j], data[k * n]];
          }
        }
        const got = binding.logSumExp(data, n);
        expect(got.length).toBe(rows);
        for (let k = 0; k < rows; k++) {
          const want = reference(data.subarray(k * n, (k + 1) * n));
          const d = Math.abs(got[k] - want);
          worst = Math.max(worst, d);
          expect(d, `n ${n}, ${name}, row ${k}: got ${got[k]}, want ${want}`).toBeLessThanOrEqual(TOL);
        }
      }
    }
    console.log(`logSumExp on ${isa}: largest |error| ${worst.toExponential(2)} nats`);
  });

  it("rejects rows that do not divide into n, and non-finite logits", () => {
    const code = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        expect(e).toBeInstanceOf(GavelError);
        return (e as GavelError).code;
      }
      return "no error";
    };
    expect(code(() => binding.logSumExp(new Float32Array(5), 2))).toBe("INVALID_ARGUMENT");
    expect(code(() => binding.logSumExp(new Float32Array(4), 0))).toBe("INVALID_ARGUMENT");
    expect(code(() => binding.logSumExp(Float32Array.of(0, Number.NaN), 2))).toBe("INVALID_ARGUMENT");
    expect(code(() => binding.logSumExp(Float32Array.of(0, Number.POSITIVE_INFINITY), 2))).toBe("INVALID_ARGUMENT");
  });
});
