import { mulberry32 } from "../../src/util/prng.js";

/** A small seeded PRNG (the package's mulberry32) so failures can be replayed from the logged seed. */
export const rng: (seed: number) => () => number = mulberry32;

/** A new seed per run, or GAVEL_TEST_SEED's (to replay a failure that printed its seed). */
export function freshSeed(): number {
  const fixed = process.env.GAVEL_TEST_SEED;
  if (fixed !== undefined && fixed !== "") return Number(fixed) >>> 0;
  return (Date.now() ^ Math.floor(Math.random() * 0x7fffffff)) >>> 0;
}

/** A standard normal draw (Box–Muller) from the stream `r`. */
export function gauss(r: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
}

/** n normal draws times `scale`, as float32. */
export function randArray(r: () => number, n: number, scale = 1): Float32Array {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = gauss(r) * scale;
  return a;
}

export function randomTokens(r: () => number, n: number, lo: number, hi: number): Int32Array {
  const out = new Int32Array(n);
  for (let i = 0; i < n; i++) out[i] = lo + Math.floor(r() * (hi - lo));
  return out;
}

/** log-softmax of one row, in float64. */
export function logSoftmax(row: ArrayLike<number>): Float64Array {
  let mx = -Infinity;
  for (let i = 0; i < row.length; i++) mx = Math.max(mx, row[i]);
  let s = 0;
  for (let i = 0; i < row.length; i++) s += Math.exp(row[i] - mx);
  const lse = mx + Math.log(s);
  const out = new Float64Array(row.length);
  for (let i = 0; i < row.length; i++) out[i] = row[i] - lse;
  return out;
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} != ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

/** `rows` rows of `dim` Gaussian draws from the stream `r`, each scaled to unit length. */
export function unitKeys(r: () => number, rows: number, dim: number): Float32Array {
  const a = randArray(r, rows * dim);
  for (let i = 0; i < rows; i++) {
    let n = 0;
    for (let j = 0; j < dim; j++) n += a[i * dim + j] ** 2;
    n = Math.sqrt(n);
    for (let j = 0; j < dim; j++) a[i * dim + j] /= n;
  }
  return a;
}
