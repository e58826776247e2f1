// The native trainer (native/src/train) against the float64 reference and finite differences, its
// validation, learning on a synthetic library, and resumable checkpoints.
import { describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GavelError } from "../../src/errors.js";
import { infoNceReference } from "../oracles/infonce-reference.js";
import { createTrainer, evaluateRetrieval, loadCheckpoint, packBatch, Rng, runTraining, type NativeTrainBatch, type TrainingSet } from "../../lab/train/trainer.js";
import { gauss, randArray, rng } from "../helpers/random.js";
import { expectCode } from "../helpers/gavel-error.js";


/** 3 tasks over 5 skills; task 1 has two positives (multi-positive), task 2 has no negative-free case. */
function smallBatch(r: () => number, nEmbd: number): NativeTrainBatch {
  const qRows = [3, 2, 4];
  const sRows = [2, 3, 1, 4, 2];
  const queryOffsets = Int32Array.from([0, 3, 5, 9]);
  const skillOffsets = new Int32Array(sRows.length + 1);
  sRows.forEach((n, i) => (skillOffsets[i + 1] = skillOffsets[i] + n));
  const cands = [[0, 2, 3], [1, 4, 0, 3], [3, 2, 1, 0, 4]];
  const pos = [[1, 0, 0], [1, 1, 0, 0], [1, 0, 0, 1, 0]];
  const candidateOffsets = Int32Array.from([0, 3, 7, 12]);
  return {
    queryStates: randArray(r, qRows.reduce((a, b) => a + b) * nEmbd),
    queryOffsets,
    skillStates: randArray(r, skillOffsets[5] * nEmbd),
    skillOffsets,
    candidateOffsets,
    candidates: Int32Array.from(cands.flat()),
    positive: Uint8Array.from(pos.flat()),
  };
}

function relErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let d = 0, n = 0;
  for (let i = 0; i < a.length; i++) {
    d += (a[i] - b[i]) ** 2;
    n += b[i] ** 2;
  }
  return Math.sqrt(d / n);
}

