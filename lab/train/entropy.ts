/**
 * Matrix-based entropy of a set of token states (appendix B, after Skean et al. 2025):
 * S₁ = −Σ p_k log p_k over the normalised spectrum p = λ(Z Zᵀ) / tr(Z Zᵀ). It is log of an effective
 * number of directions the states occupy: 0 for states on one line, log k for k orthogonal directions
 * of equal energy.
 */
import { invalidArgument } from "gavel-router/internal";
import { symmetricEigen } from "./eigen.js";

/** Options of {@link matrixEntropy}. */
export interface MatrixEntropyOptions {
  /**
   * Drop the row of largest norm before taking the spectrum. Default true: a massive-activation
   * ("sink") token carries orders of magnitude more energy than the rest and would make S₁ measure
   * the sink instead of the representation (appendix B).
   */
  dropTopNorm?: boolean;
}

/** Index of the row of largest Euclidean norm (the first one on ties). */
export function topNormRow(z: ArrayLike<number>, rows: number, cols: number): number {
  let best = -1;
  let bestNorm = -Infinity;
  for (let i = 0; i < rows; i++) {
    let s = 0;
    const o = i * cols;
    for (let j = 0; j < cols; j++) s += z[o + j] * z[o + j];
    if (s > bestNorm) {
      bestNorm = s;
      best = i;
    }
  }
  return best;
}

/**
 * The Gram matrix of the smaller side, in float64: Z Zᵀ (rows × rows) when rows ≤ cols, else Zᵀ Z
 * (cols × cols). Both have the same nonzero eigenvalues, so the entropy only needs the smaller one.
 * `skip` is a row left out (−1 for none).
 */
export function smallGram(z: ArrayLike<number>, rows: number, cols: number, skip = -1): { gram: Float64Array; size: number } {
  // Copy the kept rows to float64 once: the products below then run on one contiguous array.
  const kept = skip >= 0 && skip < rows ? rows - 1 : rows;
  const x = new Float64Array(kept * cols);
  for (let i = 0, r = 0; i < rows; i++) {
    if (i === skip) continue;
    for (let j = 0; j < cols; j++) x[r * cols + j] = z[i * cols + j];
    r++;
  }
  if (kept <= cols) {
    const g = new Float64Array(kept * kept);
    for (let i = 0; i < kept; i++) {
      const oi = i * cols;
      for (let k = 0; k <= i; k++) {
        const ok = k * cols;
        let s = 0;
        for (let j = 0; j < cols; j++) s += x[oi + j] * x[ok + j];
        g[i * kept + k] = s;
        g[k * kept + i] = s;
      }
    }
    return { gram: g, size: kept };
  }
  // Zᵀ Z as a sum of outer products of rows (lower triangle, mirrored after): streams x once.
  const g = new Float64Array(cols * cols);
  for (let r = 0; r < kept; r++) {
    const o = r * cols;
    for (let a = 0; a < cols; a++) {
      const xa = x[o + a];
      if (xa === 0) continue;
      const ga = a * cols;
      for (let b = 0; b <= a; b++) g[ga + b] += xa * x[o + b];
    }
  }
  for (let a = 0; a < cols; a++) for (let b = 0; b < a; b++) g[b * cols + a] = g[a * cols + b];
  return { gram: g, size: cols };
}

/** S₁ = −Σ p log p of a non-negative spectrum normalised to sum 1 (tiny negative rounding clamped to 0). */
export function spectralEntropy(eigenvalues: ArrayLike<number>): number {
  let total = 0;
  for (let i = 0; i < eigenvalues.length; i++) if (eigenvalues[i] > 0) total += eigenvalues[i];
  if (!(total > 0)) return Number.NaN;
  let h = 0;
  for (let i = 0; i < eigenvalues.length; i++) {
    const l = eigenvalues[i];
    if (l > 0) {
      const p = l / total;
      h -= p * Math.log(p);
    }
  }
  return h;
}

/**
 * Matrix-based entropy S₁ (natural log) of the states `z` (rows × cols row-major, one row a token).
 *
 * The spectrum is normalised by the sum of the (clamped non-negative) eigenvalues, which equals
 * tr(Z Zᵀ) up to rounding. States are not centred, as in the paper's definition.
 *
 * @returns S₁ ∈ [0, log min(rows, cols)], or NaN when nothing is left (a single row with
 *   `dropTopNorm`) or every state is zero.
 * @throws GavelError `INVALID_ARGUMENT` on a shape mismatch or non-finite states.
 */
export function matrixEntropy(z: Float32Array | Float64Array, rows: number, cols: number, options: MatrixEntropyOptions = {}): number {
  if (!Number.isInteger(rows) || rows < 1) throw invalidArgument(`rows must be a positive integer, got ${String(rows)}`);
  if (!Number.isInteger(cols) || cols < 1) throw invalidArgument(`cols must be a positive integer, got ${String(cols)}`);
  if (z.length !== rows * cols) throw invalidArgument(`states have ${z.length} entries, expected ${rows}×${cols} = ${rows * cols}`);
  for (let i = 0; i < z.length; i++) {
    if (!Number.isFinite(z[i])) throw invalidArgument(`state entry ${i} is not finite (${z[i]})`);
  }
  const drop = options.dropTopNorm ?? true;
  const skip = drop ? topNormRow(z, rows, cols) : -1;
  if (drop && rows === 1) return Number.NaN;
  const { gram, size } = smallGram(z, rows, cols, skip);
  return spectralEntropy(symmetricEigen(gram, size).values);
}
