/**
 * The parts of {@link Model.hiddenStatesMany} that need no model state: its arguments checked, and
 * its native call (the addon's multi-sequence verb, or one task after another on an addon built
 * before it).
 *
 * @module
 */
import { GavelError, invalidArgument } from "../errors.js";
import type { NativeModel } from "../native/binding.js";
import { throwIfAborted, toTokens } from "../util/validate.js";

/** One (prefix, continuation) pair of a score call, checked. */
export interface ScoreRequest {
  prefix: Int32Array;
  continuation: Int32Array;
}

/** Where {@link Model.routeScores} sends score calls: each request's log-probs, read ids after its last token. */
export type ScoresVia = (requests: ScoreRequest[], readIds: Int32Array, signal?: AbortSignal) => Promise<{ logprobs: Float32Array; final: Float32Array }[]>;

/** Where {@link Model.routeHiddenStates} sends single-layer hidden-states calls. */
export type StatesVia = (tokens: Int32Array, layer: number, signal?: AbortSignal) => Promise<Float32Array>;

/** What {@link Model.hiddenQueries} projects: rows [from, to) of the states, by W (dim × nEmbd), normalised. */
export interface QueryProjection {
  from: number;
  to: number;
  W: Float32Array;
  dim: number;
}

/** Where {@link Model.routeQueries} sends hiddenQueries calls (checked). */
export type QueriesVia = (tokens: Int32Array, layer: number, projection: QueryProjection, signal?: AbortSignal) => Promise<Float32Array>;

/** The tasks as token arrays, each non-empty, in the vocabulary and within the context. */
export function checkTasks(tasks: (Int32Array | number[])[], nVocab: number, contextSize: number): Int32Array[] {
  if (!Array.isArray(tasks) || tasks.length === 0) throw invalidArgument("tasks must be a non-empty array of token arrays");
  return tasks.map((x, i) => {
    const t = toTokens(x, `tasks[${i}]`, nVocab);
    if (t.length === 0) throw invalidArgument(`tasks[${i}] must not be empty`);
    if (t.length > contextSize) throw new GavelError(`tasks[${i}]: ${t.length} tokens exceed the context size ${contextSize}`, "CONTEXT_OVERFLOW");
    return t;
  });
}

/** The native call: one multi-sequence call, or one call a task where the addon lacks the verb. */
export async function nativeStatesMany(n: NativeModel, tasks: Int32Array[], layers: Int32Array, signal?: AbortSignal): Promise<Float32Array[][]> {
  if (n.hiddenStatesMany) return n.hiddenStatesMany(tasks, layers);
  const out: Float32Array[][] = [];
  for (const t of tasks) {
    throwIfAborted(signal, "hiddenStatesMany");
    out.push(await n.hiddenStates(t, layers));
  }
  return out;
}
