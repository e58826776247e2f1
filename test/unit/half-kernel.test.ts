/**
 * The native f16 conversions of the states cache (kernels::RoundToHalf, HalfToFloats: F16C on the
 * AVX2 and AVX-512 levels, the scalar rule on the generic one) against the package's reference in
 * src/util/half.ts, on every instruction set this CPU has: bit for bit for every non-NaN float32
 * (fresh random bit patterns plus the edges: zeros, subnormals, ties, the overflow boundary, Inf),
 * and every one of the 65,536 f16 patterns back to float32; and the device glance's checked
 * conversion (floatsToHalf), which stops at the first value outside f16. Lengths exercise the 8-wide vector body
 * and its scalar tail. The seed is logged (replay with GAVEL_TEST_SEED).
 */
import { randomInt } from "node:crypto";
import { describe, expect, it } from "vitest";
import { GavelError } from "../../src/errors.js";
import { loadBinding } from "../../src/native/binding.js";
import { floatToHalf, halfToFloat } from "../../src/util/half.js";
import { kernelIsas, restoreKernelIsaAfterEach, setKernelIsa } from "../helpers/isa.js";
import { rng } from "../helpers/random.js";

const SEED = process.env.GAVEL_TEST_SEED ? Number(process.env.GAVEL_TEST_SEED) : randomInt(2 ** 31);
console.log(`half-kernel.test.ts seed: ${SEED} (replay with GAVEL_TEST_SEED=${SEED})`);

/** Float32 bit patterns: random everywhere, random in the f16 ranges, and the edge cases. */
function inputs(r: () => number, n: number): Float32Array {
  const bits = new Uint32Array(n);
  const edges = [
    0x00000000, 0x80000000, // ±0
    0x33000000, 0x33000001, 0x337fffff, 0x33800000, // around half the smallest f16 subnormal
    0x387fc000, 0x387fe000, 0x387ff000, 0x38800000, // the subnormal/normal boundary of f16
    0x3f800000, 0x3f801000, 0x3f802000, 0x3f803000, // 1 and the ties just above it
    0x477fe000, 0x477fefff, 0x477ff000, 0x477ff001, // around 65520: the last finite f16 and overflow
    0x7f7fffff, 0x7f800000, 0xff800000, // max float, ±Inf
  ];
  for (let i = 0; i < n; i++) {
    const pick = r();
    if (i < edges.length) bits[i] = edges[i] >>> 0;
    else if (pick < 0.3) bits[i] = Math.floor(r() * 2 ** 32) >>> 0; // anything, NaNs included
    else if (pick < 0.6) bits[i] = ((r() < 0.5 ? 0x80000000 : 0) | (0x33000000 + Math.floor(r() * (0x47800000 - 0x33000000)))) >>> 0; // f16's range
    else bits[i] = ((r() < 0.5 ? 0x80000000 : 0) | (0x38800000 + Math.floor(r() * 0x0f000000))) >>> 0; // normal f16s
  }
  return new Float32Array(bits.buffer);
}

describe("native f16 conversions = util/half.ts", () => {
  const binding = loadBinding();
  const isas = kernelIsas(binding);
  restoreKernelIsaAfterEach();
  const r = rng(SEED);

  for (const isa of isas) {
    it(`roundToHalf on ${isa}: the reference's bits and values for every non-NaN input, NaN stays NaN`, () => {
      setKernelIsa(isa);
      for (const n of [1, 7, 8, 9, 23, 4096 + 5]) {
        const x = inputs(r, n);
        const want = floatToHalf(x);
        const wantValues = halfToFloat(want);
        const got = x.slice();
        const half = new Uint16Array(n);
        binding.roundToHalf(got, half);
        for (let i = 0; i < n; i++) {
          if (Number.isNaN(x[i])) {
            expect((half[i] & 0x7c00) === 0x7c00 && (half[i] & 0x3ff) !== 0, `NaN at ${i} (n ${n})`).toBe(true);
            expect(Number.isNaN(got[i])).toBe(true);
          } else {
            expect(half[i], `bits at ${i} (n ${n}, input bits 0x${new Uint32Array(x.buffer)[i].toString(16)})`).toBe(want[i]);
            expect(Object.is(got[i], wantValues[i]), `value at ${i} (n ${n})`).toBe(true);
          }
        }
      }
    });

    it(`halfToFloat on ${isa}: every f16 pattern, exactly`, () => {
      setKernelIsa(isa);
      const all = new Uint16Array(65536).map((_, i) => i);
      const want = halfToFloat(all);
      const got = new Float32Array(all.length);
      binding.halfToFloat(all, got);
      for (let i = 0; i < all.length; i++) {
        if (Number.isNaN(want[i])) expect(Number.isNaN(got[i])).toBe(true);
        else expect(Object.is(got[i], want[i]), `pattern 0x${i.toString(16)}`).toBe(true);
      }
    });
  }

  for (const isa of isas) {
    it(`floatsToHalf on ${isa}: the reference's bits up to the first value outside f16, and its index`, () => {
      setKernelIsa(isa);
      const outside = [65520, -65520, 1e30, Infinity, -Infinity, NaN];
      for (const n of [1, 7, 8, 9, 33, 768 + 3]) {
        for (let trial = 0; trial < 6; trial++) {
          // values inside f16's range (|x| < 65504 and subnormals), and in some trials one outside it
          const x = Float32Array.from({ length: n }, () => (r() < 0.5 ? (r() * 2 - 1) * 65504 : (r() * 2 - 1) * 2 ** -20));
          const bad = trial % 2 === 1 ? Math.floor(r() * n) : -1;
          if (bad >= 0) x[bad] = outside[Math.floor(r() * outside.length)];
          const half = new Uint16Array(n);
          const at = binding.floatsToHalf(x, half);
          expect(at, `n ${n}, trial ${trial}`).toBe(bad);
          const want = floatToHalf(x);
          const upTo = bad >= 0 ? bad : n;
          for (let i = 0; i < upTo; i++) expect(half[i], `n ${n}, trial ${trial}, at ${i}`).toBe(want[i]);
        }
      }
    });
  }

  it("refuses arrays of the wrong type or length with INVALID_ARGUMENT", () => {
    const bad: [string, () => void][] = [
      ["length", () => binding.roundToHalf(new Float32Array(4), new Uint16Array(3))],
      ["type", () => binding.roundToHalf(new Float32Array(4), new Int16Array(4) as unknown as Uint16Array)],
      ["x type", () => binding.halfToFloat(new Uint16Array(4), new Float64Array(4) as unknown as Float32Array)],
      ["back length", () => binding.halfToFloat(new Uint16Array(4), new Float32Array(5))],
      ["checked length", () => binding.floatsToHalf(new Float32Array(4), new Uint16Array(5))],
    ];
    for (const [what, call] of bad) {
      expect(call, what).toThrow(GavelError);
      try {
        call();
      } catch (e) {
        expect((e as GavelError).code, what).toBe("INVALID_ARGUMENT");
      }
    }
  });
});
