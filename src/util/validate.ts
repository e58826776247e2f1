/**
 * Argument checks, written once for every facade: each failure is a GavelError with code
 * INVALID_ARGUMENT (or a more specific one, e.g. LAYER_OUT_OF_RANGE), raised before anything reaches
 * llama.cpp or the kernels.
 */
import { GavelError, invalidArgument, clip, optionError, type OptionNames } from "../errors.js";

/** The largest value an int32 argument of the addon takes. */
export const INT32_MAX = 0x7fffffff;

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

/** Whether `v` is a non-negative safe integer (a count, an offset, a row index). */
export function isUint(v: unknown): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
}

/**
 * `value` as an integer in [lo, hi] (hi defaults to {@link INT32_MAX}, what the addon takes).
 * @throws GavelError `INVALID_ARGUMENT` naming `name` and the range otherwise (with `asOption`, an option's refusal: `GavelError.option` is `name`)
 */
export function checkInt(value: unknown, name: string, lo: number, hi = INT32_MAX, asOption = false): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < lo || value > hi) {
    const top = hi === INT32_MAX ? "2^31 - 1" : String(hi);
    const got = describeValue(value);
    const words = (n: OptionNames) => `${n(name)} must be an integer in [${lo}, ${top}], got ${got}`;
    throw asOption ? optionError(words, "INVALID_ARGUMENT", name) : invalidArgument(words((o) => o));
  }
  return value;
}

/** `String(value)` for a message ({@link clip}ped), never throwing (an object without a prototype, or whose toString throws). */
export function valueText(value: unknown): string {
  try {
    return clip(String(value));
  } catch {
    return describeValue(value);
  }
}

/** A value as an error message shows it: a number as is, anything else with its type (the string "256", not 256). */
export function describeValue(value: unknown): string {
  if (typeof value === "number") return String(value);
  if (typeof value === "string") return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  if (typeof value === "function") return "a function";
  return `the ${typeof value} ${String(value)}`;
}

/** An optional integer option: `dflt` when undefined, else {@link checkInt}, its refusal naming the option (`GavelError.option`). */
export function intOption(value: unknown, name: string, lo: number, hi: number, dflt: number): number {
  return value === undefined ? dflt : checkInt(value, name, lo, hi, true);
}

/** Bounds of {@link checkFinite}; each is optional. */
export interface FiniteBounds {
  /** value ≥ min. */
  min?: number;
  /** value > above. */
  above?: number;
}

/**
 * `value` as a finite number within `bounds`.
 * @throws GavelError `INVALID_ARGUMENT` naming `name` otherwise
 */
export function checkFinite(value: unknown, name: string, bounds: FiniteBounds = {}): number {
  if (typeof value !== "number" || !Number.isFinite(value)) throw invalidArgument(`${name} must be a finite number, got ${describeValue(value)}`);
  if (bounds.min !== undefined && value < bounds.min) throw invalidArgument(`${name} must be ≥ ${bounds.min}, got ${value}`);
  if (bounds.above !== undefined && value <= bounds.above) throw invalidArgument(`${name} must be > ${bounds.above}, got ${value}`);
  return value;
}

/** An optional boolean option: `dflt` when undefined. */
export function boolOption(value: unknown, name: string, dflt: boolean): boolean {
  if (value === undefined) return dflt;
  if (typeof value !== "boolean") throw invalidArgument(`${name} must be a boolean, got ${typeof value}`);
  return value;
}

/** An optional string option: `undefined` passes through; else a string, non-empty with `nonEmpty`. */
export function stringOption(value: unknown, name: string, nonEmpty = false): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || (nonEmpty && value === "")) throw invalidArgument(`${name} must be a ${nonEmpty ? "non-empty " : ""}string, got ${describeValue(value)}`);
  return value;
}

/** An optional path option: `undefined` passes through; else a non-empty string without a NUL byte. */
export function pathOption(value: unknown, name: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || value === "" || value.includes("\0")) throw invalidArgument(`${name} must be a non-empty path (a string without NUL bytes), got ${describeValue(value)}`);
  return value;
}

