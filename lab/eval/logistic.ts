/**
 * A small L2-regularised logistic regression in float64, fitted by Newton's method with a
 * backtracking line search: deterministic (no sampling, a fixed order of sums), exact to the
 * tolerance, and fast for the few features and few hundred records that abstention fits
 * (lab/eval/abstention-fit.ts). Features are standardised first, and the penalty falls on the weights of the
 * standardised features, not on the bias.
 *
 * @module
 */
import { invalidArgument } from "gavel-router/internal";

/** Options of {@link fitLogistic}. */
export interface LogisticOptions {
  /** λ of the penalty (λ/2)·‖w‖² on the standardised weights (default 0.1; must be > 0). */
  lambda?: number;
  /**
   * Weigh each class to half the loss (default true), so that λ means the same whatever the share of
   * positives; with false every record weighs 1/n.
   */
  balanced?: boolean;
  /** Newton steps at most (default 100). */
  maxIterations?: number;
  /** Stop when no parameter moves more than this in a step (default 1e-12). */
  tolerance?: number;
  /**
   * A sign for each feature's weight: −1 (the weight is ≤ 0), +1 (≥ 0) or 0 (free; the default for
   * every feature). The fit is then the constrained optimum: the best, by the penalised loss, of the
   * fits with some of the constrained weights held at 0 and the rest free, among those whose free
   * weights keep their signs (the optimum of a convex loss under sign bounds is such a fit).
   */
  signs?: readonly number[];
}

/** A fitted model: p(y = 1 | x) = σ(bias + Σ weights[j] (x[j] − mean[j]) / scale[j]). */
export interface LogisticFit {
  weights: number[];
  bias: number;
  mean: number[];
  scale: number[];
  iterations: number;
  converged: boolean;
  /** The penalised loss at the fit. */
  loss: number;
}

function softplus(z: number): number {
  return z > 0 ? z + Math.log1p(Math.exp(-z)) : Math.log1p(Math.exp(z));
}

function sigmoid(z: number): number {
  return z >= 0 ? 1 / (1 + Math.exp(-z)) : Math.exp(z) / (1 + Math.exp(z));
}

/** Solves A x = b (A n × n row-major, copied) by Gaussian elimination with partial pivoting. */
export function solveLinear(A: Float64Array, b: Float64Array): Float64Array {
  const n = b.length;
  const M = Float64Array.from(A);
  const x = Float64Array.from(b);
  for (let c = 0; c < n; c++) {
    let piv = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(M[r * n + c]) > Math.abs(M[piv * n + c])) piv = r;
    if (M[piv * n + c] === 0) throw invalidArgument("solveLinear: the matrix is singular");
    if (piv !== c) {
      for (let k = 0; k < n; k++) [M[c * n + k], M[piv * n + k]] = [M[piv * n + k], M[c * n + k]];
      [x[c], x[piv]] = [x[piv], x[c]];
    }
    for (let r = c + 1; r < n; r++) {
      const f = M[r * n + c] / M[c * n + c];
      if (f === 0) continue;
      for (let k = c; k < n; k++) M[r * n + k] -= f * M[c * n + k];
      x[r] -= f * x[c];
    }
  }
  for (let r = n - 1; r >= 0; r--) {
    let s = x[r];
    for (let k = r + 1; k < n; k++) s -= M[r * n + k] * x[k];
    x[r] = s / M[r * n + r];
  }
  return x;
}

/** Mean and scale (population standard deviation; 1 for a constant column) of each column. */
function standardisation(X: readonly (readonly number[])[], d: number): { mean: number[]; scale: number[] } {
  const n = X.length;
  const mean = Array.from({ length: d }, (_, j) => X.reduce((s, row) => s + row[j], 0) / n);
  const scale = mean.map((m, j) => {
    const sd = Math.sqrt(X.reduce((s, row) => s + (row[j] - m) ** 2, 0) / n);
    return sd > 1e-12 * Math.max(1, Math.abs(m)) ? sd : 1;
  });
  return { mean, scale };
}

/**
 * Fits p(y = 1 | x) by minimising Σᵢ cᵢ [log(1 + e^{zᵢ}) − yᵢ zᵢ] + (λ/2)‖w‖², zᵢ = b + w·xᵢ' over the
 * standardised xᵢ' (cᵢ: each class sums to ½ when `balanced`, else 1/n).
 *
 * @throws GavelError `INVALID_ARGUMENT` on ragged or non-finite rows, labels other than 0/1, a
 *   missing class, or λ ≤ 0
 */
