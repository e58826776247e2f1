// The span mean m̄ computed by the trainer over its resident store (lab/train/resident-scores.ts):
// every task against every skill, through chunked lossAndGrad calls. It equals a float64 reference
// (q = normalize(W_q h), d = normalize(W_s h) of the f16-rounded rows, or the f16-rounded given keys
// while freezeWs) within 1e-5, masked golds, empty skills and chunk boundaries included, stays within
// its call budgets, and runTraining ranks (glance lists, validation) exactly as the host path does.
import { describe, expect, it, vi } from "vitest";
import { coverKeys } from "../../src/route/index.js";
import { GavelError } from "../../src/errors.js";
import { keptRows, type TrainingExample } from "../../lab/train/batch.js";
import { residentSpanMeans, type ResidentScoreOptions } from "../../lab/train/resident-scores.js";
import { projectKeys, spanMeanScores } from "../../lab/train/retrieval.js";
import { createTrainer, runTraining, uploadSkills, type NativeResidentBatch, type NativeTrainer, type TrainingSet, type TrainLoopOptions } from "../../lab/train/trainer.js";
import { projectNormalize } from "../../src/kernels/kernels.js";
import { floatToHalf, halfToFloat } from "../../src/util/half.js";
import { freshSeed, gauss, randArray, rng } from "../helpers/random.js";

// Counts the host path's banks (refresh rounds and validations), to tell which path runTraining took.
const hostBanks = vi.hoisted(() => ({ count: 0 }));
vi.mock("../../lab/train/retrieval.js", async (importOriginal) => {
  const m = await importOriginal<typeof import("../../lab/train/retrieval.js")>();
  return {
    ...m,
    projectKeys: (...a: Parameters<typeof m.projectKeys>) => (hostBanks.count++, m.projectKeys(...a)),
    evaluateRetrieval: (...a: Parameters<typeof m.evaluateRetrieval>) => (hostBanks.count++, m.evaluateRetrieval(...a)),
  };
});

const f16 = (a: Float32Array) => halfToFloat(floatToHalf(a));
const TOL = 1e-5;

/** Rows of `x` (width w) through W (out × w), normalised, in float64; `W` undefined: rows as given. */
function unitRows(x: Float32Array, w: number, W: Float32Array | undefined, out: number): number[][] {
  const rows: number[][] = [];
  for (let i = 0; i < x.length / w; i++) {
    const h = x.subarray(i * w, (i + 1) * w);
    if (!W) {
      rows.push([...h]);
      continue;
    }
    const v = Array.from({ length: out }, (_, o) => h.reduce((a, hv, e) => a + W[o * w + e] * hv, 0));
    const n = Math.hypot(...v);
    rows.push(v.map((a) => (n === 0 ? 0 : a / n)));
  }
  return rows;
}

/** The float64 reference of one task's m̄ over `lib` (rows already f16-rounded; keys given when `keysGiven`). */
function reference(t: NonNullable<Pick<TrainingExample, "query" | "mask">>, lib: readonly Float32Array[], w: { wq: Float32Array; ws: Float32Array }, nEmbd: number, dim: number, keysGiven: boolean, keyRows?: readonly Int32Array[]): number[] {
  const width = keysGiven ? dim : nEmbd;
  const qs = unitRows(t.query, nEmbd, w.wq, dim);
  return lib.map((s, k) => {
    let ds = unitRows(s, width, keysGiven ? undefined : w.ws, dim);
    if (ds.length === 0) return -Infinity;
    const keep = t.mask?.skill === k ? keptRows(ds.length, t.mask.ranges, keyRows?.[k]) : undefined;
    if (keep) ds = [...keep].map((r) => ds[r]);
    return qs.reduce((a, q) => a + Math.max(...ds.map((d) => d.reduce((x, dv, o) => x + dv * q[o], 0))), 0) / qs.length;
  });
}

interface Call {
  tasks: number;
  /** Candidates per task: the chunk's skills (a masked gold replaces its own entry). */
  chunk: number;
  pairs: number;
  /** Rows of the chunk's entries (masked extras come on top). */
  chunkRows: number;
}

