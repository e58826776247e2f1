// Argument checks shared by the facades: each failure is a GavelError with code INVALID_ARGUMENT
// (or a more specific one), raised before anything reaches llama.cpp.
import { GavelError, invalidArgument } from "../errors.js";

/** Token ids as an Int32Array; accepts Int32Array or an array of integers. */
export function toTokens(value: unknown, what: string, nVocab: number): Int32Array {
  let out: Int32Array;
  if (value instanceof Int32Array) out = value;
  else if (Array.isArray(value)) {
    out = new Int32Array(value.length);
    for (let i = 0; i < value.length; i++) {
      const v = value[i];
      if (typeof v !== "number" || !Number.isInteger(v)) throw invalidArgument(`${what}[${i}] must be an integer token id`);
      out[i] = v;
      if (out[i] !== v) throw new GavelError(`${what}[${i}] = ${v} is not a token id (vocabulary size ${nVocab})`, "TOKEN_OUT_OF_VOCABULARY");
    }
  } else throw invalidArgument(`${what} must be an Int32Array or an array of token ids`);
  for (let i = 0; i < out.length; i++) {
    if (out[i] < 0 || out[i] >= nVocab) {
      throw new GavelError(`${what}[${i}] = ${out[i]} is not a token id (vocabulary size ${nVocab})`, "TOKEN_OUT_OF_VOCABULARY");
    }
  }
  return out;
}

export function intOption(value: unknown, name: string, lo: number, hi: number, dflt: number): number {
  if (value === undefined) return dflt;
  if (typeof value !== "number" || !Number.isInteger(value) || value < lo || value > hi) {
    throw invalidArgument(`${name} must be an integer in [${lo}, ${hi}], got ${String(value)}`);
  }
  return value;
}

export function boolOption(value: unknown, name: string, dflt: boolean): boolean {
  if (value === undefined) return dflt;
  if (typeof value !== "boolean") throw invalidArgument(`${name} must be a boolean, got ${typeof value}`);
  return value;
}

export function signalOption(value: unknown): AbortSignal | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "object" || value === null || typeof (value as AbortSignal).aborted !== "boolean") {
    throw invalidArgument("signal must be an AbortSignal");
  }
  return value as AbortSignal;
}

export function optionsObject(value: unknown, what: string): Record<string, unknown> {
  if (value === undefined) return {};
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw invalidArgument(`${what} must be an object`);
  return value as Record<string, unknown>;
}

export function abortedError(): GavelError {
  return new GavelError("the operation was aborted", "ABORTED");
}
