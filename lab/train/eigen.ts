/**
 * Eigenvalues (and optionally eigenvectors) of real symmetric matrices in float64, written for the
 * layer scan (appendix B), whose Gram matrices are at most a few hundred wide.
 *
 * Main path: Householder reduction to tridiagonal form, then the implicit QL iteration with a
 * Wilkinson-type shift. Both are O(n³) with vectors and the QL part is O(n²) without, so the
 * entropy (values only) costs about (4/3)·n³ flops. A cyclic Jacobi solver is kept as an independent
 * second method: slower, but so different in construction that agreement between the two is a
 * meaningful test.
 */
import { invalidArgument } from "gavel-router/internal";

/** Result of {@link symmetricEigen} / {@link jacobiEigen}. */
export interface SymmetricEigen {
  /** Eigenvalues in ascending order. */
  values: Float64Array;
  /**
   * Eigenvectors when asked for: n × n row-major, column j (entries `vectors[i * n + j]`) is the unit
   * eigenvector of `values[j]`.
   */
  vectors?: Float64Array;
}

/** Options of the eigen solvers. */
export interface EigenOptions {
  /** Also compute eigenvectors (costs roughly 3× more). Default false. */
  vectors?: boolean;
}

/** Iterations QL may spend on one eigenvalue; convergence is cubic, so 5–6 is typical. */
const MAX_QL_ITERATIONS = 64;

function checkSquare(a: ArrayLike<number>, n: number): void {
  if (!Number.isInteger(n) || n < 0) throw invalidArgument(`n must be a non-negative integer, got ${String(n)}`);
  if (a.length !== n * n) throw invalidArgument(`matrix has ${a.length} entries, expected ${n}×${n} = ${n * n}`);
  for (let i = 0; i < a.length; i++) {
    if (!Number.isFinite(a[i])) throw invalidArgument(`matrix entry ${i} is not finite (${a[i]})`);
  }
}

/**
 * Eigen-decomposition of the symmetric n × n matrix `a` (row-major). Only the lower triangle is read
 * (the upper is assumed to mirror it), so a slightly asymmetric Gram matrix from rounding is fine.
 *
 * @throws GavelError `INVALID_ARGUMENT` on a shape mismatch or a non-finite entry; a plain Error if QL
 *   fails to converge (not seen for finite input).
 */
export function symmetricEigen(a: ArrayLike<number>, n: number, options: EigenOptions = {}): SymmetricEigen {
  checkSquare(a, n);
  const wantVectors = options.vectors === true;
  if (n === 0) return { values: new Float64Array(0), ...(wantVectors ? { vectors: new Float64Array(0) } : {}) };
  // Work on a full symmetric copy built from the lower triangle.
  const w = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j <= i; j++) {
      const v = a[i * n + j];
      w[i * n + j] = v;
      w[j * n + i] = v;
    }
  }
  const { d, e, q } = tridiagonalize(w, n, wantVectors);
  implicitQL(d, e, q, n);
  return sortAscending(d, q, n);
}

/**
 * Householder reduction A = Q T Qᵀ with T tridiagonal. Returns T's diagonal `d`, its off-diagonal `e`
 * (e[i] = T[i][i+1], e[n-1] = 0) and Q (row-major) when asked for. Overwrites `w`.
 */
function tridiagonalize(w: Float64Array, n: number, wantQ: boolean): { d: Float64Array; e: Float64Array; q: Float64Array | null } {
  const d = new Float64Array(n);
  const e = new Float64Array(n);
  const q = wantQ ? identity(n) : null;
  const v = new Float64Array(n);
  const p = new Float64Array(n);
  for (let k = 0; k + 2 < n; k++) {
    // x = column k below the diagonal; reflect it onto the first unit vector of that subspace.
    const x0 = w[(k + 1) * n + k];
    let sigma = 0;
    for (let i = k + 2; i < n; i++) sigma += w[i * n + k] * w[i * n + k];
    if (sigma === 0) {
      // Already tridiagonal in this column: no reflection (and none to accumulate).
      e[k] = x0;
      continue;
    }
    const norm = Math.sqrt(x0 * x0 + sigma);
    // The sign opposite to x0 avoids cancellation in v0 = x0 − alpha.
    const alpha = x0 >= 0 ? -norm : norm;
    v[k + 1] = x0 - alpha;
    for (let i = k + 2; i < n; i++) v[i] = w[i * n + k];
    const vtv = v[k + 1] * v[k + 1] + sigma;
    const beta = 2 / vtv;
    e[k] = alpha;
    // B ← H B H on the trailing block, as a rank-2 update: p = βBv, w = p − (β/2)(vᵀp)v, B −= vwᵀ + wvᵀ.
    let vtp = 0;
    for (let i = k + 1; i < n; i++) {
      let s = 0;
      const row = i * n;
      for (let j = k + 1; j < n; j++) s += w[row + j] * v[j];
      p[i] = beta * s;
      vtp += v[i] * p[i];
    }
    const half = 0.5 * beta * vtp;
    for (let i = k + 1; i < n; i++) p[i] -= half * v[i];
    for (let i = k + 1; i < n; i++) {
      const row = i * n;
      const vi = v[i];
      const pi = p[i];
      for (let j = k + 1; j < n; j++) w[row + j] -= vi * p[j] + pi * v[j];
    }
    if (q) {
      // Q ← Q H: each row r of Q loses β (r·v) vᵀ on columns k+1..n−1.
      for (let r = 0; r < n; r++) {
        const row = r * n;
        let s = 0;
        for (let j = k + 1; j < n; j++) s += q[row + j] * v[j];
        s *= beta;
        if (s !== 0) for (let j = k + 1; j < n; j++) q[row + j] -= s * v[j];
      }
    }
  }
  for (let i = 0; i < n; i++) d[i] = w[i * n + i];
  if (n >= 2) e[n - 2] = w[(n - 1) * n + (n - 2)];
  e[n - 1] = 0;
  return { d, e, q };
}

