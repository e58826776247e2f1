/**
 * The gate's scaffold (issue 18; paper, discussion): a linear classifier over summary features of a
 * live context's accumulated glance scores and the final-layer state at the current position, that
 * fires once it has been positive for two consecutive tokens. Training (`gavel train-gate`) is not
 * here yet: weights come from the caller.
 *
 * @module
 */
import { invalidArgument } from "../errors.js";

/** Summary features of the accumulated scores g over the library (order fixed: {@link GATE_SCORE_FEATURES}). */
export const GATE_SCORE_FEATURES = ["max", "margin", "mean", "std", "top5mean", "entropy"] as const;

/**
 * The score summary: max g, the margin of the best over the second, mean and standard deviation of
 * g, the mean of the five best, and the entropy of softmax(g) over the library (float64).
 */
export function gateScoreFeatures(g: ArrayLike<number>): Float64Array {
  const n = g.length;
  if (n === 0) throw invalidArgument("the gate needs at least one score");
  const sorted = Float64Array.from(g).sort().reverse();
  let sum = 0;
  for (let i = 0; i < n; i++) sum += sorted[i];
  const mean = sum / n;
  let v = 0;
  for (let i = 0; i < n; i++) v += (sorted[i] - mean) ** 2;
  const top = Math.min(5, n);
  let t5 = 0;
  for (let i = 0; i < top; i++) t5 += sorted[i];
  let z = 0;
  for (let i = 0; i < n; i++) z += Math.exp(sorted[i] - sorted[0]);
  let h = 0;
  for (let i = 0; i < n; i++) {
    const p = Math.exp(sorted[i] - sorted[0]) / z;
    if (p > 0) h -= p * Math.log(p);
  }
  return Float64Array.of(sorted[0], n > 1 ? sorted[0] - sorted[1] : 0, mean, Math.sqrt(v / n), t5 / top, h);
}

/** A linear gate: weights over [score features…, final-layer state…] and a bias. */
export interface GateModel {
  /** Length {@link GATE_SCORE_FEATURES}.length + the state's width. */
  weights: Float64Array | number[];
  bias: number;
}

/**
 * The gate over a stream of tokens: `step` scores one position and reports whether the gate fires
 * (positive at this token and the one before). After a firing the streak starts again.
 */
export class Gate {
  readonly #w: Float64Array;
  readonly #b: number;
  #streak = 0;

  constructor(model: GateModel) {
    const w = Float64Array.from(model.weights as ArrayLike<number>);
    if (w.length <= GATE_SCORE_FEATURES.length || !w.every(Number.isFinite)) {
      throw invalidArgument(`gate weights must be ${GATE_SCORE_FEATURES.length} score weights plus the state's, all finite`);
    }
    if (!Number.isFinite(model.bias)) throw invalidArgument("gate bias must be finite");
    this.#w = w;
    this.#b = model.bias;
  }

  /** The logit w·[features(g), state] + b. */
  logit(g: ArrayLike<number>, state: ArrayLike<number>): number {
    const nf = GATE_SCORE_FEATURES.length;
    if (state.length !== this.#w.length - nf) throw invalidArgument(`state must have ${this.#w.length - nf} values, got ${state.length}`);
    const f = gateScoreFeatures(g);
    let z = this.#b;
    for (let i = 0; i < nf; i++) z += this.#w[i] * f[i];
    for (let i = 0; i < state.length; i++) z += this.#w[nf + i] * state[i];
    if (!Number.isFinite(z)) throw invalidArgument("the gate's inputs are not finite");
    return z;
  }

  /** One token: true when the gate has been positive (logit > 0) for this token and the previous one. */
  step(g: ArrayLike<number>, state: ArrayLike<number>): boolean {
    this.#streak = this.logit(g, state) > 0 ? this.#streak + 1 : 0;
    if (this.#streak >= 2) {
      this.#streak = 0;
      return true;
    }
    return false;
  }

  /** Forgets the streak. */
  reset(): void {
    this.#streak = 0;
  }
}
