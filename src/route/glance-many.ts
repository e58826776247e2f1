/**
 * The glances of several tasks over one bank from one native call (the resident router batches the
 * glances of concurrent requests: src/serve/glance-scheduler.ts).
 *
 * {@link glanceMany} stacks the tasks' query rows into one {@link KeyBank.glance} call that returns
 * every (row, skill) max-sim m, then takes each task's vote from its own rows exactly as the native
 * vote does (native/src/kernels/kernels_core.cpp, `Vote`): per row the top-k skills by m (ties to the
 * lower column), their m summed in double in row order with the row's weight, divided by the
 * weights' sum in double, rounded to float32. A row's m does not depend on the other rows of the call
 * (each inner product is its own lane of the max-sim kernel), so each task's g is bit for bit the g of
 * its own glance (test/unit/serve-glance-many.test.ts).
 *
 * {@link routeGlances} lets a resident server take over the glance calls of the route
 * (src/route/glance.ts) for one bank, as {@link Model.routeHiddenStates} does for the forward passes.
 *
 * @module
 */
import type { KeyBank, KeyBankGlanceResult } from "../bank/key-bank.js";
import { glanceDevice } from "../bank/key-bank.js";
import { invalidArgument } from "../errors.js";

/** One task's glance: its query rows (nq × dim) and their vote weights (nq). */
export interface GlanceTask {
  queries: Float32Array;
  weights: Float32Array;
}

/** What the tasks of one {@link glanceMany} call share. */
export interface GlanceManyOptions {
  /** Top-k of the vote. */
  k: number;
  /** The columns (as {@link KeyBank.glance}'s `handles`); default every skill. */
  handles?: Int32Array;
  signal?: AbortSignal;
}

/**
 * Each task's glance result as `keys.glance(task.queries, { weights, k, handles, detail: 0 })` gives
 * it on the CPU (g and handles; no m or argmax), from one native call over all their rows.
 */
export async function glanceMany(keys: KeyBank, tasks: readonly GlanceTask[], options: GlanceManyOptions): Promise<KeyBankGlanceResult[]> {
  const { k, handles, signal } = options;
  const dim = keys.dim;
  for (const t of tasks) if (t.queries.length !== t.weights.length * dim) throw invalidArgument(`a task's queries must be its weights' length × ${dim}`);
  const rows = tasks.reduce((n, t) => n + t.queries.length / dim, 0);
  const queries = new Float32Array(rows * dim);
  const weights = new Float32Array(rows);
  let at = 0;
  for (const t of tasks) {
    queries.set(t.queries, at * dim);
    weights.set(t.weights, at);
    at += t.weights.length;
  }
  // every column's m and argmax (no `detail`): the per-task votes are read from m
  const all = await keys.glance(queries, { weights, k, ...(handles ? { handles } : {}), ...(signal ? { signal } : {}) });
  const n = all.handles.length;
  const kk = Math.min(k, n);
  const top = new Int32Array(kk);
  const out: KeyBankGlanceResult[] = [];
  let row = 0;
  for (const t of tasks) {
    const nq = t.weights.length;
    let W = 0;
    for (let i = 0; i < nq; i++) W += t.weights[i];
    const acc = new Float64Array(n);
    for (let i = 0; i < nq; i++, row++) {
      const w = t.weights[i];
      if (w === 0) continue;
      const m = all.m.subarray(row * n, (row + 1) * n);
      topK(m, kk, top);
      for (let j = 0; j < kk; j++) acc[top[j]] += w * m[top[j]];
    }
    const g = new Float32Array(n);
    for (let s = 0; s < n; s++) g[s] = acc[s] / W;
    out.push({ g, m: new Float32Array(0), argmax: new Int32Array(0), handles: Int32Array.from(all.handles), columns: new Int32Array(0) });
  }
  return out;
}

/**
 * The k columns of row m ranking highest (higher m, or equal m and lower column), written to
 * out[0..k): the native TopK's set (kernels_core.cpp), kept sorted best first as columns arrive.
 */
function topK(m: Float32Array, k: number, out: Int32Array): void {
  let size = 0;
  for (let s = 0; s < m.length; s++) {
    const v = m[s];
    if (size === k && !(v > m[out[k - 1]])) continue;
    let pos = size < k ? size++ : k - 1;
    while (pos > 0 && v > m[out[pos - 1]]) {
      out[pos] = out[pos - 1];
      pos--;
    }
    out[pos] = s;
  }
}

/** Whether {@link glanceMany} gives each task its own glance bit for bit here: CPU glances only (a device glance rounds to f16). */
export function glancesMerge(): boolean {
  return glanceDevice().device === "cpu";
}

/** A glance call of the route (one task, `detail: 0`), as a resident server takes it over. */
export type GlanceVia = (keys: KeyBank, task: GlanceTask, options: GlanceManyOptions) => Promise<KeyBankGlanceResult>;

const vias = new WeakMap<KeyBank, GlanceVia>();

/** Sends the route's glance calls over `keys` through `via` (a resident server's batching), or directly again (null). */
export function routeGlances(keys: KeyBank, via: GlanceVia | null): void {
  if (via) vias.set(keys, via);
  else vias.delete(keys);
}

/** Where the route's glance calls over `keys` go, when a server took them over. */
export function glanceVia(keys: KeyBank): GlanceVia | undefined {
  return vias.get(keys);
}
