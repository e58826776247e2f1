/**
 * The gate's training data and its measures: trajectories (lab/gate/trajectories.ts) are
 * rendered through the model's chat template and read by one forward pass each; a live context
 * (`router.live()`) accumulates the glance's scores token by token, and at each chosen position the
 * gate's row is [gateScoreFeatures(g), the state at `stateLayer`]. Labels: 1 on the last `window`
 * tokens of a decision point that needs a skill; 0 on positions before the need surfaces and on every
 * position of a trajectory that never needs one; the rest of the message that carries the need is
 * left out (its need is partly read).
 *
 * Two ways to get g at every chosen position, equal within float32 rounding (test/model/gate-train.test.ts):
 * `live` appends the ℓ* rows to a fresh `router.live()` up to each position (what a host does);
 * `batched` (the default) runs one glance over all the trajectory's rows and folds each row's top-k
 * votes into the decayed sums in float64, position by position (the live context's definition,
 * g_p(s) = Σ_{i≤p} 2^(−(p−i)/64) v_i(s) / Σ_{i≤p} 2^(−(p−i)/64)), which costs one batched max-sim
 * instead of one per token.
 *
 * @module
 */
import { type Gate, GATE_SCORE_FEATURES, gateScoreFeatures, GavelError, projectNormalize, renderChat, type Router, voteK } from "gavel-router";
import { invalidArgument, Rng } from "gavel-router/internal";
import type { Trajectory } from "./trajectories.js";

/** A trajectory as tokens: where each message ends, where the need starts and the decision point. */
export interface TrajectoryTokens {
  tokens: Int32Array;
  /** Exclusive token end of each message (the rendered prefix through it, tokenized). */
  messageEnds: number[];
  /** First token of the message at the decision point. */
  needStart: number;
  /** Exclusive end of the decision point's message: the decision point is token decisionEnd − 1. */
  decisionEnd: number;
}

/**
 * Renders a trajectory through the model's chat template (no generation prompt: the context ends where
 * the decision message ends) and tokenizes it as a live context is (control tokens parsed, BOS as the
 * vocabulary asks). Message boundaries are the lengths of the tokenized rendered prefixes.
 */
export function tokenizeTrajectory(model: Router["model"], t: Trajectory): TrajectoryTokens {
  const template = model.info.chatTemplate ?? null;
  const messages = t.messages.slice(0, t.decision + 1);
  const tok = (text: string) => model.tokenize(text, { special: true, addBos: model.info.addBos });
  const tokens = tok(renderChat(template, messages));
  const messageEnds = messages.map((_, k) => (k === messages.length - 1 ? tokens.length : Math.min(tokens.length, tok(renderChat(template, messages.slice(0, k + 1))).length)));
  const needStart = t.decision === 0 ? 0 : messageEnds[t.decision - 1];
  return { tokens, messageEnds, needStart, decisionEnd: tokens.length };
}

/** One trajectory's gate rows. */
export interface TrajectoryFeatures {
  id: string;
  needsSkill: boolean;
  /** Tokens read. */
  tokens: number;
  needStart: number;
  decisionEnd: number;
  /** Positions of the rows, ascending (every position with `allPositions`). */
  positions: Int32Array;
  /** 1, 0, or −1 (left out of training: inside the need's message, before its last `window` tokens). */
  labels: Int8Array;
  /** positions.length × dims rows: score features, then the state. */
  rows: Float32Array;
  dims: number;
}

/** Options of {@link collectGateFeatures}. */
export interface CollectOptions {
  /**
   * The layer whose state joins the row; null for score features only. Default: the router's ℓ*.
   * ℓ* and the last layer (nLayer − 1) are the two that `Model.generate` gives in the decode loop
   * (each chunk's `state`, and its `finalState` with `finalState: true`).
   */
  stateLayer?: number | null;
  /** Positive tokens at the end of a decision point (default 4: the two-token rule has room). */
  window?: number;
  /** Besides message ends, this many random negative positions per trajectory (default 8). */
  randomPositions?: number;
  /** How g is computed at each position (see the module's comment); default "batched". */
  method?: "live" | "batched";
  /** Every position 0..n−1 (to measure firing) instead of the sampled ones. */
  allPositions?: boolean | ((t: Trajectory) => boolean);
  seed?: number;
  signal?: AbortSignal;
  onProgress?: (done: number, total: number, id: string) => void;
}

