/**
 * A plain float64 implementation of the glance head's training loss and its exact gradient (paper
 * §3.2): the yardstick the native trainer (native/src/train) is tested against, and itself tested
 * against central differences. Slow (no blocking, no threads); for small cases only.
 *
 *   q_i = normalize(W_q h_i), d_j = normalize(W_s h_j), m_i(s) = max_j ⟨q_i, d_j⟩,
 *   m̄(s) = mean_i m_i(s),  L_t = −log Σ_{s∈S+} e^{τ m̄(s)} / Σ_{s∈S+∪S−} e^{τ m̄(s)},  L = mean_t L_t.
 *
 * @module
 */
import type { NativeTrainBatch } from "../../src/native/binding.js";

/** Shapes and temperature of {@link infoNceReference}. */
export interface ReferenceOptions {
  nEmbd: number;
  dim: number;
  tau: number;
  /** Skill rows are given dim-wide keys (normalised here too), W_s is not used and gets no gradient. */
  freezeWs?: boolean;
}

/** What {@link infoNceReference} returns. */
export interface ReferenceResult {
  loss: number;
  /** ∂L/∂W_q, dim × nEmbd. */
  gradWq: Float64Array;
  /** ∂L/∂W_s, dim × nEmbd (zeros while freezeWs). */
  gradWs: Float64Array;
  /** m̄(s) per task, per candidate (in the batch's candidate order). */
  mbar: number[][];
}

/** normalize(W h) for each row: unit vectors and the norms (0 for a zero product). */
function project(H: ArrayLike<number>, rows: number, nEmbd: number, W: ArrayLike<number>, dim: number) {
  const Y = new Float64Array(rows * dim);
  const r = new Float64Array(rows);
  for (let i = 0; i < rows; i++) {
    let ss = 0;
    for (let o = 0; o < dim; o++) {
      let u = 0;
      for (let e = 0; e < nEmbd; e++) u += W[o * nEmbd + e] * H[i * nEmbd + e];
      Y[i * dim + o] = u;
      ss += u * u;
    }
    r[i] = Math.sqrt(ss);
    for (let o = 0; o < dim; o++) Y[i * dim + o] = r[i] > 0 ? Y[i * dim + o] / r[i] : 0;
  }
  return { Y, r };
}

/** gW += Σ_i (backward of normalize)(gY_i) ⊗ h_i. */
function backward(gY: Float64Array, Y: Float64Array, r: Float64Array, H: ArrayLike<number>, rows: number, nEmbd: number, dim: number, gW: Float64Array) {
  for (let i = 0; i < rows; i++) {
    if (r[i] === 0) continue;
    let dot = 0;
    for (let o = 0; o < dim; o++) dot += Y[i * dim + o] * gY[i * dim + o];
    for (let o = 0; o < dim; o++) {
      const gu = (gY[i * dim + o] - Y[i * dim + o] * dot) / r[i];
      if (gu === 0) continue;
      for (let e = 0; e < nEmbd; e++) gW[o * nEmbd + e] += gu * H[i * nEmbd + e];
    }
  }
}

/**
 * Loss and gradient of one batch in float64. Max-sim ties go to the lowest key index (as in the
 * kernels). Assumes a valid batch (the native trainer validates; this is a test reference).
 */
export function infoNceReference(batch: NativeTrainBatch, wq: ArrayLike<number>, ws: ArrayLike<number>, opts: ReferenceOptions): ReferenceResult {
  const { nEmbd, dim, tau } = opts;
  const nTasks = batch.queryOffsets.length - 1;
  const nQ = batch.queryOffsets[nTasks];
  const nS = batch.skillOffsets[batch.skillOffsets.length - 1];
  const q = project(batch.queryStates, nQ, nEmbd, wq, dim);
  let s: { Y: Float64Array; r: Float64Array };
  if (opts.freezeWs) {
    // Given keys: normalised as unit vectors (they are unit already), no map.
    const Y = new Float64Array(nS * dim);
    for (let i = 0; i < nS * dim; i++) Y[i] = batch.skillStates[i];
    s = { Y, r: new Float64Array(nS).fill(1) };
  } else s = project(batch.skillStates, nS, nEmbd, ws, dim);
  const gYq = new Float64Array(nQ * dim);
  const gYs = new Float64Array(nS * dim);
  let loss = 0;
  const mbarAll: number[][] = [];
  for (let t = 0; t < nTasks; t++) {
    const q0 = batch.queryOffsets[t], nq = batch.queryOffsets[t + 1] - q0;
    const c0 = batch.candidateOffsets[t], nc = batch.candidateOffsets[t + 1] - c0;
    const mbar = new Array<number>(nc).fill(0);
    const arg: number[][] = [];
    for (let c = 0; c < nc; c++) {
      const sk = batch.candidates[c0 + c];
      const k0 = batch.skillOffsets[sk], k1 = batch.skillOffsets[sk + 1];
      const a: number[] = [];
      for (let i = 0; i < nq; i++) {
        let best = -Infinity, bj = -1;
        for (let j = k0; j < k1; j++) {
          let d = 0;
          for (let o = 0; o < dim; o++) d += q.Y[(q0 + i) * dim + o] * s.Y[j * dim + o];
          if (d > best) {
            best = d;
            bj = j;
          }
        }
        mbar[c] += best / nq;
        a.push(bj);
      }
      arg.push(a);
    }
    mbarAll.push(mbar);
    const z = mbar.map((m) => tau * m);
    const mx = Math.max(...z);
    let zAll = 0, zPos = 0;
    for (let c = 0; c < nc; c++) {
      zAll += Math.exp(z[c] - mx);
      if (batch.positive[c0 + c]) zPos += Math.exp(z[c] - mx);
    }
    loss += (Math.log(zAll) - Math.log(zPos)) / nTasks;
    for (let c = 0; c < nc; c++) {
      const e = Math.exp(z[c] - mx);
      const coef = (tau * (e / zAll - (batch.positive[c0 + c] ? e / zPos : 0))) / nTasks / nq;
      for (let i = 0; i < nq; i++) {
        const j = arg[c][i];
        for (let o = 0; o < dim; o++) {
          gYq[(q0 + i) * dim + o] += coef * s.Y[j * dim + o];
          gYs[j * dim + o] += coef * q.Y[(q0 + i) * dim + o];
        }
      }
    }
  }
  const gradWq = new Float64Array(dim * nEmbd);
  const gradWs = new Float64Array(dim * nEmbd);
  backward(gYq, q.Y, q.r, batch.queryStates, nQ, nEmbd, dim, gradWq);
  if (!opts.freezeWs) backward(gYs, s.Y, s.r, batch.skillStates, nS, nEmbd, dim, gradWs);
  return { loss, gradWq, gradWs, mbar: mbarAll };
}
