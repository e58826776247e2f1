/**
 * Fitting the live gate: an L2-regularised logistic regression (./logistic.ts) over rows
 * [score features…, state…] with 0/1 labels, folded back into weights on the raw features, so the
 * gate's logit on a raw row (src/route/gate.ts) equals the fit's logit on the standardised row.
 *
 * @module
 */
import { invalidArgument } from "gavel-router/internal";
import { fitLogistic, type LogisticOptions } from "./logistic.js";

/** A fitted gate: raw-feature weights and bias (a `GateModel`), with the fit's report. */
export interface GateFit {
  model: { weights: Float64Array; bias: number };
  iterations: number;
  converged: boolean;
  /** The penalised loss at the fit. */
  loss: number;
}

/**
 * Fits the linear gate by logistic regression (Newton's method on standardised features, balanced
 * classes by default, λ on the standardised weights) and returns raw-feature weights:
 * w_j = w'_j / scale_j, b = b' − Σ w_j mean_j.
 *
 * @throws GavelError INVALID_ARGUMENT (no rows, ragged or non-finite rows, one class only, bad λ)
 */
export function fitGate(rows: readonly ArrayLike<number>[], labels: ArrayLike<number>, options: LogisticOptions = {}): GateFit {
  if (!Array.isArray(rows) || rows.length === 0) throw invalidArgument("fitGate needs at least one row");
  const fit = fitLogistic(rows.map((r) => Array.from(r)), labels, options);
  const weights = new Float64Array(fit.weights.length);
  let bias = fit.bias;
  for (let j = 0; j < weights.length; j++) {
    weights[j] = fit.weights[j] / fit.scale[j];
    bias -= weights[j] * fit.mean[j];
  }
  return { model: { weights, bias }, iterations: fit.iterations, converged: fit.converged, loss: fit.loss };
}
