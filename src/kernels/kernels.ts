/**
 * The router's numeric kernels: the farthest-first ε-cover that compresses a skill's bank at
 * installation (paper §3.3, appendix D), the projection of hidden states into the routing space
 * (y = normalize(W h), W_q / W_s of §3.2), and the glance, max-sim plus top-k vote over every bank
 * (paper §3.2, Eqs. 1 and 3), either over one flat bank ({@link glance}) or over a {@link KeyBank}
 * that keeps every skill's keys in native memory across glances. The loops run in C++
 * (native/src/kernels); these wrappers validate arguments in TypeScript first so that mistakes
 * surface as a {@link GavelError} with code `INVALID_ARGUMENT` and a message naming the argument.
 * The native side checks everything again.
 *
 * @module
 */
import { invalidArgument } from "../errors.js";
import { loadBinding, type NativeGlanceResult } from "../native/binding.js";
import { checkFloat32, checkInt, checkRows, resolveWeights } from "./args.js";
import { optionsObject, valueText } from "../util/validate.js";

/** Results of {@link glance}; see {@link NativeGlanceResult}. */
export type GlanceResult = NativeGlanceResult;

/**
 * ε-cover of one skill's keys by farthest-first traversal (Gonzalez): starting from key 0, keep
 * retaining the key farthest from those retained until every key lies within `eps` (Euclidean) of
 * one. The result is both an ε-cover and ε-separated (appendix D, Proposition 2), so by
 * Proposition 1 a glance over the retained keys lowers each max-sim score by at most `eps` and
 * raises none.
 *
 * Runs synchronously (one skill, at installation; O(n·|C|·dim) with triangle-inequality pruning).
 * Distances are computed in float32: "within eps" holds up to ~1e-6 for unit keys.
 *
 * @param keys - n × dim row-major unit keys (not renormalised here).
 * @param dim - key dimension, integer ≥ 1.
 * @param eps - cover radius, finite and ≥ 0 (0 keeps every distinct key).
 * @returns the retained row indices, in retention order (key 0 first; empty for n = 0).
 * @throws GavelError `INVALID_ARGUMENT` on a wrong type, a length not a multiple of dim, a bad
 *   eps, or non-finite keys.
 */
export function coverFarthestFirst(keys: Float32Array, dim: number, eps: number): Int32Array {
  checkFloat32(keys, "keys");
  checkInt(dim, "dim", 1);
  if (typeof eps !== "number" || !Number.isFinite(eps) || eps < 0) {
    throw invalidArgument(`eps must be a finite number >= 0, got ${valueText(eps)}`);
  }
  checkRows(keys, dim, "keys");
  return loadBinding().coverFarthestFirst(keys, dim, eps);
}

/**
 * The vote size k of Eq. (3): `min(10, max(3, round(0.1·N)))` for a library of N skills, i.e. 3 up
 * to N = 34, 10 from N = 95 on.
 *
 * `round` is round-half-up (`Math.round(N / 10)`); it differs from Python's round-half-even only at
 * N = 45, 65, 85 (5, 7, 9 here against 4, 6, 8).
 *
 * @param nSkills - library size N, integer ≥ 0.
 */
export function voteK(nSkills: number): number {
  if (typeof nSkills !== "number" || !Number.isInteger(nSkills) || nSkills < 0) {
    throw invalidArgument(`nSkills must be a non-negative integer, got ${valueText(nSkills)}`);
  }
  return Math.min(10, Math.max(3, Math.round(nSkills / 10)));
}

/** The largest vote size a share gives (each row's top k are kept per row and thread). */
export const MAX_VOTE_K = 1024;

/**
 * The vote size of a route's glance over N skills: the paper's {@link voteK}, or, with a vote share
 * s > 0, a token's vote reaching the same share of any library: `max(voteK(N), round(s·N))`, at most
 * {@link MAX_VOTE_K}. Over a large library a token (a word) is kept by a number of skills that grows
 * with it, and the paper's fixed 10 leaves the vote to near ties among them.
 *
 * @param nSkills - library size N, integer ≥ 0.
 * @param share - the vote share s, in [0, 1]; 0: the paper's k.
 */
export function routeVoteK(nSkills: number, share = 0): number {
  const k = voteK(nSkills);
  if (typeof share !== "number" || !(share >= 0 && share <= 1)) throw invalidArgument(`share must be a number in [0, 1], got ${valueText(share)}`);
  return share === 0 ? k : Math.min(MAX_VOTE_K, Math.max(k, Math.round(share * nSkills)));
}