export function fitLogistic(X: readonly (readonly number[])[], y: ArrayLike<number>, options: LogisticOptions = {}): LogisticFit {
  const n = X.length;
  const lambda = options.lambda ?? 0.1;
  if (!(lambda > 0) || !Number.isFinite(lambda)) throw invalidArgument(`fitLogistic: lambda must be a finite number > 0, got ${lambda}`);
  if (n === 0 || y.length !== n) throw invalidArgument("fitLogistic: needs as many labels as rows, and at least one row");
  const d = X[0].length;
  if (X.some((row) => row.length !== d || row.some((v) => !Number.isFinite(v)))) throw invalidArgument("fitLogistic: rows must have the same length and finite values");
  let pos = 0;
  for (let i = 0; i < n; i++) {
    if (y[i] !== 0 && y[i] !== 1) throw invalidArgument("fitLogistic: labels must be 0 or 1");
    pos += y[i];
  }
  if (pos === 0 || pos === n) throw invalidArgument("fitLogistic: both classes must be present");
  const balanced = options.balanced ?? true;
  const c = Float64Array.from({ length: n }, (_, i) => (balanced ? 1 / (2 * (y[i] ? pos : n - pos)) : 1 / n));
  const { mean, scale } = standardisation(X, d);
  const Z = X.map((row) => row.map((v, j) => (v - mean[j]) / scale[j]));
  const signs = options.signs ?? [];
  if (signs.length > d || signs.some((v) => v !== -1 && v !== 0 && v !== 1)) throw invalidArgument("fitLogistic: signs must hold −1, 0 or 1 for at most one entry per feature");
  const bounded = signs.flatMap((v, j) => (v !== 0 ? [j] : []));
  if (bounded.length > 12) throw invalidArgument("fitLogistic: at most 12 features may carry a sign");
  const free = newtonFit(Z, y, c, d, lambda, options, new Set());
  const keeps = (f: NewtonResult) => bounded.every((j) => signs[j] * f.theta[j] >= -1e-12);
  let best = keeps(free) ? free : undefined;
  if (!best) {
    // every face: the weights of `held` fixed at 0, the others fitted freely; the feasible one with the lowest loss
    for (let m = 1; m < 1 << bounded.length; m++) {
      const held = new Set(bounded.filter((_, i) => m & (1 << i)));
      const f = newtonFit(Z, y, c, d, lambda, options, held);
      if (keeps(f) && (!best || f.loss < best.loss)) best = f;
    }
  }
  const fit = best!; // the face with every bounded weight held at 0 always keeps its signs
  for (const j of bounded) if (signs[j] * fit.theta[j] < 0) fit.theta[j] = 0; // −1e-12 < w < 0: exactly 0
  return { weights: Array.from(fit.theta.subarray(0, d)), bias: fit.theta[d], mean, scale, iterations: fit.iterations, converged: fit.converged, loss: fit.loss };
}

interface NewtonResult {
  theta: Float64Array;
  loss: number;
  iterations: number;
  converged: boolean;
}

/** The penalised fit over the standardised rows, with the weights in `held` fixed at 0 (their columns read as 0). */
function newtonFit(Z0: number[][], y: ArrayLike<number>, c: Float64Array, d: number, lambda: number, options: LogisticOptions, held: ReadonlySet<number>): NewtonResult {
  const Z = held.size === 0 ? Z0 : Z0.map((row) => row.map((v, j) => (held.has(j) ? 0 : v)));
  const D = d + 1; // weights, then the bias
  const logits = (t: Float64Array) => Z.map((row) => row.reduce((s, v, j) => s + t[j] * v, t[d]));
  const loss = (t: Float64Array) => {
    let s = 0;
    logits(t).forEach((z, i) => (s += c[i] * (softplus(z) - y[i] * z)));
    for (let j = 0; j < d; j++) s += 0.5 * lambda * t[j] * t[j];
    return s;
  };
  let theta = new Float64Array(D);
  let f = loss(theta);
  let iterations = 0;
  let converged = false;
  while (iterations < (options.maxIterations ?? 100)) {
    iterations++;
    const { grad, hess } = gradientAndHessian(Z, y, c, logits(theta), theta, lambda);
    const step = solveLinear(hess, grad);
    const slope = grad.reduce((s, g, j) => s + g * step[j], 0);
    let t = 1;
    let next = theta.map((v, j) => v - step[j]);
    let fNext = loss(next);
    // Armijo backtracking: Newton's full step can overshoot far from the optimum.
    while (fNext > f - 1e-4 * t * slope && t > 1e-10) {
      t /= 2;
      next = theta.map((v, j) => v - t * step[j]);
      fNext = loss(next);
    }
    const moved = step.reduce((m, s) => Math.max(m, Math.abs(t * s)), 0);
    if (fNext <= f) [theta, f] = [next, fNext];
    if (moved <= (options.tolerance ?? 1e-12) || fNext > f) {
      converged = true;
      break;
    }
  }
  return { theta, loss: f, iterations, converged };
}

/** The penalised loss's gradient and Hessian ((d+1)², the bias last) at θ, given the logits. */
function gradientAndHessian(Z: number[][], y: ArrayLike<number>, c: Float64Array, z: number[], theta: Float64Array, lambda: number): { grad: Float64Array; hess: Float64Array } {
  const d = theta.length - 1;
  const D = d + 1;
  const grad = new Float64Array(D);
  const hess = new Float64Array(D * D);
  const x = new Float64Array(D);
  for (let i = 0; i < Z.length; i++) {
    const p = sigmoid(z[i]);
    for (let j = 0; j < d; j++) x[j] = Z[i][j];
    x[d] = 1;
    const r = c[i] * (p - y[i]);
    const h = c[i] * p * (1 - p);
    for (let j = 0; j < D; j++) {
      grad[j] += r * x[j];
      for (let k = 0; k < D; k++) hess[j * D + k] += h * x[j] * x[k];
    }
  }
  for (let j = 0; j < d; j++) {
    grad[j] += lambda * theta[j];
    hess[j * D + j] += lambda;
  }
  return { grad, hess };
}
