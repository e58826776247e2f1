/**
 * The verdict's read-outs and the ruling (paper, sections 3.4–3.5): L is the mean log-likelihood of
 * the task tokens with the skill as prefix, V the log-odds of yes over no after the question, and
 * S = g + αL + γV, a product of experts.
 */

/** log Σ exp(x) over the given values, stable. */
export function logSumExp(values: ArrayLike<number>): number {
  let mx = -Infinity;
  for (let i = 0; i < values.length; i++) mx = Math.max(mx, values[i]);
  if (mx === -Infinity) return -Infinity;
  let s = 0;
  for (let i = 0; i < values.length; i++) s += Math.exp(values[i] - mx);
  return mx + Math.log(s);
}

/** L = mean of logprobs over [start, end). */
export function meanLogLikelihood(logprobs: Float32Array, start: number, end: number): number {
  if (end <= start) return 0;
  let s = 0;
  for (let i = start; i < end; i++) s += logprobs[i];
  return s / (end - start);
}

/**
 * V = log Σ_{yes} p − log Σ_{no} p, from the log-probs `final` of the read ids, the first `nYes` of
 * which are the yes spellings. 0 when either set is empty (the vocabulary has no single-token
 * spelling), so V then abstains from the ruling.
 */
export function yesNoLogOdds(final: Float32Array, nYes: number): number {
  const yes = final.subarray(0, nYes);
  const no = final.subarray(nYes);
  if (yes.length === 0 || no.length === 0) return 0;
  return logSumExp(yes) - logSumExp(no);
}

/** The candidates the verdict examines: g within Δ of the best, at most `max`, best first. */
export function shortlist<T extends { g: number }>(ranked: T[], delta: number, max: number): T[] {
  if (ranked.length === 0) return [];
  const best = ranked[0].g;
  const out: T[] = [];
  for (const c of ranked) {
    if (out.length >= max || c.g < best - delta) break;
    out.push(c);
  }
  return out;
}

/** S = g + αL + γV. */
export function ruling(g: number, L: number, V: number, alpha: number, gamma: number): number {
  return g + alpha * L + gamma * V;
}
