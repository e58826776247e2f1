// util/half against a float64 reference: float32 → f16 rounds to nearest, ties to even, overflows
// to ±Inf, keeps NaN; every f16 decodes to its exact value. Random values cover the normal and
// subnormal half ranges, their edges, and arbitrary float32 bit patterns (NaN, Inf, f32 subnormals).
import { describe, expect, it } from "vitest";
import { floatToHalf, fromHalf, halfToFloat, toHalf } from "../../src/util/half.js";
import { freshSeed, rng } from "../helpers/random.js";

/** The f16 value nearest to x (ties to even), computed in float64; NaN for NaN. */
function referenceHalf(x: number): number {
  if (Number.isNaN(x)) return NaN;
  const sign = x < 0 || Object.is(x, -0) ? -1 : 1;
  const a = Math.abs(x);
  if (a >= 65520) return sign * Infinity; // 65504 + half an ulp (16): rounds up past the largest half
  let e = Math.max(-14, Math.floor(Math.log2(a || 1)));
  if (2 ** e > a && e > -14) e--; // log2 rounding at exact powers
  if (2 ** (e + 1) <= a) e++;
  const unit = 2 ** (Math.max(e, -14) - 10); // 2^-24 in the subnormal range
  const q = a / unit; // exact: a is a float32 and unit a power of two
  const fl = Math.floor(q);
  const r = q - fl > 0.5 || (q - fl === 0.5 && fl % 2 === 1) ? fl + 1 : fl;
  return sign * r * unit;
}

/** The exact value of f16 bits, from the IEEE 754 definition. */
function referenceDecode(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 31) return m ? NaN : s * Infinity;
  return e === 0 ? s * m * 2 ** -24 : s * (1 + m / 1024) * 2 ** (e - 15);
}

function same(a: number, b: number): boolean {
  return Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));
}

describe("half floats", () => {
  it("decodes every f16 to its exact value", () => {
    const all = new Uint16Array(65536).map((_, i) => i);
    const dec = halfToFloat(all);
    for (let h = 0; h < 65536; h++) {
      expect(same(dec[h], Math.fround(referenceDecode(h))), `bits ${h}`).toBe(true);
      expect(same(fromHalf(h), dec[h])).toBe(true);
    }
  });

  it("rounds float32 to f16 like the float64 reference, on random and edge values", () => {
    const seed = freshSeed();
    const r = rng(seed);
    const f32 = new Float32Array(1);
    const u32 = new Uint32Array(f32.buffer);
    const values: number[] = [0, -0, 1, -1, 65504, -65504, 65519.99, 65520, -65520, 2 ** -24, -(2 ** -24), 2 ** -25, 3 * 2 ** -26, 2 ** -26,
      2 ** -14, 2 ** -14 - 2 ** -25, 1 + 2 ** -11, 1 + 3 * 2 ** -11, Infinity, -Infinity, NaN, 3.4028234663852886e38, 1.401298464324817e-45];
    for (let i = 0; i < 20_000; i++) {
      const kind = i % 3;
      if (kind === 0) {
        u32[0] = Math.floor(r() * 2 ** 32); // any float32 at all: NaNs, infinities, f32 subnormals
        values.push(f32[0]);
      } else {
        // Across the half range: exponents from below the smallest subnormal to past the largest normal.
        const exp = kind === 1 ? -27 + r() * 44 : -26 + r() * 12;
        values.push(Math.fround((r() < 0.5 ? -1 : 1) * 2 ** exp));
      }
    }
    const src = Float32Array.from(values);
    const bits = floatToHalf(src);
    for (let i = 0; i < src.length; i++) {
      const want = referenceHalf(src[i]);
      const got = referenceDecode(bits[i]);
      if (!same(got, want)) throw new Error(`seed ${seed}: ${src[i]} → ${got} (bits ${bits[i].toString(16)}), want ${want}`);
      expect(toHalf(src[i])).toBe(bits[i]);
      if (!Number.isNaN(want)) expect(same(fromHalf(bits[i]), want)).toBe(true);
    }
  });

  it("keeps the sign of NaN and makes it quiet", () => {
    expect(toHalf(NaN) & 0x7e00).toBe(0x7e00);
    const f = new Float32Array([NaN]);
    new Uint32Array(f.buffer)[0] = 0xff800001; // a negative signalling NaN
    expect(floatToHalf(f)[0]).toBe(0xfe00);
  });
});