/** The label of a position. */
function labelAt(p: number, tt: TrajectoryTokens, needsSkill: boolean, window: number): number {
  if (p < tt.needStart) return 0;
  if (!needsSkill) return 0;
  return p >= tt.decisionEnd - window ? 1 : -1;
}

/** The sampled positions: every message's last `window` tokens, and `extra` random ones (ascending, distinct). */
function sampledPositions(tt: TrajectoryTokens, window: number, extra: number, r: Rng): number[] {
  const set = new Set<number>();
  for (const end of tt.messageEnds) for (let p = Math.max(0, end - window); p < end; p++) set.add(p);
  for (let i = 0; i < extra; i++) set.add(r.int(tt.decisionEnd));
  return [...set].sort((a, b) => a - b);
}

/**
 * The gate's rows for each trajectory: one forward pass over its tokens (the ℓ* layer, and the state
 * layer), the ℓ* rows appended to a fresh live context up to each position, and the row
 * [gateScoreFeatures(live g), state] there. Trajectories longer than the model's context are skipped
 * and reported.
 *
 * @throws GavelError EMPTY_LIBRARY, ABORTED, INVALID_ARGUMENT
 */
export async function collectGateFeatures(router: Router, trajectories: readonly Trajectory[], options: CollectOptions = {}): Promise<{ features: TrajectoryFeatures[]; skipped: { id: string; reason: string }[] }> {
  const { model } = router;
  const star = router.projections.layer;
  const stateLayer = options.stateLayer === undefined ? star : options.stateLayer;
  if (stateLayer !== null && (!Number.isInteger(stateLayer) || stateLayer < 0 || stateLayer >= model.info.nLayer)) {
    throw new GavelError(`stateLayer ${stateLayer} is not a layer of this model (0..${model.info.nLayer - 1})`, "LAYER_OUT_OF_RANGE");
  }
  const window = options.window ?? 4;
  if (!Number.isInteger(window) || window < 1 || window > 256) throw invalidArgument(`window must be an integer in [1, 256], got ${window}`);
  const extra = options.randomPositions ?? 8;
  if (!Number.isInteger(extra) || extra < 0) throw invalidArgument(`randomPositions must be a non-negative integer, got ${extra}`);
  const r = new Rng(options.seed ?? 1);
  const nEmbd = model.info.nEmbd;
  const nf = GATE_SCORE_FEATURES.length;
  const dims = nf + (stateLayer === null ? 0 : nEmbd);
  const layers = stateLayer === null || stateLayer === star ? [star] : [star, stateLayer];
  const features: TrajectoryFeatures[] = [];
  const skipped: { id: string; reason: string }[] = [];
  for (const [i, t] of trajectories.entries()) {
    options.signal?.throwIfAborted();
    const tt = tokenizeTrajectory(model, t);
    if (tt.tokens.length > model.info.contextSize) {
      skipped.push({ id: t.id, reason: `${tt.tokens.length} tokens exceed the context of ${model.info.contextSize}` });
      options.onProgress?.(i + 1, trajectories.length, t.id);
      continue;
    }
    const all = typeof options.allPositions === "function" ? options.allPositions(t) : options.allPositions === true;
    const positions = all ? Array.from({ length: tt.decisionEnd }, (_, p) => p) : sampledPositions(tt, window, extra, r);
    const hs = await model.hiddenStatesAt(tt.tokens, layers, { signal: options.signal });
    const hStar = hs[0];
    const hState = stateLayer === null ? null : hs[layers.indexOf(stateLayer)];
    const scoreRows = options.method === "live" ? await liveFeatures(router, hStar, positions, options.signal) : await batchedFeatures(router, hStar, positions, options.signal);
    const rows = new Float32Array(positions.length * dims);
    const labels = new Int8Array(positions.length);
    for (const [k, p] of positions.entries()) {
      rows.set(scoreRows.subarray(k * nf, (k + 1) * nf), k * dims);
      if (hState) rows.set(hState.subarray(p * nEmbd, (p + 1) * nEmbd), k * dims + nf);
      labels[k] = labelAt(p, tt, t.needsSkill, window);
    }
    features.push({ id: t.id, needsSkill: t.needsSkill, tokens: tt.tokens.length, needStart: tt.needStart, decisionEnd: tt.decisionEnd, positions: Int32Array.from(positions), labels, rows, dims });
    options.onProgress?.(i + 1, trajectories.length, t.id);
  }
  return { features, skipped };
}