describe("InfoNCE loss and gradient", () => {
  const nEmbd = 12, dim = 6;

  it("the float64 reference agrees with central differences (multi-positive, τ = 40 and 5)", () => {
    for (const tau of [40, 5]) {
      const r = rng(1234 + tau);
      const batch = smallBatch(r, nEmbd);
      const wq = Float64Array.from(randArray(r, dim * nEmbd, 0.3));
      const ws = Float64Array.from(randArray(r, dim * nEmbd, 0.3));
      const ref = infoNceReference(batch, wq, ws, { nEmbd, dim, tau });
      const h = 1e-6;
      for (const [W, G] of [[wq, ref.gradWq], [ws, ref.gradWs]] as const) {
        for (let k = 0; k < 25; k++) {
          const idx = Math.floor(r() * W.length);
          const w0 = W[idx];
          W[idx] = w0 + h;
          const lp = infoNceReference(batch, wq, ws, { nEmbd, dim, tau }).loss;
          W[idx] = w0 - h;
          const lm = infoNceReference(batch, wq, ws, { nEmbd, dim, tau }).loss;
          W[idx] = w0;
          const fd = (lp - lm) / (2 * h);
          expect(Math.abs(fd - G[idx])).toBeLessThan(1e-5 * Math.max(1, Math.abs(G[idx])));
        }
      }
    }
  });

  it("the native trainer matches the reference (loss 1e-5 relative, gradients ~1e-3)", async () => {
    for (const tau of [40, 5]) {
      const r = rng(99 + tau);
      const batch = smallBatch(r, nEmbd);
      const t = createTrainer({ nEmbd, dim, tau, seed: 7 });
      const { wq, ws } = t.getWeights();
      const ref = infoNceReference(batch, wq, ws, { nEmbd, dim, tau });
      const nat = await t.lossAndGrad(batch);
      expect(Math.abs(nat.loss - ref.loss) / Math.abs(ref.loss)).toBeLessThan(1e-5);
      expect(relErr(nat.gradWq, ref.gradWq)).toBeLessThan(1e-3);
      expect(relErr(nat.gradWs!, ref.gradWs)).toBeLessThan(1e-3);
    }
  });

  it("freezeWs: W_q alone against given unit keys, matching the reference", async () => {
    const r = rng(5);
    const b = smallBatch(r, nEmbd);
    const rows = b.skillOffsets[b.skillOffsets.length - 1];
    const keys = randArray(r, rows * dim);
    for (let i = 0; i < rows; i++) {
      let s = 0;
      for (let o = 0; o < dim; o++) s += keys[i * dim + o] ** 2;
      for (let o = 0; o < dim; o++) keys[i * dim + o] /= Math.sqrt(s);
    }
    const batch = { ...b, skillStates: keys };
    const t = createTrainer({ nEmbd, dim, seed: 3, freezeWs: true });
    const { wq, ws } = t.getWeights();
    const ref = infoNceReference(batch, wq, ws, { nEmbd, dim, tau: 40, freezeWs: true });
    const nat = await t.lossAndGrad(batch);
    expect(nat.gradWs).toBeNull();
    expect(Math.abs(nat.loss - ref.loss) / ref.loss).toBeLessThan(1e-5);
    expect(relErr(nat.gradWq, ref.gradWq)).toBeLessThan(1e-3);
    await t.step(batch);
    expect(t.getWeights().ws).toEqual(ws); // W_s untouched
    expect(t.getWeights().wq).not.toEqual(wq);
  });

  it("one step is AdamW with decoupled weight decay", async () => {
    const r = rng(11);
    const batch = smallBatch(r, nEmbd);
    const t = createTrainer({ nEmbd, dim, seed: 1, lr: 0.01, weightDecay: 0.1 });
    const { wq } = t.getWeights();
    const { gradWq } = await t.lossAndGrad(batch);
    await t.step(batch);
    const after = t.getWeights().wq;
    for (let i = 0; i < 20; i++) {
      const g = gradWq[i];
      // t = 1: m̂ = g, v̂ = g², so the Adam part is lr·g/(|g| + eps).
      const want = wq[i] - 0.01 * 0.1 * wq[i] - (0.01 * g) / (Math.abs(g) + 1e-8);
      expect(after[i]).toBeCloseTo(want, 5);
    }
    expect(t.steps).toBe(1);
  });

  it("rejects malformed batches with INVALID_ARGUMENT and survives them", async () => {
    const r = rng(2);
    const good = smallBatch(r, nEmbd);
    const t = createTrainer({ nEmbd, dim });
    const bad: [string, Partial<NativeTrainBatch> | unknown][] = [
      ["not an object", null],
      ["wrong type", { ...good, queryStates: new Float64Array(4) }],
      ["short states", { ...good, queryStates: good.queryStates.subarray(1) }],
      ["candidate out of range", { ...good, candidates: Int32Array.from([0, 2, 9, 1, 4, 0, 3, 3, 2, 1, 0, 4]) }],
      ["duplicate candidate", { ...good, candidates: Int32Array.from([0, 0, 3, 1, 4, 0, 3, 3, 2, 1, 0, 4]) }],
      ["no positive", { ...good, positive: new Uint8Array(12) }],
      ["offsets decreasing", { ...good, queryOffsets: Int32Array.from([0, 5, 3, 9]) }],
      ["positive flag 2", { ...good, positive: new Uint8Array(12).fill(2) }],
      ["NaN state", { ...good, skillStates: good.skillStates.map((x, i) => (i === 3 ? NaN : x)) }],
      ["empty task", { ...good, queryOffsets: Int32Array.from([0, 0, 5, 9]), queryStates: good.queryStates }],
    ];
    for (const [why, b] of bad) {
      const err = await t.step(b as NativeTrainBatch).then(() => undefined, (e) => e);
      expect(err, why).toBeInstanceOf(GavelError);
      expect((err as GavelError).code, why).toBe("INVALID_ARGUMENT");
    }
    expect(() => createTrainer({ nEmbd: 0, dim: 4 })).toThrow(GavelError);
    expect(() => t.setWeights(new Float32Array(3), new Float32Array(3))).toThrow(/dim × nEmbd/);
    // A step in flight locks the weights.
    const p = t.step(good);
    expect(() => t.getWeights()).toThrow(/in flight/);
    await expect(t.step(good)).rejects.toThrow(/in flight/);
    await p;
    expect(t.steps).toBe(1);
  });
});

