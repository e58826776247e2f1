// The trainer's device option (native/src/train/train_device.h): a CPU build keeps the CPU trainer
// and answers device "cuda" with CUDA_UNAVAILABLE; the twins' test hooks of lossAndGrad (keepPairs,
// forceArgmax) on the CPU trainer. The CUDA twin itself is compared with the CPU on the GPU machine
// (scripts/device/train-twins.mjs), since CI has no GPU.
import { describe, expect, it } from "vitest";
import { GavelError } from "../../src/errors.js";
import { loadBinding, type NativeTrainBatch, type NativeTrainerOptions } from "../../src/native/binding.js";
import { gauss, rng } from "../helpers/random.js";

const newTrainer = (o: NativeTrainerOptions) => new (loadBinding().NativeTrainer)(o);

/** nTasks tasks over nSkills skills, each task with 1–2 positives among `nc` candidates. */
function randomBatch(r: () => number, nEmbd: number, nTasks: number, nSkills: number, nc: number): NativeTrainBatch {
  const sOff = [0];
  for (let s = 0; s < nSkills; s++) sOff.push(sOff[s] + 1 + Math.floor(r() * 9));
  const qOff = [0];
  for (let t = 0; t < nTasks; t++) qOff.push(qOff[t] + 1 + Math.floor(r() * 7));
  const cand: number[] = [], pos: number[] = [], cOff = [0];
  for (let t = 0; t < nTasks; t++) {
    const pick = Array.from({ length: nSkills }, (_, i) => i).sort(() => r() - 0.5).slice(0, nc);
    pick.forEach((s, i) => {
      cand.push(s);
      pos.push(i === 0 || (i === 1 && r() < 0.3) ? 1 : 0);
    });
    cOff.push(cand.length);
  }
  const fill = (n: number) => Float32Array.from({ length: n }, () => gauss(r));
  return {
    queryStates: fill(qOff[nTasks] * nEmbd),
    queryOffsets: Int32Array.from(qOff),
    skillStates: fill(sOff[nSkills] * nEmbd),
    skillOffsets: Int32Array.from(sOff),
    candidateOffsets: Int32Array.from(cOff),
    candidates: Int32Array.from(cand),
    positive: Uint8Array.from(pos),
  };
}

function pairCount(b: NativeTrainBatch): number {
  let n = 0;
  for (let t = 0; t + 1 < b.queryOffsets.length; t++)
    n += (b.queryOffsets[t + 1] - b.queryOffsets[t]) * (b.candidateOffsets[t + 1] - b.candidateOffsets[t]);
  return n;
}

const cudaBuild = loadBinding().buildInfo().cuda;