/** Float32's least positive (subnormal) value, 2^−149: the floor of {@link decayWeights}. */
const MIN_WEIGHT = 2 ** -149;

/**
 * Recency weights for the vote (paper §5, trajectories): `w_i = 2^(−a_i/64)` where a_i counts the
 * tokens from position i to the decision point, so the weight halves every 64 tokens back.
 *
 * @param nTokens - number of query tokens (positions 0 … nTokens − 1), integer ≥ 1.
 * @param decisionPoint - position of the decision point, integer ≥ nTokens − 1; defaults to the
 *   last token (whose a is then 0, weight 1). Pass a later position when the span read ends before
 *   the decision point; a token after the decision point has no defined weight, hence the bound.
 * @returns Float32Array of nTokens weights in (0, 1]: a token more than 9536 back (where 2^(−a/64)
 *   leaves float32's range) gets float32's least positive value, 2^−149, rather than 0.
 */
export function decayWeights(nTokens: number, decisionPoint: number = nTokens - 1): Float32Array {
  checkInt(nTokens, "nTokens", 1);
  if (typeof decisionPoint !== "number" || !Number.isInteger(decisionPoint) || decisionPoint < nTokens - 1) {
    throw invalidArgument(`decisionPoint must be an integer >= nTokens - 1 (${nTokens - 1}), got ${valueText(decisionPoint)}`);
  }
  const w = new Float32Array(nTokens);
  // 2^(−a/64) leaves float32's range (it would round to 0) once a passes 149·64 = 9536 tokens; such a
  // weight is held at float32's least positive value 2^−149 instead, so every weight stays in (0, 1]
  // and a span read far before its decision point still votes (uniformly) rather than summing to 0.
  // Below that age the float32 rounding of 2^(−a/64) is already ≥ 2^−149, so the floor changes nothing.
  for (let i = 0; i < nTokens; i++) w[i] = Math.max(2 ** (-(decisionPoint - i) / 64), MIN_WEIGHT);
  return w;
}

/** Options of {@link glance}. */
export interface GlanceOptions {
  /** Per-token vote weights w_i (finite, ≥ 0, positive sum); default uniform. See {@link decayWeights}. */
  weights?: Float32Array;
  /** Top-k of the vote, integer ≥ 1 (k ≥ N puts every skill in every T_i); default {@link voteK}(N). */
  k?: number;
}

/** The keys of {@link GlanceOptions} (optionsObject refuses others). */
const GLANCE_KEYS: Readonly<Record<keyof GlanceOptions, true>> = { weights: true, k: true };

/**
 * The glance (Eqs. 1 and 3): for each query token i and skill s,
 * `m_i(s) = max_j ⟨q_i, d^s_j⟩` over the skill's keys, then
 * `g(s) = Σ w_i·m_i(s) / Σ_i w_i`, the first sum over the tokens i with s among T_i, the top-k skills under m_i.
 *
 * Conventions:
 * - a skill with no keys scores `m = −1` (the least inner product of unit vectors) with
 *   `argmax = −1`, and competes for the top-k with that score;
 * - top-k ties go to the lower skill index; argmax ties to the lower key index;
 * - scores are float32 dot products accumulated in float32 (agree with float64 to ~1e-6 for unit
 *   vectors); g is accumulated in float64.
 *
 * Runs off the JS thread, split over the CPU's cores by skill range. The arguments are copied
 * first (on the JS thread), so they may be changed as soon as the call returns.
 *
 * @param queries - nq × dim row-major unit queries, nq ≥ 1, finite.
 * @param bank - all skills' keys, K × dim row-major, skill s in rows offsets[s] … offsets[s+1] − 1.
 * @param offsets - Int32Array of N + 1 entries: 0, non-decreasing, last = K.
 * @param dim - vector dimension, integer ≥ 1.
 * @returns g (N), m and argmax (nq × N, row-major by token).
 * @throws GavelError `INVALID_ARGUMENT` (as a rejection, never synchronously) on a wrong type,
 *   length or value of any argument, options that are not an object or hold a key other than
 *   `weights` and `k`, or when the bank holds NaN/Inf.
 */
