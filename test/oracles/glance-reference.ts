/**
 * Plain float64 reference implementations of the router's kernels: the definitions of the paper
 * written as loops, with no blocking, threads or float32. They document what the native kernels
 * in `kernels.ts` compute and serve as the oracle of their tests; they are far too slow for a real
 * library. Conventions (empty banks, ties) match the native kernels exactly.
 *
 * @module
 */

/** Row `i` of a row-major matrix with `dim` columns, as a subarray view. */
export function row(matrix: Float32Array | Float64Array, i: number, dim: number): Float32Array | Float64Array {
  return matrix.subarray(i * dim, (i + 1) * dim);
}

/** ⟨a, b⟩ in float64. */
export function dot(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let s = 0;
  for (let d = 0; d < a.length; d++) s += a[d] * b[d];
  return s;
}

/** ‖a − b‖ in float64. */
export function distance(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let s = 0;
  for (let d = 0; d < a.length; d++) {
    const x = a[d] - b[d];
    s += x * x;
  }
  return Math.sqrt(s);
}

/**
 * Farthest-first traversal (Gonzalez): retain key 0, then repeatedly the key farthest from the
 * retained set (lowest index on ties), until every key lies within `eps` of a retained one.
 * Returns retained indices in retention order.
 */
export function referenceCover(keys: Float32Array, dim: number, eps: number): number[] {
  const n = keys.length / dim;
  if (n === 0) return [];
  const kept = [0];
  const mind = new Float64Array(n);
  for (let j = 0; j < n; j++) mind[j] = distance(row(keys, 0, dim), row(keys, j, dim));
  for (;;) {
    let far = 0;
    for (let j = 1; j < n; j++) if (mind[j] > mind[far]) far = j;
    if (mind[far] <= eps) return kept;
    kept.push(far);
    for (let j = 0; j < n; j++) mind[j] = Math.min(mind[j], distance(row(keys, far, dim), row(keys, j, dim)));
  }
}

/**
 * Max-sim of Eq. (1) for one query against one bank (rows `from` … `to − 1`): the best inner
 * product and the index of the key attaining it relative to `from` (lowest on ties). An empty bank
 * gives `{ m: −1, argmax: −1 }`.
 */
export function referenceMaxSim(
  query: ArrayLike<number>,
  bank: Float32Array,
  dim: number,
  from = 0,
  to = bank.length / dim,
): { m: number; argmax: number } {
  if (to <= from) return { m: -1, argmax: -1 };
  let m = -Infinity;
  let argmax = -1;
  for (let j = from; j < to; j++) {
    const v = dot(query, row(bank, j, dim));
    if (v > m) {
      m = v;
      argmax = j - from;
    }
  }
  return { m, argmax };
}

/**
 * The top-k set T_i of one row of scores: the k indices ranking highest, ties to the lower index
 * (all indices when k ≥ the row's length). Returned sorted by rank.
 */
export function referenceTopK(scores: ArrayLike<number>, k: number): number[] {
  const idx = Array.from({ length: scores.length }, (_, s) => s);
  idx.sort((a, b) => scores[b] - scores[a] || a - b);
  return idx.slice(0, Math.min(k, idx.length));
}

/**
 * The vote of Eq. (3) from a full table of scores m (nq × nSkills, row-major):
 * g(s) = Σ_{i : s ∈ T_i} w_i m_i(s) / Σ_i w_i.
 */
export function referenceVote(m: ArrayLike<number>, nq: number, nSkills: number, weights: ArrayLike<number>, k: number): Float64Array {
  const g = new Float64Array(nSkills);
  let W = 0;
  for (let i = 0; i < nq; i++) W += weights[i];
  for (let i = 0; i < nq; i++) {
    const rowScores = Array.from({ length: nSkills }, (_, s) => m[i * nSkills + s]);
    for (const s of referenceTopK(rowScores, k)) g[s] += weights[i] * rowScores[s];
  }
  for (let s = 0; s < nSkills; s++) g[s] /= W;
  return g;
}

/** Float64 result of {@link referenceGlance}, laid out like the native glance's. */
export interface ReferenceGlanceResult {
  g: Float64Array;
  m: Float64Array;
  argmax: Int32Array;
}

/** The whole glance (Eqs. 1 and 3) in float64, with the native kernel's conventions. */
export function referenceGlance(
  queries: Float32Array,
  bank: Float32Array,
  offsets: Int32Array,
  dim: number,
  weights: ArrayLike<number>,
  k: number,
): ReferenceGlanceResult {
  const nq = queries.length / dim;
  const nSkills = offsets.length - 1;
  const m = new Float64Array(nq * nSkills);
  const argmax = new Int32Array(nq * nSkills);
  for (let i = 0; i < nq; i++) {
    for (let s = 0; s < nSkills; s++) {
      const r = referenceMaxSim(row(queries, i, dim), bank, dim, offsets[s], offsets[s + 1]);
      m[i * nSkills + s] = r.m;
      argmax[i * nSkills + s] = r.argmax;
    }
  }
  return { g: referenceVote(m, nq, nSkills, weights, k), m, argmax };
}

/**
 * The projection into the routing space in float64: for each row h of `states` (n × inDim),
 * `y = W h / ‖W h‖` with W row-major outDim × inDim; a row with W h = 0 stays zero (the native
 * kernel's convention).
 */
export function referenceProjectNormalize(states: Float32Array, inDim: number, W: Float32Array, outDim: number): Float64Array {
  const n = states.length / inDim;
  const y = new Float64Array(n * outDim);
  for (let i = 0; i < n; i++) {
    const h = row(states, i, inDim);
    let ss = 0;
    for (let o = 0; o < outDim; o++) {
      const v = dot(row(W, o, inDim), h);
      y[i * outDim + o] = v;
      ss += v * v;
    }
    if (ss === 0) continue;
    const norm = Math.sqrt(ss);
    for (let o = 0; o < outDim; o++) y[i * outDim + o] /= norm;
  }
  return y;
}