/** Score features at each position (ascending) through a fresh live context, appended up to each. */
async function liveFeatures(router: Router, hStar: Float32Array, positions: readonly number[], signal?: AbortSignal): Promise<Float64Array> {
  const nEmbd = router.model.info.nEmbd;
  const nf = GATE_SCORE_FEATURES.length;
  const live = router.live();
  const out = new Float64Array(positions.length * nf);
  let cursor = 0;
  for (const [k, p] of positions.entries()) {
    if (p + 1 > cursor) {
      await live.append(hStar.subarray(cursor * nEmbd, (p + 1) * nEmbd), { signal });
      cursor = p + 1;
    }
    out.set(gateScoreFeatures(live.scores().g), k * nf);
  }
  return out;
}

/**
 * The live context's scores g after each of the rows `hStar` (tokens × nEmbd at ℓ*), from one batched
 * glance: each row's top-k votes (ties to the lower column, as the kernel) folded into float64 sums
 * decayed by 2^(−1/64) per token. `at(p, g)` hears each position of `positions` (ascending).
 */
export async function everyPositionScores(router: Router, hStar: Float32Array, positions: readonly number[], at: (k: number, g: Float64Array) => void, signal?: AbortSignal): Promise<void> {
  const { library, projections, model } = router.live().routerParts;
  const handles = library.routable();
  if (handles.length === 0) throw new GavelError("no skill is installed (or every one has disable-model-invocation)", "EMPTY_LIBRARY");
  const n = hStar.length / model.info.nEmbd;
  const queries = await projectNormalize(hStar, model.info.nEmbd, projections.wq, projections.dim);
  const kVote = voteK(handles.length);
  const all = handles.length === library.keys.size;
  const res = await library.keys.glance(queries, { k: kVote, handles: all ? undefined : handles, signal });
  const S = res.handles.length;
  const acc = new Float64Array(S);
  const g = new Float64Array(S);
  const decay = 2 ** (-1 / 64);
  const order = Array.from({ length: S }, (_, s) => s);
  let wsum = 0;
  let next = 0;
  for (let i = 0; i < n && next < positions.length; i++) {
    const m = res.m.subarray(i * S, (i + 1) * S);
    for (let s = 0; s < S; s++) acc[s] *= decay;
    wsum = wsum * decay + 1;
    // top-k of the row by m, ties to the lower column
    order.sort((a, b) => m[b] - m[a] || a - b);
    for (let j = 0; j < Math.min(kVote, S); j++) acc[order[j]] += m[order[j]];
    while (next < positions.length && positions[next] === i) {
      for (let s = 0; s < S; s++) g[s] = acc[s] / wsum;
      at(next++, g);
    }
  }
}

/** Score features at each position (ascending) by {@link everyPositionScores}. */
async function batchedFeatures(router: Router, hStar: Float32Array, positions: readonly number[], signal?: AbortSignal): Promise<Float64Array> {
  const nf = GATE_SCORE_FEATURES.length;
  const out = new Float64Array(positions.length * nf);
  await everyPositionScores(router, hStar, positions, (k, g) => out.set(gateScoreFeatures(g), k * nf), signal);
  return out;
}