describe("NativeTrainer's device option", () => {
  it("defaults to the CPU, in fp32", () => {
    const t = newTrainer({ nEmbd: 8, dim: 4 });
    expect(t.device).toBe("cpu");
    expect(t.precision).toBe("fp32");
    t.dispose();
  });

  it.skipIf(cudaBuild)("a CPU build reports the CUDA trainer unavailable with CUDA_UNAVAILABLE", () => {
    for (const precision of ["bf16", "fp32"] as const) {
      let err: unknown;
      try {
        newTrainer({ nEmbd: 8, dim: 4, device: "cuda", precision });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(GavelError);
      expect((err as GavelError).code).toBe("CUDA_UNAVAILABLE");
      expect((err as GavelError).message).toMatch(/without CUDA/);
    }
  });

  it("rejects unknown devices and precisions with INVALID_ARGUMENT", () => {
    for (const o of [{ device: "gpu" }, { device: 1 }, { precision: "f16" }, { precision: true }]) {
      let err: unknown;
      try {
        newTrainer({ nEmbd: 8, dim: 4, ...(o as object) } as NativeTrainerOptions);
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(o)).toBeInstanceOf(GavelError);
      expect((err as GavelError).code).toBe("INVALID_ARGUMENT");
    }
  });
});

describe("lossAndGrad's twin hooks (CPU trainer)", () => {
  const nEmbd = 24, dim = 10;

  it("keepPairs returns m and argmax per pair; forcing that argmax reproduces the loss and gradients", async () => {
    const r = rng(321);
    const batch = randomBatch(r, nEmbd, 5, 9, 4);
    const t = newTrainer({ nEmbd, dim, seed: 4 });
    const free = await t.lossAndGrad(batch, { keepPairs: true });
    const n = pairCount(batch);
    expect(free.pairs!.m.length).toBe(n);
    expect(free.pairs!.argmax.length).toBe(n);
    expect(free.timings.uploadMs).toBe(0);
    // every argmax lies inside its skill, and m is a max-sim of unit vectors
    let p = 0;
    for (let task = 0; task + 1 < batch.queryOffsets.length; task++) {
      const nq = batch.queryOffsets[task + 1] - batch.queryOffsets[task];
      const c0 = batch.candidateOffsets[task], nc = batch.candidateOffsets[task + 1] - c0;
      for (let i = 0; i < nq; i++)
        for (let c = 0; c < nc; c++, p++) {
          const s = batch.candidates[c0 + c];
          expect(free.pairs!.argmax[p]).toBeGreaterThanOrEqual(0);
          expect(free.pairs!.argmax[p]).toBeLessThan(batch.skillOffsets[s + 1] - batch.skillOffsets[s]);
          expect(Math.abs(free.pairs!.m[p])).toBeLessThanOrEqual(1 + 1e-6);
        }
    }
    const forced = await t.lossAndGrad(batch, { keepPairs: true, forceArgmax: free.pairs!.argmax });
    expect(forced.pairs!.argmax).toEqual(free.pairs!.argmax);
    for (let i = 0; i < n; i++) expect(Math.abs(forced.pairs!.m[i] - free.pairs!.m[i])).toBeLessThan(1e-6);
    expect(Math.abs(forced.loss - free.loss)).toBeLessThan(1e-6 * Math.max(1, free.loss));
    for (const [a, b] of [[forced.gradWq, free.gradWq], [forced.gradWs!, free.gradWs!]] as const)
      for (let i = 0; i < a.length; i++) expect(Math.abs(a[i] - b[i])).toBeLessThan(1e-6);
    // without keepPairs, no pairs
    expect((await t.lossAndGrad(batch)).pairs).toBeUndefined();
  });

  it("forcing another key changes the loss; bad forced keys are INVALID_ARGUMENT", async () => {
    const r = rng(77);
    const batch = randomBatch(r, nEmbd, 3, 6, 3);
    const t = newTrainer({ nEmbd, dim, seed: 1 });
    const free = await t.lossAndGrad(batch, { keepPairs: true });
    const n = pairCount(batch);
    const other = Int32Array.from(free.pairs!.argmax);
    // move pair 0 to another key of its skill, when it has one
    const s0 = batch.candidates[0];
    const rows0 = batch.skillOffsets[s0 + 1] - batch.skillOffsets[s0];
    if (rows0 > 1) {
      other[0] = (other[0] + 1) % rows0;
      const moved = await t.lossAndGrad(batch, { keepPairs: true, forceArgmax: other });
      expect(moved.pairs!.m[0]).toBeLessThanOrEqual(free.pairs!.m[0]); // the max was the max
      expect(moved.loss).not.toBe(free.loss);
    }
    for (const [why, f] of [
      ["short", new Int32Array(n - 1)],
      ["negative", Int32Array.from({ length: n }, () => -1)],
      ["past the skill", Int32Array.from({ length: n }, () => 1000)],
    ] as const) {
      const err = await t.lossAndGrad(batch, { forceArgmax: f as Int32Array }).then(() => undefined, (e) => e);
      expect(err, why).toBeInstanceOf(GavelError);
      expect((err as GavelError).code, why).toBe("INVALID_ARGUMENT");
    }
    const err = await t.lossAndGrad(batch, { keepPairs: 1 } as never).then(() => undefined, (e) => e);
    expect((err as GavelError).code).toBe("INVALID_ARGUMENT");
    // the step reports its timings too
    const st = await t.step(batch);
    expect(st.timings.computeMs).toBeGreaterThan(0);
  });
});
