/**
 * Test data and statistics shared by the benchmarks. The data come from the xorshift stream the
 * benchmarks have always used (not util/prng's mulberry32), so the inputs stay those the figures in
 * docs/BENCHMARKS.md were measured on; the kernels' speed does not depend on the distribution anyway.
 */

/** n uniform(−1, 1) values from a xorshift32 stream seeded with `seed`. */
export function randomMatrix(n: number, seed: number): Float32Array {
  let s = seed >>> 0 || 1;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = (s >>> 0) / 2 ** 31 - 1;
  }
  return out;
}

/** n rows of d uniform(−1, 1) values (the same stream as {@link randomMatrix}), each normalised. */
export function unitRows(n: number, d: number, seed: number): Float32Array {
  const out = randomMatrix(n * d, seed);
  for (let i = 0; i < n; i++) {
    const row = out.subarray(i * d, (i + 1) * d);
    let norm = 0;
    for (let j = 0; j < d; j++) norm += row[j] * row[j];
    norm = Math.sqrt(norm);
    for (let j = 0; j < d; j++) row[j] /= norm;
  }
  return out;
}

/** The median (the upper one of an even count, as the benchmarks have always reported). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** The value at fraction `f` of the sorted values (index ⌊f·n⌋, the last for f near 1): p95 is quantile(xs, 0.95). */
export function quantile(xs: readonly number[], f: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(f * s.length))];
}
