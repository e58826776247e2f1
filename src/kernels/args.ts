/**
 * Argument checks shared by the kernel wrappers and the key bank: a mistake surfaces as a
 * GavelError INVALID_ARGUMENT naming the argument before anything reaches C++.
 *
 * @module
 */
import { invalidArgument } from "../errors.js";
import { checkInt as checkIntInRange } from "../util/validate.js";

export function checkFloat32(value: unknown, name: string): asserts value is Float32Array {
  if (!(value instanceof Float32Array)) throw invalidArgument(`${name} must be a Float32Array`);
}

/** Asserts an int32 argument in [min, 2^31 − 1] (util/validate's check, as an assertion). */
export function checkInt(value: unknown, name: string, min: number): asserts value is number {
  checkIntInRange(value, name, min);
}

export function checkRows(arr: Float32Array, dim: number, name: string): number {
  if (arr.length % dim !== 0) {
    throw invalidArgument(`${name}.length (${arr.length}) is not a multiple of dim (${dim})`);
  }
  return arr.length / dim;
}

/** The vote weights of a glance: `undefined` → uniform; else checked finite, ≥ 0, positive sum. */
export function resolveWeights(weights: Float32Array | undefined, nq: number): Float32Array {
  // Only `undefined` means "default": a null is more likely a bug upstream than a request.
  const w = weights === undefined ? new Float32Array(nq).fill(1) : weights;
  checkFloat32(w, "weights");
  if (w.length !== nq) {
    throw invalidArgument(`weights.length (${w.length}) must equal the number of query tokens (${nq})`);
  }
  let sum = 0;
  for (let i = 0; i < nq; i++) {
    const x = w[i];
    if (!Number.isFinite(x) || x < 0) throw invalidArgument(`weights[${i}] must be finite and >= 0, got ${x}`);
    sum += x;
  }
  if (!(sum > 0)) throw invalidArgument("weights must have a positive sum");
  return w;
}