/**
 * Implicit QL on the symmetric tridiagonal (d, e), in place: d ends up holding the eigenvalues and the
 * columns of z (when given) the eigenvectors, as the plane rotations are applied to them.
 */
function implicitQL(d: Float64Array, e: Float64Array, z: Float64Array | null, n: number): void {
  for (let l = 0; l < n; l++) {
    let iterations = 0;
    for (;;) {
      // The first negligible off-diagonal at or after l splits off an unreduced block [l, m].
      let m = l;
      for (; m < n - 1; m++) {
        const dd = Math.abs(d[m]) + Math.abs(d[m + 1]);
        if (Math.abs(e[m]) <= Number.EPSILON * dd) break;
      }
      if (m === l) break;
      if (++iterations > MAX_QL_ITERATIONS) throw new Error(`symmetricEigen: QL did not converge for eigenvalue ${l}`);
      // Shift: the eigenvalue of the leading 2×2 block closer to d[l], expressed relative to d[m].
      let g = (d[l + 1] - d[l]) / (2 * e[l]);
      let r = Math.hypot(g, 1);
      g = d[m] - d[l] + e[l] / (g + (g >= 0 ? r : -r));
      let s = 1;
      let c = 1;
      let p = 0;
      let deflated = false;
      // Chase the bulge from the bottom of the block up to l with Givens rotations.
      for (let i = m - 1; i >= l; i--) {
        const f = s * e[i];
        const b = c * e[i];
        r = Math.hypot(f, g);
        e[i + 1] = r;
        if (r === 0) {
          // An exact zero appeared mid-chase: the block splits here; restart the search.
          d[i + 1] -= p;
          e[m] = 0;
          deflated = true;
          break;
        }
        s = f / r;
        c = g / r;
        g = d[i + 1] - p;
        r = (d[i] - g) * s + 2 * c * b;
        p = s * r;
        d[i + 1] = g + p;
        g = c * r - b;
        if (z) {
          for (let k = 0; k < n; k++) {
            const row = k * n;
            const zi = z[row + i];
            const zi1 = z[row + i + 1];
            z[row + i + 1] = s * zi + c * zi1;
            z[row + i] = c * zi - s * zi1;
          }
        }
      }
      if (deflated) continue;
      d[l] -= p;
      e[l] = g;
      e[m] = 0;
    }
  }
}

function identity(n: number): Float64Array {
  const m = new Float64Array(n * n);
  for (let i = 0; i < n; i++) m[i * n + i] = 1;
  return m;
}

function sortAscending(d: Float64Array, z: Float64Array | null, n: number): SymmetricEigen {
  const order = Array.from({ length: n }, (_, i) => i).sort((i, j) => d[i] - d[j]);
  const values = Float64Array.from(order, (i) => d[i]);
  if (!z) return { values };
  const vectors = new Float64Array(n * n);
  for (let r = 0; r < n; r++) {
    for (let j = 0; j < n; j++) vectors[r * n + j] = z[r * n + order[j]];
  }
  return { values, vectors };
}

/**
 * Cyclic Jacobi eigen-decomposition: sweeps of plane rotations, each zeroing one off-diagonal pair,
 * until the off-diagonal mass is negligible. O(n³) per sweep; meant for small matrices and as an
 * independent check of {@link symmetricEigen}. Reads the whole matrix (assumed symmetric).
 */
export function jacobiEigen(a: ArrayLike<number>, n: number, options: EigenOptions = {}): SymmetricEigen {
  checkSquare(a, n);
  const w = Float64Array.from(a);
  const v = options.vectors ? identity(n) : null;
  let total = 0;
  for (let i = 0; i < n * n; i++) total += w[i] * w[i];
  for (let sweep = 0; sweep < 100; sweep++) {
    let off = 0;
    for (let p = 0; p < n; p++) for (let q = p + 1; q < n; q++) off += w[p * n + q] * w[p * n + q];
    if (off <= 1e-32 * total || off === 0) break;
    for (let p = 0; p < n; p++) {
      for (let q = p + 1; q < n; q++) {
        const apq = w[p * n + q];
        if (apq === 0) continue;
        // Rotation angle that zeroes (p, q); t is the smaller root of t² + 2θt − 1 = 0 (stable).
        const theta = (w[q * n + q] - w[p * n + p]) / (2 * apq);
        const t = (theta >= 0 ? 1 : -1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
        const c = 1 / Math.sqrt(t * t + 1);
        const s = t * c;
        for (let k = 0; k < n; k++) {
          const akp = w[k * n + p];
          const akq = w[k * n + q];
          w[k * n + p] = c * akp - s * akq;
          w[k * n + q] = s * akp + c * akq;
        }
        for (let k = 0; k < n; k++) {
          const apk = w[p * n + k];
          const aqk = w[q * n + k];
          w[p * n + k] = c * apk - s * aqk;
          w[q * n + k] = s * apk + c * aqk;
        }
        if (v) {
          for (let k = 0; k < n; k++) {
            const vkp = v[k * n + p];
            const vkq = v[k * n + q];
            v[k * n + p] = c * vkp - s * vkq;
            v[k * n + q] = s * vkp + c * vkq;
          }
        }
      }
    }
  }
  const d = new Float64Array(n);
  for (let i = 0; i < n; i++) d[i] = w[i * n + i];
  return sortAscending(d, v, n);
}
