/**
 * Validation retrieval during training: Hit@1, R@10 and R@20 by the span mean m̄, the score the loss
 * trains; and the m̄ of one task against a whole bank, which the glance's hard negatives reuse.
 *
 * @module
 */
import { glance, KeyBank as NativeKeyBank, projectNormalize } from "gavel-router";
import { keptRows, type TrainingExample } from "./batch.js";

/** Retrieval by the training score m̄ over the whole library. */
export interface RetrievalMetrics {
  /** Fraction of tasks whose top skill (by m̄) is gold. */
  hit1: number;
  /** Mean over tasks of |top-10 ∩ gold| / |gold|. */
  recall10: number;
  /** Mean over tasks of |top-20 ∩ gold| / |gold| (the shortlist's size; the R@20 the training targets). */
  recall20: number;
  tasks: number;
}

/**
 * Unit keys of every skill, held natively ({@link NativeKeyBank}) so that each task's glance over the
 * whole library copies only its queries: a flat glance copies its bank per call, which at 30K skills
 * (~12M keys, ~12 GB in float32) made validation and the glance refresh minutes long. A whole-bank
 * glance runs on the device in a CUDA build (see `glanceDevice`). Dispose it when the round is over.
 */
export interface KeyBank {
  /** Per skill: rows × dim unit keys (empty: the skill never ranks). */
  parts: readonly Float32Array[];
  /** The same keys, held natively; column s of its glance is skill s. */
  native: NativeKeyBank;
  /** offsets[s] … offsets[s+1] − 1: the rows of skill s (as a packed bank would hold them). */
  offsets: Int32Array;
  dim: number;
  /** Frees the native keys (idempotent). */
  dispose(): void;
}

/** Holds per-skill unit keys natively, skill s as column s. */
export function packKeys(parts: readonly Float32Array[], dim: number): KeyBank {
  const offsets = new Int32Array(parts.length + 1);
  parts.forEach((k, i) => (offsets[i + 1] = offsets[i] + k.length / dim));
  const native = new NativeKeyBank(dim);
  try {
    for (const k of parts) native.add(k);
  } catch (e) {
    native.dispose();
    throw e;
  }
  return { parts, native, offsets, dim, dispose: () => native.dispose() };
}

/** The keys the trainer scores skills by: given keys (the fine-tune's covers), else normalize(W_s h). */
export async function projectKeys(skills: readonly Float32Array[], ws: Float32Array, nEmbd: number, dim: number, keys?: readonly Float32Array[]): Promise<KeyBank> {
  const parts = keys ?? (await Promise.all(skills.map((s) => (s.length > 0 ? projectNormalize(s, nEmbd, ws, dim) : new Float32Array(0)))));
  return packKeys(parts, dim);
}

/**
 * m̄(s) = mean over the task's tokens of max_j ⟨q_i, d^s_j⟩ for every skill of the bank (−∞ for a
 * skill without keys). With `mask`, that skill is scored over its unmasked keys (`keyRows` maps keys to
 * state rows when the keys are a cover).
 */
export async function spanMeanScores(queryUnit: Float32Array, kb: KeyBank, mask?: TrainingExample["mask"], keyRows?: readonly Int32Array[]): Promise<Float64Array> {
  const { dim, offsets } = kb;
  const N = kb.parts.length;
  const nq = queryUnit.length / dim;
  const mbar = new Float64Array(N);
  const { m } = await kb.native.glance(queryUnit, { k: 1 });
  for (let i = 0; i < nq; i++) for (let s = 0; s < N; s++) mbar[s] += m[i * N + s] / nq;
  for (let s = 0; s < N; s++) if (offsets[s + 1] === offsets[s]) mbar[s] = -Infinity;
  if (mask && offsets[mask.skill + 1] > offsets[mask.skill]) {
    const part = kb.parts[mask.skill];
    const keep = keptRows(part.length / dim, mask.ranges, keyRows?.[mask.skill]);
    if (keep) {
      const sub = new Float32Array(keep.length * dim);
      keep.forEach((r, j) => sub.set(part.subarray(r * dim, (r + 1) * dim), j * dim));
      const one = await glance(queryUnit, sub, Int32Array.of(0, keep.length), dim, { k: 1 });
      mbar[mask.skill] = one.m.reduce((t, x) => t + x, 0) / nq;
    }
  }
  return mbar;
}

/** Skill indices by descending score (ties by index). */
export function rankByScore(scores: Float64Array): number[] {
  return [...scores.keys()].sort((a, b) => scores[b] - scores[a] || a - b);
}

/**
 * Hit@1, R@10 and R@20 of `examples` against every skill, ranking by the span mean m̄(s) (what the
 * loss trains; the serving vote g is the router's business). `keys` replaces the W_s-projected states
 * with given unit keys per skill (the ε-cover banks of the fine-tune), `keyRows` their state rows (for
 * masks). A masked example's positive is scored without its masked rows, as in training.
 */
export async function evaluateRetrieval(
  examples: readonly TrainingExample[],
  skills: readonly Float32Array[],
  weights: { wq: Float32Array; ws: Float32Array },
  nEmbd: number,
  dim: number,
  keys?: readonly Float32Array[],
  keyRows?: readonly Int32Array[],
): Promise<RetrievalMetrics> {
  const tally = new RetrievalTally();
  if (examples.length === 0) return tally.metrics();
  const kb = await projectKeys(skills, weights.ws, nEmbd, dim, keys);
  try {
    for (const ex of examples) {
      const q = await projectNormalize(ex.query, nEmbd, weights.wq, dim);
      tally.add(ex, await spanMeanScores(q, kb, ex.mask, keyRows));
    }
  } finally {
    kb.dispose();
  }
  return tally.metrics();
}

/**
 * Hit@1, R@10 and R@20 summed over examples one score vector at a time, so that every way of
 * computing m̄ (the host's bank above, the trainer's resident store) ranks and counts alike.
 */
export class RetrievalTally {
  private hit = 0;
  private rec10 = 0;
  private rec20 = 0;
  private n = 0;

  /** Counts one example, `scores` its m̄ over every skill. */
  add(ex: Pick<TrainingExample, "positives">, scores: Float64Array): void {
    const order = rankByScore(scores);
    const gold = new Set(ex.positives);
    if (gold.has(order[0])) this.hit++;
    this.rec10 += order.slice(0, 10).filter((s) => gold.has(s)).length / gold.size;
    this.rec20 += order.slice(0, 20).filter((s) => gold.has(s)).length / gold.size;
    this.n++;
  }

  /** The means so far (all 0 before any example). */
  metrics(): RetrievalMetrics {
    const n = this.n;
    if (n === 0) return { hit1: 0, recall10: 0, recall20: 0, tasks: 0 };
    return { hit1: this.hit / n, recall10: this.rec10 / n, recall20: this.rec20 / n, tasks: n };
  }
}