/** An optional option from a fixed set of values: `undefined` passes through. */
export function enumOption<T extends string | boolean>(value: unknown, name: string, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (!allowed.includes(value as T)) throw invalidArgument(`${name} must be ${allowed.map((a) => JSON.stringify(a)).join(" or ")}, got ${describeValue(value)}`);
  return value as T;
}

/** An optional function option: `undefined` passes through. */
export function functionOption<F extends (...args: never[]) => unknown>(value: unknown, name: string): F | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "function") throw invalidArgument(`${name} must be a function, got ${describeValue(value)}`);
  return value as F;
}

/**
 * An optional AbortSignal option. Checked by shape, not by class: any object with a boolean `aborted`
 * and `addEventListener` / `removeEventListener` functions passes (what the verbs use, with `reason`),
 * so a signal from another realm (a `vm` context, an iframe, another copy of a polyfill) is taken.
 */
export function signalOption(value: unknown): AbortSignal | undefined {
  if (value === undefined) return undefined;
  const s = value as AbortSignal;
  if (typeof value !== "object" || value === null || typeof s.aborted !== "boolean" || typeof s.addEventListener !== "function" || typeof s.removeEventListener !== "function") {
    throw invalidArgument("signal must be an AbortSignal");
  }
  return value as AbortSignal;
}

/**
 * An options argument: `{}` when undefined, else it must be a plain object. With `known` (an object
 * literal typed `Record<keyof TheOptions, true>`, so the compiler keeps it complete and exact), a key
 * the options type does not have is refused: a misspelt option fails instead of being ignored.
 *
 * @throws GavelError `INVALID_ARGUMENT` naming the unknown key, the nearest known one, and the known ones
 */
export function optionsObject(value: unknown, what: string, known?: Readonly<Record<string, true>>): Record<string, unknown> {
  if (value === undefined) return {};
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw invalidArgument(`${what} must be an object`);
  if (known) {
    for (const key of Object.keys(value)) {
      if (Object.prototype.hasOwnProperty.call(known, key)) continue;
      const names = Object.keys(known);
      const near = nearest(key, names);
      throw invalidArgument(`unknown option ${JSON.stringify(clip(key))} in ${what}${near ? ` (did you mean ${near}?)` : ""}; the options are ${names.join(", ")}`);
    }
  }
  return value as Record<string, unknown>;
}

/** The known name within edit distance 2 of `key` (case ignored), the closest; undefined when none. */
export function nearest(key: string, names: readonly string[]): string | undefined {
  const a = key.toLowerCase();
  let best: string | undefined;
  let bestD = 3;
  for (const name of names) {
    const d = editDistance(a, name.toLowerCase());
    if (d < bestD) [best, bestD] = [name, d];
  }
  return best;
}

/**
 * Damerau–Levenshtein distance (optimal string alignment: an adjacent swap counts as one edit), exact
 * up to 2; past that, some number over 2 (a long argument, a whole task, is not compared letter by
 * letter). What {@link nearest} and the CLI's `did you mean` measure.
 */
export function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 2) return 3;
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/**
 * The ℓ* range check, the one place it is written: `layer` must be an integer in [0, nLayer).
 * `what` names the value in the message (e.g. `"Projections: layer"`, `"<file>: layer"`).
 *
 * @throws GavelError `LAYER_OUT_OF_RANGE` otherwise
 */
export function checkLayer(layer: unknown, nLayer: number, what = "layer"): number {
  if (typeof layer !== "number") throw new GavelError(`${what} must be an integer layer index (0..${nLayer - 1}), got ${describeValue(layer)}`, "LAYER_OUT_OF_RANGE");
  if (!Number.isInteger(layer) || layer < 0 || layer >= nLayer) {
    throw new GavelError(`${what} ${String(layer)} is out of range: the model has ${nLayer} layers (0..${nLayer - 1})`, "LAYER_OUT_OF_RANGE");
  }
  return layer;
}

