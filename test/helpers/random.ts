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

/** Scales row `i` of `a` (rows `dim` wide) to unit length in place: each entry divided by the row's float64 norm. */
export function normalizeRow(a: Float32Array, i: number, dim: number): void {
  let ss = 0;
  for (let j = 0; j < dim; j++) ss += a[i * dim + j] ** 2;
  const n = Math.sqrt(ss);
  for (let j = 0; j < dim; j++) a[i * dim + j] /= n;
}

/**
 * `rows` rows of `dim` Gaussian draws from the stream `r` (row by row), each scaled to unit length:
 * directions uniform on the sphere.
 */
export function unitKeys(r: () => number, rows: number, dim: number): Float32Array {
  const a = randArray(r, rows * dim);
  for (let i = 0; i < rows; i++) normalizeRow(a, i, dim);
  return a;
}

/**
 * Unit rows near given centres (topic clusters, near-duplicate keys): row i is
 * normalize(centre + noise · gauss) with a Gaussian draw per coordinate, its centre one row of
 * `centers` (rows `dim` wide). `pick` is either a row count, each row's centre then drawn uniformly
 * from the stream just before its noise, or the centre indices, one per row.
 */
export function nearKeys(r: () => number, centers: Float32Array, dim: number, pick: number | ArrayLike<number>, noise: number): Float32Array {
  const nc = centers.length / dim;
  const n = typeof pick === "number" ? pick : pick.length;
  const out = new Float32Array(n * dim);
  for (let i = 0; i < n; i++) {
    const c = typeof pick === "number" ? Math.floor(r() * nc) : pick[i];
    for (let d = 0; d < dim; d++) out[i * dim + d] = centers[c * dim + d] + noise * gauss(r);
    normalizeRow(out, i, dim);
  }
  return out;
}
