// Masked positives (inverse cloze), twins, the glance's hard negatives refreshed during training, R@20,
// and the schedule's resumability: a run cut into pieces (checkpoints, a time budget, the fine-tune
// phase, refresh rounds that straddle checkpoints) ends bit for bit where an uninterrupted run ends.
import { describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { coverKeys } from "../../src/route/index.js";
import { keptRows } from "../../lab/train/batch.js";
import { refreshGlanceNegatives, refreshRound, twinsOf } from "../../lab/train/hard-negatives.js";
import { projectKeys } from "../../lab/train/retrieval.js";
import { createTrainer, evaluateRetrieval, loadCheckpoint, packBatch, Rng, runTraining, saveCheckpoint, type NativeTrainBatch, type TrainingSet, type TrainLoopOptions } from "../../lab/train/trainer.js";
import { gauss, randArray, rng } from "../helpers/random.js";


/** Skills = noisy copies of a centre (and distractors); queries = noisy centre rows; every query masks its positive's row 0. */
function synthetic(seed: number, nSkills: number, nEmbd: number, masked = true): TrainingSet {
  const r = rng(seed);
  const centres = Array.from({ length: nSkills }, () => randArray(r, nEmbd));
  const noisy = (c: Float32Array, s: number) => c.map((x) => x + gauss(r) * s);
  const skills = centres.map((c) => {
    const rows = 4 + Math.floor(r() * 3);
    const out = new Float32Array(rows * nEmbd);
    for (let j = 0; j < rows; j++) out.set(j % 2 === 0 ? noisy(c, 0.5) : randArray(r, nEmbd), j * nEmbd);
    return out;
  });
  const examples = (n: number) =>
    Array.from({ length: n }, (_, k) => {
      const s = k % nSkills;
      const q = new Float32Array(3 * nEmbd);
      for (let i = 0; i < 3; i++) q.set(noisy(centres[s], 0.7), i * nEmbd);
      return { query: q, positives: [s], ...(masked ? { mask: { skill: s, ranges: [0, 1] } } : {}) };
    });
  return { nEmbd, skills, train: examples(2 * nSkills), val: examples(nSkills) };
}

/** The candidates (as skill indices, masked entries as "m<skill>") and flags of each task of a batch. */
function tasksOf(b: NativeTrainBatch, set: TrainingSet, width: number) {
  const entry = (i: number) => {
    const rows = b.skillOffsets[i + 1] - b.skillOffsets[i];
    const first = b.skillStates.subarray(b.skillOffsets[i] * width, (b.skillOffsets[i] + 1) * width);
    const s = set.skills.findIndex((st) => {
      for (let r = 0; r < st.length / width; r++) if (st[r * width] === first[0] && st[r * width + 1] === first[1]) return true;
      return false;
    });
    return rows === set.skills[s].length / width ? String(s) : `m${s}`;
  };
  return Array.from({ length: b.candidateOffsets.length - 1 }, (_, t) => {
    const cand: string[] = [];
    const pos: number[] = [];
    for (let j = b.candidateOffsets[t]; j < b.candidateOffsets[t + 1]; j++) {
      cand.push(entry(b.candidates[j]));
      pos.push(b.positive[j]);
    }
    return { cand, pos };
  });
}

describe("masked positives and twins in packBatch", () => {
  const nEmbd = 8;
  const set = synthetic(3, 12, nEmbd);
  const width = { skillWidth: nEmbd, queryWidth: nEmbd };

  it("a masked positive is its own entry without the masked rows; twins are never negatives", () => {
    const examples = set.train.map((e) => ({ ...e, twins: [(e.positives[0] + 1) % 12] }));
    for (let seed = 1; seed <= 20; seed++) {
      const p = packBatch(examples, set.skills, new Rng(seed), { batchTasks: 4, batchTokens: 1e6, negatives: 11, inBatch: seed % 2 === 0, ...width });
      for (const { cand, pos } of tasksOf(p.batch, set, nEmbd)) {
        const g = Number(cand[0].slice(1));
        expect(cand[0]).toBe(`m${g}`);
        expect(pos[0]).toBe(1);
        expect(pos.slice(1).every((x) => x === 0)).toBe(true);
        expect(cand).not.toContain(String(g)); // never the unmasked positive
        expect(cand).not.toContain(String((g + 1) % 12)); // never the twin
        expect(cand.slice(1).some((c) => c.startsWith("m"))).toBe(false); // another task's masked entry is not a negative
        expect(cand.length).toBe(new Set(cand).size);
      }
      // the masked entry holds the positive's rows 1… exactly
      const b = p.batch;
      const t0 = b.candidates[b.candidateOffsets[0]];
      const rows = b.skillOffsets[t0 + 1] - b.skillOffsets[t0];
      const states = b.skillStates.subarray(b.skillOffsets[t0] * nEmbd, b.skillOffsets[t0 + 1] * nEmbd);
      const src = set.skills.find((s) => s.length / nEmbd === rows + 1 && s[nEmbd] === states[0])!;
      expect(Array.from(states)).toEqual(Array.from(src.subarray(nEmbd)));
    }
  });

  it("keptRows: state rows, or keys mapped to their rows; nothing left gives undefined", () => {
    expect(Array.from(keptRows(6, [1, 3, 4, 5])!)).toEqual([0, 3, 5]);
    expect(Array.from(keptRows(3, [0, 2], Int32Array.of(4, 0, 1))!)).toEqual([0]);
    expect(keptRows(2, [0, 9])).toBeUndefined();
  });

  it("twinsOf: same name or same description, either way", () => {
    const t = twinsOf([
      { name: "pdf", description: "A", body: "" },
      { name: "PDF ", description: "B", body: "" },
      { name: "x", description: "b", body: "" },
      { name: "y", description: "", body: "" },
      { name: "z", description: "", body: "" },
    ]);
    expect(t.get(0)).toEqual([1]);
    expect(t.get(1)).toEqual([0, 2]);
    expect(t.get(2)).toEqual([1]);
    expect(t.has(3)).toBe(false); // empty descriptions are no match
  });
});

/** m̄ of every skill for one example, in float64 from the weights (the oracle of the refresh). */
function meanMaxSim(set: TrainingSet, q: Float32Array, w: { wq: Float32Array; ws: Float32Array }, dim: number): number[] {
  const { nEmbd } = set;
  const proj = (W: Float32Array, x: Float32Array) => {
    const out: number[][] = [];
    for (let r = 0; r < x.length / nEmbd; r++) {
      const v = Array.from({ length: dim }, (_, o) => {
        let t = 0;
        for (let e = 0; e < nEmbd; e++) t += W[o * nEmbd + e] * x[r * nEmbd + e];
        return t;
      });
      const n = Math.hypot(...v);
      out.push(v.map((a) => a / n));
    }
    return out;
  };
  const qs = proj(w.wq, q);
  return set.skills.map((s) => {
    const ks = proj(w.ws, s);
    return qs.reduce((t, qi) => t + Math.max(...ks.map((k) => k.reduce((a, x, o) => a + x * qi[o], 0))), 0) / qs.length;
  });
}

describe("the glance's hard negatives", () => {
  const nEmbd = 16, dim = 8;

  it("are the current glance's top skills by m̄, never a gold or a twin, and change with the weights", async () => {
    const set = synthetic(5, 15, nEmbd);
    set.train.forEach((ex) => (ex.twins = [(ex.positives[0] + 3) % 15]));
    const lists = async (seed: number) => {
      const t = createTrainer({ nEmbd, dim, seed });
      const w = t.getWeights();
      const keys = await projectKeys(set.skills, w.ws, nEmbd, dim);
      await refreshGlanceNegatives(set.train, { keys, wq: w.wq, nEmbd, pool: 5, which: refreshRound(set.train.length, 0) });
      return { w, lists: set.train.map((ex) => ex.glance!) };
    };
    const a = await lists(1);
    for (const [i, ex] of set.train.entries()) {
      const l = a.lists[i];
      expect(l).toHaveLength(5);
      expect(l).not.toContain(ex.positives[0]);
      expect(l).not.toContain(ex.twins![0]);
      const scores = meanMaxSim(set, ex.query, a.w, dim);
      const want = scores.map((s, k) => [s, k]).sort((x, y) => y[0] - x[0]).map(([, k]) => k).filter((k) => k !== ex.positives[0] && k !== ex.twins![0]).slice(0, 5);
      expect(l).toEqual(want);
    }
    const b = await lists(2);
    expect(b.lists).not.toEqual(a.lists);
  });

  it("refreshRound covers every example in turn", () => {
    expect(refreshRound(5, 0)).toEqual([0, 1, 2, 3, 4]);
    expect(refreshRound(5, 0, 2)).toEqual([0, 1]);
    expect(refreshRound(5, 2, 2)).toEqual([4, 0]);
  });

  it("training with them refreshes every N steps, learns, and reports R@20", async () => {
    const set = synthetic(6, 30, nEmbd);
    const seen: string[] = [];
    const res = await runTraining(set, {
      dim, steps: 150, seed: 2, lr: 1e-2, batchTasks: 8, negatives: 6, glanceNegatives: 3, refreshEvery: 50, glancePool: 6, valEvery: 75,
      onProgress: (p) => p.step % 50 === 1 && seen.push(JSON.stringify(set.train[0].glance)),
    });
    expect(res.refreshes).toBe(3);
    expect(new Set(seen).size).toBeGreaterThan(1); // the lists moved as the weights did
    const m = await evaluateRetrieval(set.val, set.skills, res, nEmbd, dim);
    expect(m.hit1).toBeGreaterThan(0.5);
    expect(m.recall20).toBeGreaterThanOrEqual(m.recall10);
    expect(res.val!.recall20).toBeGreaterThanOrEqual(res.val!.recall10);
  });
});

describe("resumable schedule", () => {
  const nEmbd = 16, dim = 8;
  const base: Omit<TrainLoopOptions, "steps"> = {
    dim, seed: 4, lr: 5e-3, batchTasks: 5, batchTokens: 400, negatives: 6, glanceNegatives: 2, refreshEvery: 3, refreshTasks: 7, glancePool: 4, checkpointEvery: 4, inBatch: true, threads: 1,
  };

  it("a run cut by checkpoints and by a zero time budget ends bit for bit like an uninterrupted one, fine-tune included", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gavel-sched-"));
    try {
      const full = await schedule(synthetic(9, 14, nEmbd), dir, "full", {});
      // Piecewise: stop after every step (stopAfterSeconds 0), each piece a fresh set and trainer as a new process would have.
      let pieces = 0;
      let cut: Awaited<ReturnType<typeof schedule>>;
      do {
        cut = await schedule(synthetic(9, 14, nEmbd), dir, "cut", { resume: true, stopAfterSeconds: 0 });
        pieces++;
      } while (!cut.finished && pieces < 100);
      expect(cut.finished).toBe(true);
      // One step per call, except that the call which ends the main phase goes straight on to the
      // fine-tune's first step: 9 + 1 + 5 calls.
      expect(pieces).toBe(15);
      expect(cut.ft.wq).toEqual(full.ft.wq);
      expect(cut.main.ws).toEqual(full.main.ws);
      const ck = await loadCheckpoint(join(dir, "cut.ft.ckpt"));
      expect(ck?.meta.phase).toBe("finetune");
      expect(ck?.lists).toHaveLength(28);
      // A fine-tune checkpoint from other main weights is refused.
      const other = synthetic(9, 14, nEmbd);
      const keys = await coverAll(other, full.main.ws);
      await expect(runTraining(other, { ...base, steps: 6, phase: "finetune", ...keys, init: { wq: full.main.wq, ws: full.main.wq }, checkpoint: join(dir, "cut.ft.ckpt"), resume: true })).rejects.toThrow(/another configuration/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  /** The fine-tune's inputs: ε-covers of every skill under W_s, with their rows. */
  async function coverAll(set: TrainingSet, ws: Float32Array) {
    const keys: Float32Array[] = [];
    const keyRows: Int32Array[] = [];
    for (const s of set.skills) {
      const c = await coverKeys(s, nEmbd, { ws, dim, eps: 0.5 });
      keys.push(c.keys);
      keyRows.push(c.kept);
    }
    return { keys, keyRows };
  }

  /** Main (10 steps) then fine-tune (6 steps), as pipeline.ts chains them. */
  async function schedule(set: TrainingSet, dir: string, name: string, o: Partial<TrainLoopOptions>) {
    const main = await runTraining(set, { ...base, ...o, steps: 10, checkpoint: join(dir, `${name}.ckpt`) });
    if (!main.finished) return { finished: false, main, ft: main };
    const ft = await runTraining(set, { ...base, ...o, steps: 6, phase: "finetune", ...(await coverAll(set, main.ws)), init: { wq: main.wq, ws: main.ws }, checkpoint: join(dir, `${name}.ft.ckpt`) });
    return { finished: ft.finished, main, ft };
  }

  it("checkpoints carry the per-example lists and refuse a damaged file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gavel-ck-"));
    try {
      const t = createTrainer({ nEmbd: 4, dim: 2, seed: 1 });
      const path = join(dir, "x.ckpt");
      await saveCheckpoint(path, { phase: "main", rng: 7, config: "c", nEmbd: 4, dim: 2 }, t.getState(), [[3, 1], undefined, [2]]);
      const ck = await loadCheckpoint(path);
      expect(ck?.lists).toEqual([[3, 1], [], [2]]);
      expect(ck?.state.wq).toEqual(t.getState().wq);
      const { writeFileSync, readFileSync } = await import("node:fs");
      const buf = readFileSync(path);
      writeFileSync(path, buf.subarray(0, buf.length - 4));
      await expect(loadCheckpoint(path)).rejects.toThrow(/wrong size/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