/**
 * The error every verb rejects with once its AbortSignal aborts: a GavelError `ABORTED` whose message
 * names the verb (`"Router.route: the operation was aborted"`) and whose `cause` is the signal's
 * reason (a DOMException `AbortError` for `controller.abort()`, `TimeoutError` for
 * `AbortSignal.timeout`, or the value given to `abort(reason)`).
 */
export function abortedError(verb: string, signal?: AbortSignal): GavelError {
  return new GavelError(`${verb}: the operation was aborted`, "ABORTED", signal === undefined ? undefined : { cause: signal.reason });
}

/** Throws {@link abortedError} when `signal` has aborted. */
export function throwIfAborted(signal: AbortSignal | undefined, verb: string): void {
  if (signal?.aborted) throw abortedError(verb, signal);
}

/**
 * `err` as the verb's abort error when it is an `ABORTED` GavelError (a native check's, an inner
 * stage's) and `signal` has aborted; else `err` itself (an ABORTED that no signal of the caller's
 * made, such as a dispose stopping a running call, stays as it is).
 */
export function asAborted(err: unknown, verb: string, signal: AbortSignal | undefined): unknown {
  const aborted = err instanceof GavelError && err.code === "ABORTED";
  return aborted && signal?.aborted ? abortedError(verb, signal) : err;
}

/**
 * `work`, or the verb's {@link abortedError} as soon as `signal` aborts (at once when it already has):
 * the race every verb runs when its work cannot stop at once (a worker's tokenization, a native
 * glance, a queued call's wait). What `work` goes on to do is dropped; its listener on `signal` is
 * removed when `work` settles. `onAbort` runs after the rejection, once, to tell the work to stop;
 * an error it throws is dropped (the verb has already rejected, and a throw from an abort listener
 * would be the process's uncaught exception).
 */
export function untilAborted<T>(work: Promise<T>, verb: string, signal: AbortSignal | undefined, onAbort?: () => void): Promise<T> {
  if (signal === undefined) return work;
  return new Promise<T>((resolve, reject) => {
    const abort = () => {
      reject(abortedError(verb, signal));
      try {
        onAbort?.();
      } catch {
        // the work is gone already (disposed) or stops at its own next check
      }
    };
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", abort));
    if (signal.aborted) abort();
    else signal.addEventListener("abort", abort, { once: true });
  });
}

/**
 * A call in a serial queue: `start` runs once `turn` (the queue's tail, which never rejects) settles,
 * and `reply` gives the caller an outcome (`run`'s, or one derived from it) or, with a signal, the
 * verb's {@link abortedError} as soon as the signal aborts while the call waits. The wait is raced
 * before `start` is chained, so once the turn has come `start` alone answers an abort (it refuses
 * without work when the signal has aborted), and the queue's next tail comes from `run` either way.
 */
export function afterTurn<T>(turn: Promise<unknown>, start: () => Promise<T>, verb: string, signal: AbortSignal | undefined): { run: Promise<T>; reply: (outcome: Promise<T>) => Promise<T> } {
  const waited = signal === undefined ? undefined : untilAborted(turn, verb, signal);
  const run = turn.then(start, start);
  return { run, reply: (outcome) => (waited ? waited.then(() => outcome) : outcome) };
}

/**
 * Runs a verb's work under its signal: an already-aborted signal rejects before `work` starts, and
 * an abort while it runs rejects with the verb's own {@link abortedError}, whichever stage noticed it.
 * A read (`writes` false) whose signal aborted before its promise settled rejects even when the work
 * got to its end; a write that got to its end resolves (what it did is done).
 */
export async function abortable<T>(verb: string, signal: AbortSignal | undefined, work: () => Promise<T>, writes = false): Promise<T> {
  throwIfAborted(signal, verb);
  let result: T;
  try {
    result = await work();
  } catch (err) {
    throw asAborted(err, verb, signal);
  }
  if (!writes) throwIfAborted(signal, verb);
  return result;
}