/** The trainer seen through a proxy that records the shape of each lossAndGrad call. */
function recordCalls(t: NativeTrainer, rowsOf: (s: number) => number): { trainer: NativeTrainer; calls: Call[] } {
  const calls: Call[] = [];
  const lossAndGrad: NativeTrainer["lossAndGrad"] = (b, o) => {
    const rb = b as NativeResidentBatch;
    const tasks = rb.queryOffsets.length - 1;
    const chunk = rb.candidateOffsets[1] - rb.candidateOffsets[0];
    expect([...rb.candidateOffsets]).toEqual(Array.from({ length: tasks + 1 }, (_, k) => k * chunk));
    let chunkRows = 0;
    for (let e = 0; e < chunk; e++) chunkRows += rowsOf(rb.skillRefs[e]);
    calls.push({ tasks, chunk, pairs: rb.queryOffsets[tasks] * chunk, chunkRows });
    return t.lossAndGrad(b, o);
  };
  // The native object's accessors and methods need the object itself as `this`.
  const trainer = new Proxy(t, {
    get: (target, key) => {
      if (key === "lossAndGrad") return lossAndGrad;
      const v = Reflect.get(target, key, target) as unknown;
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { trainer, calls };
}

describe("residentSpanMeans: m̄ over the resident store", () => {
  const nEmbd = 12, dim = 6;

  for (const freezeWs of [false, true]) {
    it(`${freezeWs ? "freezeWs (unit keys + keyRows masks)" : "states"}: equals the float64 reference, masks, empty skills and chunk boundaries included`, async () => {
      const seed = freshSeed();
      const r = rng(seed);
      const width = freezeWs ? dim : nEmbd;
      // 41 skills of 0–7 rows (skills 3 and 40 empty); keys: unit rows, key j from state row 2j + 1.
      const lib = Array.from({ length: 41 }, (_, i) => {
        const rows = i === 3 || i === 40 ? 0 : 1 + Math.floor(r() * 7);
        const a = randArray(r, rows * width, 2);
        if (freezeWs) for (let j = 0; j < rows; j++) {
          const row = a.subarray(j * width, (j + 1) * width);
          const n = Math.hypot(...row);
          row.forEach((x, o) => (row[o] = x / n));
        }
        return a;
      });
      const rowsOf = (s: number) => lib[s].length / width;
      const keyRows = freezeWs ? lib.map((_, s) => Int32Array.from({ length: rowsOf(s) }, (_, j) => 1 + 2 * j)) : undefined;
      // 11 tasks of 1–4 query rows; most mask a gold of ≥ 2 rows (one mask keeps nothing: ignored).
      const gold = lib.map((_, s) => s).filter((s) => rowsOf(s) >= 2);
      const tasks = Array.from({ length: 11 }, (_, k) => {
        const query = randArray(r, (1 + Math.floor(r() * 4)) * nEmbd);
        if (k % 4 === 3) return { query };
        const skill = gold[Math.floor(r() * gold.length)];
        // Every state row but the last (keys: every key but the last); task 0 masks everything.
        const ranges = k === 0 ? [0, 1000] : freezeWs ? [0, 2 * rowsOf(skill) - 1] : [0, rowsOf(skill) - 1];
        return { query, mask: { skill, ranges } };
      });
      const t = createTrainer({ nEmbd, dim, seed: seed % 1000, freezeWs, threads: 2 });
      try {
        uploadSkills(t, lib, width);
        const { trainer, calls } = recordCalls(t, rowsOf);
        const o: ResidentScoreOptions = { keyRows, maxTasks: 4, maxEntries: 6, maxRows: 20, maxPairs: 60 };
        const got = await residentSpanMeans(trainer, lib, tasks, o);
        const w = t.getWeights();
        const rounded = lib.map(f16);
        let worst = 0;
        got.forEach((sc, k) => {
          const want = reference(tasks[k], rounded, w, nEmbd, dim, freezeWs, keyRows);
          want.forEach((x, s) => {
            if (x === -Infinity) expect(sc[s], `seed ${seed} task ${k} skill ${s}`).toBe(-Infinity);
            else worst = Math.max(worst, Math.abs(sc[s] - x));
          });
        });
        expect(worst, `seed ${seed}`).toBeLessThan(TOL);
        // The masked golds really moved (a mask that keeps rows changes the score, one that keeps none doesn't).
        const unmasked = await residentSpanMeans(t, lib, tasks.map((x) => ({ query: x.query })), o);
        const maskedOnes = tasks.map((x, k) => k).filter((k) => k > 0 && tasks[k].mask);
        const at = (sc: Float64Array[], k: number) => sc[k][tasks[k].mask!.skill];
        for (const k of maskedOnes) expect(at(got, k)).toBeLessThanOrEqual(at(unmasked, k) + 1e-6);
        expect(maskedOnes.some((k) => at(got, k) < at(unmasked, k) - 1e-3), `seed ${seed}`).toBe(true);
        expect(at(unmasked, 0)).toBe(at(got, 0));
        // Several groups and several chunks per group, each call within its budgets (a lone skill may exceed them).
        expect(new Set(calls.map((c) => c.tasks))).toEqual(new Set([4, 3]));
        expect(calls.filter((c) => c.tasks === 3).length).toBeGreaterThan(1);
        for (const c of calls) {
          expect(c.chunk).toBeLessThanOrEqual(o.maxEntries!);
          if (c.chunk > 1) expect(c.pairs, `seed ${seed}`).toBeLessThanOrEqual(o.maxPairs!);
          if (c.chunk > 1) expect(c.chunkRows, `seed ${seed}`).toBeLessThanOrEqual(o.maxRows!);
        }
        // Every non-empty skill was sent once per group.
        expect(calls.filter((c) => c.tasks === 3).reduce((a, c) => a + c.chunk, 0)).toBe(39);
      } finally {
        t.dispose();
      }
    });
  }

  it("equals the host path's m̄ (projectKeys + spanMeanScores) on f16-exact states", async () => {
    const seed = freshSeed();
    const r = rng(seed);
    const lib = Array.from({ length: 30 }, (_, i) => f16(randArray(r, (i === 7 ? 0 : 1 + Math.floor(r() * 6)) * nEmbd, 2)));
    const tasks = Array.from({ length: 9 }, (_, k) => ({ query: randArray(r, (1 + (k % 3)) * nEmbd), mask: k % 2 === 0 ? { skill: k, ranges: [0, 1] } : undefined }));
    const t = createTrainer({ nEmbd, dim, seed: 1, threads: 2 });
    try {
      uploadSkills(t, lib, nEmbd);
      const got = await residentSpanMeans(t, lib, tasks, { maxEntries: 7 });
      const w = t.getWeights();
      const kb = await projectKeys(lib, w.ws, nEmbd, dim);
      try {
        for (const [k, task] of tasks.entries()) {
          const host = await spanMeanScores(await projectNormalize(task.query, nEmbd, w.wq, dim), kb, task.mask);
          host.forEach((x, s) => (x === -Infinity ? expect(got[k][s]).toBe(-Infinity) : expect(Math.abs(got[k][s] - x), `seed ${seed}`).toBeLessThan(TOL)));
        }
      } finally {
        kb.dispose();
      }
    } finally {
      t.dispose();
    }
  });

  it("refuses a store that does not hold the library; no task, no call", async () => {
    const t = createTrainer({ nEmbd, dim, threads: 1 });
    try {
      const lib = [randArray(rng(1), 2 * nEmbd), new Float32Array(0)];
      uploadSkills(t, lib.slice(0, 1), nEmbd);
      await expect(residentSpanMeans(t, lib, [{ query: new Float32Array(nEmbd) }])).rejects.toBeInstanceOf(GavelError);
      uploadSkills(t, lib, nEmbd);
      expect(await residentSpanMeans(t, lib, [])).toEqual([]);
      await expect(residentSpanMeans(t, lib, [{ query: new Float32Array(nEmbd + 1) }])).rejects.toBeInstanceOf(GavelError);
      const [only] = await residentSpanMeans(t, lib, [{ query: randArray(rng(2), nEmbd) }]);
      expect(only[1]).toBe(-Infinity);
      expect(Number.isFinite(only[0])).toBe(true);
    } finally {
      t.dispose();
    }
  });
});

describe("runTraining: the resident scores rank as the host path does", () => {
  const nEmbd = 16, dim = 8;

  /** Skills = noisy copies of a centre, f16-exact (so both runs train alike); queries mask row 0 of their gold. */
  function synthetic(seed: number, nSkills: number): TrainingSet {
    const r = rng(seed);
    const centres = Array.from({ length: nSkills }, () => randArray(r, nEmbd));
    const noisy = (c: Float32Array, s: number) => c.map((x) => x + gauss(r) * s);
    const skills = centres.map((c, i) => {
      const rows = i === nSkills - 1 ? 0 : 4 + Math.floor(r() * 3); // one skill without rows
      const out = new Float32Array(rows * nEmbd);
      for (let j = 0; j < rows; j++) out.set(j % 2 === 0 ? noisy(c, 0.5) : randArray(r, nEmbd), j * nEmbd);
      return f16(out);
    });
    const examples = (n: number) =>
      Array.from({ length: n }, (_, k) => {
        const s = k % (nSkills - 1);
        const q = new Float32Array(3 * nEmbd);
        for (let i = 0; i < 3; i++) q.set(noisy(centres[s], 0.7), i * nEmbd);
        return { query: q, positives: [s], twins: [(s + 5) % (nSkills - 1)], mask: { skill: s, ranges: [0, 1] } };
      });
    return { nEmbd, skills, train: examples(2 * nSkills), val: examples(nSkills) };
  }

  const base: Omit<TrainLoopOptions, "steps"> = {
    dim, seed: 5, lr: 2e-2, batchTasks: 5, batchTokens: 400, negatives: 6, glanceNegatives: 3, refreshEvery: 3, refreshTasks: 9, glancePool: 4, valEvery: 2, inBatch: true, threads: 2,
  };

  /** One run on a fresh set: its result, every validation it reported, and the final glance lists. */
  async function run(seed: number, o: TrainLoopOptions) {
    const set = synthetic(seed, 14);
    const vals: unknown[] = [];
    const before = hostBanks.count;
    const res = await runTraining(set, { ...o, onProgress: (p) => p.val && vals.push(p.val) });
    return { res, vals, lists: set.train.map((ex) => ex.glance), hostBanks: hostBanks.count - before };
  }

  it("the same glance lists, validation metrics and steps with resident: true as with false (main phase and fine-tune)", async () => {
    const seed = freshSeed() % 1000;
    const on = await run(seed, { ...base, steps: 10, resident: true });
    const off = await run(seed, { ...base, steps: 10, resident: false });
    // The resident run never built a host bank; the host run built one per refresh and validation.
    expect(on.hostBanks).toBe(0);
    expect(off.hostBanks).toBe(4 + 5);
    expect(on.res.refreshes).toBe(4);
    expect(on.lists, `seed ${seed}`).toEqual(off.lists);
    expect(on.lists.filter((l) => l !== undefined).length).toBeGreaterThan(9);
    expect(on.vals, `seed ${seed}`).toEqual(off.vals);
    expect(on.vals).toHaveLength(5);
    expect(on.res.losses).toEqual(off.res.losses);
    expect(on.res.ws).toEqual(off.res.ws);
    // The fine-tune: W_q against given cover keys (f16-exact), masks through keyRows.
    const set = synthetic(seed, 14);
    const keys: Float32Array[] = [];
    const keyRows: Int32Array[] = [];
    for (const s of set.skills) {
      const c = s.length > 0 ? await coverKeys(s, nEmbd, { ws: on.res.ws, dim, eps: 0.4 }) : { keys: new Float32Array(0), kept: new Int32Array(0) };
      keys.push(f16(c.keys));
      keyRows.push(c.kept);
    }
    const ft = { ...base, steps: 6, phase: "finetune" as const, keys, keyRows, init: { wq: on.res.wq, ws: on.res.ws } };
    const ftOn = await run(seed, { ...ft, resident: true });
    const ftOff = await run(seed, { ...ft, resident: false });
    expect(ftOn.hostBanks).toBe(0);
    expect(ftOff.hostBanks).toBeGreaterThan(0);
    expect(ftOn.lists, `seed ${seed}`).toEqual(ftOff.lists);
    expect(ftOn.vals, `seed ${seed}`).toEqual(ftOff.vals);
    expect(ftOn.res.wq).toEqual(ftOff.res.wq);
  });
});