/** The labelled rows (label 0 or 1) of trajectories' features, for {@link fitGate}. */
export function labelledRows(features: readonly TrajectoryFeatures[]): { rows: Float64Array[]; labels: number[] } {
  const rows: Float64Array[] = [];
  const labels: number[] = [];
  for (const f of features) {
    for (let k = 0; k < f.positions.length; k++) {
      if (f.labels[k] < 0) continue;
      rows.push(Float64Array.from(f.rows.subarray(k * f.dims, (k + 1) * f.dims)));
      labels.push(f.labels[k]);
    }
  }
  return { rows, labels };
}

/** Position-level figures of a gate on labelled rows (logit > 0 is "on"). */
export interface PositionMetrics {
  n: number;
  positives: number;
  accuracy: number;
  precision: number;
  recall: number;
}

/** The gate's accuracy, precision and recall over labelled rows. */
export function positionMetrics(gate: Gate, features: readonly TrajectoryFeatures[]): PositionMetrics {
  let tp = 0, fp = 0, tn = 0, fn = 0;
  const nf = GATE_SCORE_FEATURES.length;
  for (const f of features) {
    for (let k = 0; k < f.positions.length; k++) {
      const y = f.labels[k];
      if (y < 0) continue;
      const row = f.rows.subarray(k * f.dims, (k + 1) * f.dims);
      const on = gate.logitOfFeatures(row.subarray(0, nf), row.subarray(nf)) > 0;
      if (on && y === 1) tp++;
      else if (on) fp++;
      else if (y === 1) fn++;
      else tn++;
    }
  }
  const n = tp + fp + tn + fn;
  return { n, positives: tp + fn, accuracy: n ? (tp + tn) / n : NaN, precision: tp + fp ? tp / (tp + fp) : NaN, recall: tp + fn ? tp / (tp + fn) : NaN };
}

/** Where the gate first fires over a trajectory's every position (the two-token rule), or null. */
export function firstFiring(gate: Gate, f: TrajectoryFeatures): number | null {
  const nf = GATE_SCORE_FEATURES.length;
  if (f.positions.length !== f.decisionEnd || f.positions.some((p, k) => p !== k)) {
    throw invalidArgument(`firing needs every position of ${f.id} (collect it with allPositions)`);
  }
  gate.reset();
  for (let k = 0; k < f.positions.length; k++) {
    const row = f.rows.subarray(k * f.dims, (k + 1) * f.dims);
    if (stepOnRow(gate, row, nf)) {
      gate.reset();
      return k;
    }
  }
  gate.reset();
  return null;
}

/** Gate.step over precomputed features: the same streak rule. */
function stepOnRow(gate: Gate, row: Float32Array, nf: number): boolean {
  const on = gate.logitOfFeatures(row.subarray(0, nf), row.subarray(nf)) > 0;
  return gate.stepDecision(on);
}

/** Firing figures over whole trajectories (the first firing of each). */
export interface FiringMetrics {
  /** Trajectories that need a skill / that never do. */
  positives: number;
  negatives: number;
  /** Positives whose first firing is at or after the need starts (inside its message). */
  onTime: number;
  /** Positives that fired in the noise before the need. */
  early: number;
  /** Positives that never fired. */
  missed: number;
  /** Negatives that fired somewhere. */
  falseFires: number;
  /** onTime / positives. */
  recall: number;
  /** onTime / (trajectories that fired). */
  precision: number;
  /** Median tokens from the need's first token to the firing, over on-time firings. */
  medianFromNeedStart: number;
  /** Median tokens from the firing to the decision point (the need message's last token; ≥ 0 fires before it ends). */
  medianBeforeDecision: number;
}

const medianOf = (xs: number[]) => (xs.length === 0 ? NaN : [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]);