/** Skills = cluster centres in a random 8-dim subspace + noise; queries = noisy centre tokens + distractors. */
function synthetic(seed: number, nSkills: number, nEmbd: number): TrainingSet {
  const r = rng(seed);
  const basis = Array.from({ length: 8 }, () => randArray(r, nEmbd));
  const distractors = Array.from({ length: 6 }, () => randArray(r, nEmbd, 2));
  const centres = Array.from({ length: nSkills }, () => {
    const c = new Float32Array(nEmbd);
    for (const b of basis) {
      const w = gauss(r);
      for (let e = 0; e < nEmbd; e++) c[e] += w * b[e];
    }
    return c;
  });
  const noisy = (c: Float32Array, s: number) => c.map((x) => x + gauss(r) * s);
  const skills = centres.map((c) => {
    const rows = 3 + Math.floor(r() * 4);
    const out = new Float32Array(rows * nEmbd);
    for (let j = 0; j < rows; j++) out.set(j % 2 === 0 ? noisy(c, 0.5) : noisy(distractors[Math.floor(r() * 6)], 0.5), j * nEmbd);
    return out;
  });
  const examples = (n: number) =>
    Array.from({ length: n }, (_, k) => {
      const s = k % nSkills;
      const q = new Float32Array(5 * nEmbd);
      for (let i = 0; i < 5; i++) q.set(i < 2 ? noisy(centres[s], 0.7) : noisy(distractors[Math.floor(r() * 6)], 0.5), i * nEmbd);
      return { query: q, positives: [s] };
    });
  return { nEmbd, skills, train: examples(3 * nSkills), val: examples(nSkills) };
}

