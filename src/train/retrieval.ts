/**
 * Validation retrieval during training: Hit@1 and R@10 by the span mean m̄, the score the loss
 * trains.
 *
 * @module
 */
import { glance, projectNormalize } from "../kernels/kernels.js";
import type { TrainingExample } from "./batch.js";

/** Retrieval by the training score m̄ over the whole library. */
export interface RetrievalMetrics {
  /** Fraction of tasks whose top skill (by m̄) is gold. */
  hit1: number;
  /** Mean over tasks of |top-10 ∩ gold| / |gold|. */
  recall10: number;
  tasks: number;
}

/**
 * Hit@1 and R@10 of `examples` against every skill, ranking by the span mean m̄(s) (what the loss
 * trains; the serving vote g is the router's business). `keys` replaces the W_s-projected states
 * with given unit keys per skill (the ε-cover banks of the fine-tune).
 */
export async function evaluateRetrieval(
  examples: readonly TrainingExample[],
  skills: readonly Float32Array[],
  weights: { wq: Float32Array; ws: Float32Array },
  nEmbd: number,
  dim: number,
  keys?: readonly Float32Array[],
): Promise<RetrievalMetrics> {
  if (examples.length === 0) return { hit1: 0, recall10: 0, tasks: 0 };
  const bankParts = keys ?? (await Promise.all(skills.map((s) => (s.length > 0 ? projectNormalize(s, nEmbd, weights.ws, dim) : new Float32Array(0)))));
  const offsets = new Int32Array(bankParts.length + 1);
  bankParts.forEach((k, i) => (offsets[i + 1] = offsets[i] + k.length / dim));
  const bank = new Float32Array(offsets[bankParts.length] * dim);
  bankParts.forEach((k, i) => bank.set(k, offsets[i] * dim));
  const N = bankParts.length;
  let hit = 0;
  let rec = 0;
  for (const ex of examples) {
    const q = await projectNormalize(ex.query, nEmbd, weights.wq, dim);
    const nq = q.length / dim;
    const { m } = await glance(q, bank, offsets, dim, { k: 1 });
    const mbar = new Float64Array(N);
    for (let i = 0; i < nq; i++) for (let s = 0; s < N; s++) mbar[s] += m[i * N + s] / nq;
    // Skills without keys never rank.
    for (let s = 0; s < N; s++) if (offsets[s + 1] === offsets[s]) mbar[s] = -Infinity;
    const order = [...mbar.keys()].sort((a, b) => mbar[b] - mbar[a] || a - b);
    const gold = new Set(ex.positives);
    if (gold.has(order[0])) hit++;
    rec += order.slice(0, 10).filter((s) => gold.has(s)).length / gold.size;
  }
  return { hit1: hit / examples.length, recall10: rec / examples.length, tasks: examples.length };
}