/** The gate's firing over trajectories collected with every position. */
export function firingMetrics(gate: Gate, features: readonly TrajectoryFeatures[]): FiringMetrics {
  let positives = 0, negatives = 0, onTime = 0, early = 0, missed = 0, falseFires = 0;
  const fromStart: number[] = [];
  const before: number[] = [];
  for (const f of features) {
    const at = firstFiring(gate, f);
    if (!f.needsSkill) {
      negatives++;
      if (at !== null) falseFires++;
      continue;
    }
    positives++;
    if (at === null) missed++;
    else if (at < f.needStart) early++;
    else {
      onTime++;
      fromStart.push(at - f.needStart);
      before.push(f.decisionEnd - 1 - at);
    }
  }
  const fired = onTime + early + falseFires;
  return {
    positives, negatives, onTime, early, missed, falseFires,
    recall: positives ? onTime / positives : NaN,
    precision: fired ? onTime / fired : NaN,
    medianFromNeedStart: medianOf(fromStart),
    medianBeforeDecision: medianOf(before),
  };
}

/**
 * What any threshold t on the gate's logit does to one trajectory under the two-token rule: with
 * m_k = min(logit_{k−1}, logit_k), the gate (logit > t) first fires at the first k with m_k > t. So
 * a positive fires early iff `before` (max m_k over k < needStart) > t, on time iff before ≤ t <
 * `after` (max m_k over k ≥ needStart); a negative fires iff max(before, after) > t.
 */
export interface FiringSummary {
  needsSkill: boolean;
  before: number;
  after: number;
}

/** {@link FiringSummary} of a trajectory read at every position. */
export function firingSummary(gate: Gate, f: TrajectoryFeatures): FiringSummary {
  const nf = GATE_SCORE_FEATURES.length;
  if (f.positions.length !== f.decisionEnd) throw invalidArgument(`firing needs every position of ${f.id} (collect it with allPositions)`);
  let before = -Infinity;
  let after = -Infinity;
  let prev = NaN;
  for (let k = 0; k < f.positions.length; k++) {
    const row = f.rows.subarray(k * f.dims, (k + 1) * f.dims);
    const z = gate.logitOfFeatures(row.subarray(0, nf), row.subarray(nf));
    if (k > 0) {
      const m = Math.min(prev, z);
      if (k < f.needStart) before = Math.max(before, m);
      else after = Math.max(after, m);
    }
    prev = z;
  }
  return { needsSkill: f.needsSkill, before, after };
}

/** The threshold chosen for firing, and its figures on the trajectories it was chosen on. */
export interface FiringThreshold {
  threshold: number;
  f1: number;
  recall: number;
  precision: number;
  falseFireRate: number;
}

/**
 * The logit threshold that maximises the firing F1 (on time over positives, against on time over all
 * first firings, false fires on negatives included) over trajectories' summaries; ties go to the
 * higher threshold (fewer firings). Candidates: every summary value, and 0.
 */
export function chooseFiringThreshold(summaries: readonly FiringSummary[]): FiringThreshold {
  const candidates = [...new Set([0, ...summaries.flatMap((s) => [s.before, s.after]).filter(Number.isFinite)])].sort((a, b) => a - b);
  const positives = summaries.filter((s) => s.needsSkill).length;
  const negatives = summaries.length - positives;
  let best: FiringThreshold | null = null;
  for (const t of candidates) {
    let onTime = 0;
    let wrong = 0;
    let falseFires = 0;
    for (const s of summaries) {
      if (s.needsSkill) {
        if (s.before > t) wrong++;
        else if (s.after > t) onTime++;
      } else if (Math.max(s.before, s.after) > t) {
        wrong++;
        falseFires++;
      }
    }
    const recall = positives ? onTime / positives : 0;
    const precision = onTime + wrong ? onTime / (onTime + wrong) : 0;
    const f1 = recall + precision > 0 ? (2 * recall * precision) / (recall + precision) : 0;
    if (best === null || f1 >= best.f1) best = { threshold: t, f1, recall, precision, falseFireRate: negatives ? falseFires / negatives : 0 };
  }
  return best!;
}