describe("runTraining", () => {
  it("lowers the loss and lifts train Hit@1 from chance to ≥ 0.9 on a learnable synthetic library", async () => {
    const set = synthetic(42, 20, 32);
    const dim = 16;
    const t0 = createTrainer({ nEmbd: 32, dim, seed: 3 });
    const before = await evaluateRetrieval(set.train, set.skills, t0.getWeights(), 32, dim);
    const res = await runTraining(set, { dim, steps: 150, seed: 3, lr: 1e-2, batchTasks: 16, negatives: 19, valEvery: 50 });
    const after = await evaluateRetrieval(set.train, set.skills, res, 32, dim);
    const head = res.losses.slice(0, 10).reduce((a, b) => a + b) / 10;
    const tail = res.losses.slice(-10).reduce((a, b) => a + b) / 10;
    console.log(`synthetic: loss ${head.toFixed(3)} → ${tail.toFixed(3)}, train Hit@1 ${before.hit1.toFixed(2)} → ${after.hit1.toFixed(2)}, val Hit@1 ${res.val?.hit1.toFixed(2)}; ${res.stepsPerSec.toFixed(0)} steps/s`);
    expect(tail).toBeLessThan(head * 0.5);
    expect(before.hit1).toBeLessThan(0.5);
    expect(after.hit1).toBeGreaterThanOrEqual(0.9);
  });

  it("learns with hard and in-batch negatives too", async () => {
    const set = synthetic(43, 20, 32);
    // hard lists: the 5 skills whose centres lie closest to the gold's (the look-alikes)
    const centre = (s: Float32Array) => s.subarray(0, 32);
    const dist = (a: Float32Array, b: Float32Array) => a.reduce((t, x, e) => t + (x - b[e]) ** 2, 0);
    for (const ex of set.train) {
      const g = ex.positives[0];
      ex.hard = set.skills.map((_, i) => i).filter((i) => i !== g).sort((a, b) => dist(centre(set.skills[a]), centre(set.skills[g])) - dist(centre(set.skills[b]), centre(set.skills[g]))).slice(0, 5);
    }
    const res = await runTraining(set, { dim: 16, steps: 150, seed: 3, lr: 1e-2, batchTasks: 8, negatives: 6, hardNegatives: 3, inBatch: true });
    const after = await evaluateRetrieval(set.train, set.skills, res, 32, 16);
    expect(after.hit1).toBeGreaterThanOrEqual(0.9);
  });

  it("a resumed run ends with the same weights as an uninterrupted one", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gavel-train-"));
    try {
      const set = synthetic(7, 12, 16);
      const base = { dim: 8, seed: 5, batchTasks: 6, batchTokens: 200, negatives: 5, checkpointEvery: 4, lr: 5e-3 };
      const full = await runTraining(set, { ...base, steps: 12, checkpoint: join(dir, "a.ckpt") });
      const part = await runTraining(set, { ...base, steps: 8, checkpoint: join(dir, "b.ckpt") });
      expect(part.steps).toBe(8);
      const ck = await loadCheckpoint(join(dir, "b.ckpt"));
      expect(ck?.state.step).toBe(8);
      const resumed = await runTraining(set, { ...base, steps: 12, checkpoint: join(dir, "b.ckpt"), resume: true });
      expect(resumed.resumedFrom).toBe(8);
      expect(resumed.losses.length).toBe(4);
      expect(resumed.wq).toEqual(full.wq);
      expect(resumed.ws).toEqual(full.ws);
      // Another configuration is refused.
      await expect(runTraining(set, { ...base, seed: 6, steps: 14, checkpoint: join(dir, "b.ckpt"), resume: true })).rejects.toThrow(/another configuration/);
      // An abort between checkpoints keeps its steps: the checkpoint is written at the abort, and a
      // resume from it ends where the uninterrupted run does.
      const ac = new AbortController();
      const aborted = runTraining(set, { ...base, steps: 12, checkpoint: join(dir, "c.ckpt"), signal: ac.signal, onProgress: (p) => p.step === 7 && ac.abort() });
      await expectCode(aborted, "ABORTED", /aborted at main step 7; checkpoint written to .*c\.ckpt/);
      expect((await loadCheckpoint(join(dir, "c.ckpt")))?.state.step).toBe(7);
      const after = await runTraining(set, { ...base, steps: 12, checkpoint: join(dir, "c.ckpt"), resume: true });
      expect(after.resumedFrom).toBe(7);
      expect(after.wq).toEqual(full.wq);
      expect(after.ws).toEqual(full.ws);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("packBatch's negatives", () => {
  const set = synthetic(11, 30, 8);
  const width = { skillWidth: 8, queryWidth: 8 };
  // the skill index of each local candidate, per task
  const candidatesOf = (b: NativeTrainBatch, order: number[]) => {
    const out: { cand: number[]; pos: number[] }[] = [];
    for (let t = 0; t + 1 < b.candidateOffsets.length; t++) {
      const cand: number[] = [];
      const pos: number[] = [];
      for (let j = b.candidateOffsets[t]; j < b.candidateOffsets[t + 1]; j++) {
        cand.push(order[b.candidates[j]]);
        pos.push(b.positive[j]);
      }
      out.push({ cand, pos });
    }
    return out;
  };
  // Recover the batch's skill order from its packed states (skills' rows are distinct random draws).
  const orderOf = (b: NativeTrainBatch) =>
    Array.from({ length: b.skillOffsets.length - 1 }, (_, i) => set.skills.findIndex((s) => s[0] === b.skillStates[b.skillOffsets[i] * 8] && s.length === (b.skillOffsets[i + 1] - b.skillOffsets[i]) * 8));

  it("draws hardNegatives of each task's negatives from its hard list, the rest at random, never a gold", () => {
    const examples = set.train.map((e) => ({ ...e, hard: [(e.positives[0] + 1) % 30, (e.positives[0] + 2) % 30, e.positives[0]] }));
    for (let seed = 1; seed <= 20; seed++) {
      const packed = packBatch(examples, set.skills, new Rng(seed), { batchTasks: 4, batchTokens: 1e6, negatives: 5, hardNegatives: 2, ...width });
      const order = orderOf(packed.batch);
      for (const { cand, pos } of candidatesOf(packed.batch, order)) {
        const g = cand[0];
        expect(pos[0]).toBe(1);
        expect(cand.length).toBe(6);
        expect(new Set(cand).size).toBe(6);
        expect(pos.slice(1).every((p) => p === 0)).toBe(true);
        // both look-alikes are in (the gold listed as "hard" is never a negative)
        expect(cand.slice(1)).toContain((g + 1) % 30);
        expect(cand.slice(1)).toContain((g + 2) % 30);
      }
    }
  });

  it("inBatch: every task's candidates are its golds plus every other skill of the batch", () => {
    for (let seed = 1; seed <= 20; seed++) {
      const packed = packBatch(set.train, set.skills, new Rng(seed), { batchTasks: 5, batchTokens: 1e6, negatives: 3, inBatch: true, ...width });
      const order = orderOf(packed.batch);
      for (const { cand, pos } of candidatesOf(packed.batch, order)) {
        expect(new Set(cand)).toEqual(new Set(order));
        expect(cand.length).toBe(order.length);
        expect(pos.filter((p) => p === 1).length).toBe(1);
      }
    }
  });
});
