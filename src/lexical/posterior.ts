/**
 * The lexical expert B: BM25 read as a log posterior of the skill given the task,
 * B(s) = log softmax_s(BM25(s) / T) over the library, so B ≤ 0 and Σ_s exp B(s) = 1. It joins the
 * ruling as a fourth expert, S = g + αL + γV + βB (src/route/ruling.ts).
 *
 * Within one task the normaliser log Σ exp(BM25/T) is the same for every skill, so any ranking by
 * g + βB (and the ruling's order) depends only on β/T; T sets B's absolute scale, which is what a
 * decision across tasks (abstention) reads. `gavel calibrate` fits T by the likelihood of the gold
 * under this posterior, then β by Hit@1.
 *
 * @module
 */
import { invalidArgument } from "../errors.js";

/**
 * log Σ_i exp(scores[i] / T), stable; −∞ for no scores or when every score is −∞ (log 0). When the
 * largest score over T overflows a double (T tiny against the scores), the true value is +∞, and
 * that is what comes back.
 */
export function logPartition(scores: ArrayLike<number>, temperature: number): number {
  checkTemperature(temperature);
  let mx = -Infinity;
  for (let i = 0; i < scores.length; i++) mx = Math.max(mx, scores[i] / temperature);
  if (mx === -Infinity) return -Infinity;
  if (mx === Infinity) return Infinity;
  let s = 0;
  for (let i = 0; i < scores.length; i++) s += Math.exp(scores[i] / temperature - mx);
  return mx + Math.log(s);
}

/**
 * B for every document: scores / T − log Σ exp(scores / T), in the scores' order.
 *
 * Defined wherever the scores are finite or −∞: when the largest score over T overflows a double, B is
 * read as (s − max s)/T − log Σ exp((s − max s)/T), the same quantity (the best scores get their share
 * of 1, the rest −∞ or what their distance gives); when every score is −∞ (no document can match), B
 * is uniform, −log N each, as for scores all equal. Ordinary inputs (max s / T finite) are computed
 * as scores / T − {@link logPartition}, bit for bit.
 */
export function lexicalPosterior(scores: ArrayLike<number>, temperature: number): Float64Array {
  const z = logPartition(scores, temperature);
  const out = new Float64Array(scores.length);
  if (Number.isFinite(z)) {
    for (let i = 0; i < scores.length; i++) out[i] = scores[i] / temperature - z;
    return out;
  }
  if (z === -Infinity) return out.fill(0 - Math.log(scores.length)); // every score −∞ (or none); 0 − for +0 at N = 1
  if (z !== Infinity) {
    // a NaN score gives NaN
    for (let i = 0; i < scores.length; i++) out[i] = scores[i] / temperature - z;
    return out;
  }
  let top = -Infinity;
  for (let i = 0; i < scores.length; i++) top = Math.max(top, scores[i]);
  let s = 0;
  for (let i = 0; i < scores.length; i++) s += Math.exp((scores[i] - top) / temperature);
  const logS = Math.log(s);
  for (let i = 0; i < scores.length; i++) out[i] = (scores[i] - top) / temperature - logS;
  return out;
}

function checkTemperature(t: number): void {
  if (!(t > 0) || !Number.isFinite(t)) throw invalidArgument(`lexical temperature must be finite and > 0 (got ${t})`);
}