export async function glance(
  queries: Float32Array,
  bank: Float32Array,
  offsets: Int32Array,
  dim: number,
  options: GlanceOptions = {},
): Promise<GlanceResult> {
  const o = optionsObject(options, "glance options", GLANCE_KEYS) as GlanceOptions;
  checkFloat32(queries, "queries");
  checkFloat32(bank, "bank");
  if (!(offsets instanceof Int32Array)) throw invalidArgument("offsets must be an Int32Array");
  checkInt(dim, "dim", 1);
  const nq = checkRows(queries, dim, "queries");
  const rows = checkRows(bank, dim, "bank");
  if (nq === 0) throw invalidArgument("queries hold no token");
  if (offsets.length < 1) throw invalidArgument("offsets must hold nSkills + 1 entries, got none");
  if (offsets[0] !== 0) throw invalidArgument(`offsets[0] must be 0, got ${offsets[0]}`);
  for (let s = 1; s < offsets.length; s++) {
    if (offsets[s] < offsets[s - 1]) {
      throw invalidArgument(`offsets must be non-decreasing, but offsets[${s}] = ${offsets[s]} < offsets[${s - 1}] = ${offsets[s - 1]}`);
    }
  }
  if (offsets[offsets.length - 1] !== rows) {
    throw invalidArgument(`offsets[last] (${offsets[offsets.length - 1]}) must equal the bank's row count (${rows})`);
  }
  const nSkills = offsets.length - 1;
  const weights = resolveWeights(o.weights, nq);
  const k = o.k === undefined ? voteK(nSkills) : o.k;
  checkInt(k, "k", 1);
  return loadBinding().glance(queries, bank, offsets, dim, weights, k);
}

/**
 * {@link coverFarthestFirst} off the JS thread: the same traversal, the same result, on a worker
 * thread over a copy of `keys` taken at the call (so `keys` may be changed as soon as it returns).
 * Use it for large skills (thousands of incompressible keys take seconds).
 *
 * @param keys - n × dim row-major unit keys (not renormalised here), finite.
 * @param dim - key dimension, integer ≥ 1.
 * @param eps - cover radius, finite and ≥ 0.
 * @returns the retained row indices, in retention order (key 0 first; empty for n = 0).
 * @throws GavelError `INVALID_ARGUMENT` (as a rejection) on a wrong type, a length not a multiple
 *   of dim, a bad eps, or non-finite keys.
 */
export async function coverFarthestFirstAsync(keys: Float32Array, dim: number, eps: number): Promise<Int32Array> {
  checkFloat32(keys, "keys");
  checkInt(dim, "dim", 1);
  if (typeof eps !== "number" || !Number.isFinite(eps) || eps < 0) {
    throw invalidArgument(`eps must be a finite number >= 0, got ${valueText(eps)}`);
  }
  checkRows(keys, dim, "keys");
  return loadBinding().coverFarthestFirstAsync(keys, dim, eps);
}

/**
 * Projects hidden states into the routing space: for each row h of `states`,
 * `y = W h / ‖W h‖` (the paper's q_i = normalize(W_q h_i) and d^s_j = normalize(W_s h_j), §3.2).
 *
 * A blocked, threaded float32 GEMM with the kernels' SIMD dispatch (products summed in float32
 * over 512-wide blocks of inDim, the norm in float64; agrees with float64 to ~1e-6 per component).
 * A row whose product W h is exactly zero (e.g. a zero state) cannot be normalised and comes back
 * as zeros. Arguments are copied at the call, so they may be changed as soon as it returns.
 *
 * @param states - n × inDim row-major hidden states (n ≥ 0), finite.
 * @param inDim - state width (the model's nEmbd), integer ≥ 1.
 * @param W - outDim × inDim row-major projection, finite.
 * @param outDim - routing dimension (768 in the paper), integer ≥ 1.
 * @returns n × outDim row-major unit rows (or zero rows, see above).
 * @throws GavelError `INVALID_ARGUMENT` (as a rejection) on a wrong type or length, NaN/Inf in
 *   states or W, or a product overflowing float32.
 */
export async function projectNormalize(
  states: Float32Array,
  inDim: number,
  W: Float32Array,
  outDim: number,
): Promise<Float32Array> {
  checkFloat32(states, "states");
  checkInt(inDim, "inDim", 1);
  checkFloat32(W, "W");
  checkInt(outDim, "outDim", 1);
  if (states.length % inDim !== 0) {
    throw invalidArgument(`states.length (${states.length}) is not a multiple of inDim (${inDim})`);
  }
  if (W.length !== outDim * inDim) {
    throw invalidArgument(`W.length (${W.length}) must equal outDim × inDim (${outDim} × ${inDim})`);
  }
  return loadBinding().projectNormalize(states, inDim, W, outDim);
}
