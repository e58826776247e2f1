/**
 * IEEE 754 binary16 ("half", f16) conversions, written once for the GGUF reader and writer and the
 * training states cache. Rounding is to nearest even, as ggml's `GGML_FP32_TO_FP16` does; overflow
 * goes to ±Inf, NaN stays NaN (quiet, sign kept), subnormals are exact both ways.
 */

/** f16 bits → float32 for all 65536 inputs, built on first use (a table beats arithmetic on big tensors). */
let halfTable: Float32Array | undefined;

function table(): Float32Array {
  if (halfTable) return halfTable;
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const s = h & 0x8000 ? -1 : 1;
    const e = (h >>> 10) & 0x1f;
    const m = h & 0x3ff;
    t[h] = e === 0 ? s * m * 2 ** -24 : e === 0x1f ? (m ? NaN : s * Infinity) : s * (1 + m / 1024) * 2 ** (e - 15);
  }
  halfTable = t;
  return t;
}

/** float32 bit pattern → f16 bits. */
function halfBits(x: number): number {
  const sign = (x >>> 16) & 0x8000;
  const abs = x & 0x7fffffff;
  if (abs >= 0x7f800000) return sign | (abs > 0x7f800000 ? 0x7e00 : 0x7c00); // NaN (quiet) / Inf
  if (abs >= 0x477ff000) return sign | 0x7c00; // rounds to ≥ 65520: overflow to Inf
  if (abs < 0x38800000) {
    // Subnormal half (or zero): value / 2^-24, rounded to nearest even.
    if (abs < 0x33000000) return sign; // below half of the smallest subnormal
    const e = abs >>> 23;
    const m = (abs & 0x7fffff) | 0x800000;
    const shift = 126 - e; // bits to drop so that the unit is 2^-24
    const r = m >>> shift;
    const rem = m & ((1 << shift) - 1);
    const halfway = 1 << (shift - 1);
    return sign | (r + (rem > halfway || (rem === halfway && r & 1) ? 1 : 0));
  }
  // Normal: rebias exponent (127 → 15), keep 10 mantissa bits, round to nearest even (a carry into
  // the exponent is still the right answer).
  const r = (abs - 0x38000000) >>> 13;
  const rem = abs & 0x1fff;
  return sign | (r + (rem > 0x1000 || (rem === 0x1000 && r & 1) ? 1 : 0));
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** One number → f16 bits (the number is first rounded to float32). */
export function toHalf(x: number): number {
  f32[0] = x;
  return halfBits(u32[0]);
}

/** f16 bits → the number they encode. */
export function fromHalf(h: number): number {
  return table()[h & 0xffff];
}

/** float32 values → IEEE binary16 bits, into `dst` (a new array by default). */
export function floatToHalf(src: Float32Array, dst = new Uint16Array(src.length)): Uint16Array {
  const u = new Uint32Array(src.buffer, src.byteOffset, src.length);
  for (let i = 0; i < src.length; i++) dst[i] = halfBits(u[i]);
  return dst;
}

/** IEEE binary16 bits → float32 values, into `dst` (a new array by default). */
export function halfToFloat(src: Uint16Array, dst = new Float32Array(src.length)): Float32Array {
  const t = table();
  for (let i = 0; i < src.length; i++) dst[i] = t[src[i]];
  return dst;
}
