// The trainer's resident skills (issue 12): skills held once as f16 in the trainer, batches that name
// them by index (and masked entries by their kept rows). A resident batch gives exactly the loss and
// gradients of the explicit batch carrying the same rows rounded through f16; every malformed input
// is a typed error; runTraining with resident states equals runTraining fed f16-rounded states, bit
// for bit, and a resumed resident run equals an uninterrupted one.
import { describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GavelError } from "../../src/errors.js";
import { coverKeys } from "../../src/route/index.js";
import { createTrainer, packBatch, Rng, runTraining, type NativeResidentBatch, type NativeTrainBatch, type NativeTrainer, type TrainingSet, type TrainLoopOptions } from "../../lab/train/trainer.js";
import { uploadSkills } from "../../lab/train/trainer.js";
import { floatToHalf, halfToFloat } from "../../src/util/half.js";
import { freshSeed, gauss, randArray, rng } from "../helpers/random.js";

const f16 = (a: Float32Array) => halfToFloat(floatToHalf(a));

/** A library of `n` skills of 0–6 rows (skill 1 has none) of `width` floats, a few values off the f16 grid by far. */
function library(r: () => number, n: number, width: number): Float32Array[] {
  return Array.from({ length: n }, (_, i) => {
    const rows = i === 1 ? 0 : 1 + Math.floor(r() * 6);
    const a = randArray(r, rows * width, 3);
    if (rows > 0) a[0] = 1e-6 * gauss(r); // an f16 subnormal
    return a;
  });
}

/** A random resident batch over `lib`: distinct entries, some masked (kept rows), 2–4 candidates a task. */
function residentBatch(r: () => number, lib: readonly Float32Array[], width: number, nEmbd: number): NativeResidentBatch {
  const usable = lib.map((s, i) => (s.length > 0 ? i : -1)).filter((i) => i >= 0);
  const nEntries = 5 + Math.floor(r() * 4);
  const refs: number[] = [];
  const keep: number[][] = [];
  for (let e = 0; e < nEntries; e++) {
    const s = usable[Math.floor(r() * usable.length)];
    const rows = lib[s].length / width;
    refs.push(s);
    // Every other entry keeps a random non-empty subset of its rows (sorted); the rest keep all.
    const kept = e % 2 === 1 && rows > 1 ? [...Array(rows).keys()].filter(() => r() < 0.6) : [];
    keep.push(kept);
  }
  const keepOffsets = new Int32Array(nEntries + 1);
  keep.forEach((k, e) => (keepOffsets[e + 1] = keepOffsets[e] + k.length));
  const nTasks = 2 + Math.floor(r() * 3);
  const queryOffsets = new Int32Array(nTasks + 1);
  const cands: number[] = [];
  const pos: number[] = [];
  const candidateOffsets = new Int32Array(nTasks + 1);
  for (let t = 0; t < nTasks; t++) {
    queryOffsets[t + 1] = queryOffsets[t] + 1 + Math.floor(r() * 4);
    // In-batch style: each task sees many of the batch's entries, the first positive.
    const order = [...Array(nEntries).keys()].sort(() => r() - 0.5).slice(0, 2 + Math.floor(r() * (nEntries - 1)));
    order.forEach((e, j) => {
      cands.push(e);
      pos.push(j === 0 || r() < 0.2 ? 1 : 0);
    });
    candidateOffsets[t + 1] = cands.length;
  }
  return {
    queryStates: randArray(r, queryOffsets[nTasks] * nEmbd),
    queryOffsets,
    skillRefs: Int32Array.from(refs),
    keepOffsets,
    keepRows: Int32Array.from(keep.flat()),
    candidateOffsets,
    candidates: Int32Array.from(cands),
    positive: Uint8Array.from(pos),
  };
}

/** The explicit batch carrying the rows a resident batch names, from `lib` (rounded or not). */
function explicitOf(b: NativeResidentBatch, lib: readonly Float32Array[], width: number): NativeTrainBatch {
  const parts: Float32Array[] = [];
  const skillOffsets = new Int32Array(b.skillRefs.length + 1);
  b.skillRefs.forEach((s, e) => {
    const k0 = b.keepOffsets![e], k1 = b.keepOffsets![e + 1];
    const rows = k1 > k0 ? [...b.keepRows!.subarray(k0, k1)] : [...Array(lib[s].length / width).keys()];
    for (const row of rows) parts.push(lib[s].subarray(row * width, (row + 1) * width));
    skillOffsets[e + 1] = skillOffsets[e] + rows.length;
  });
  const skillStates = new Float32Array(skillOffsets[b.skillRefs.length] * width);
  parts.forEach((p, i) => skillStates.set(p, i * width));
  const { queryStates, queryOffsets, candidateOffsets, candidates, positive } = b;
  return { queryStates, queryOffsets, skillStates, skillOffsets, candidateOffsets, candidates, positive };
}

/** Adds `lib` in `pieces` calls; returns the final count. */
function addAll(t: NativeTrainer, lib: readonly Float32Array[], width: number, pieces: number): number {
  let count = 0;
  for (let p = 0; p < pieces; p++) {
    const part = lib.slice(Math.floor((p * lib.length) / pieces), Math.floor(((p + 1) * lib.length) / pieces));
    const states = new Float32Array(part.reduce((a, s) => a + s.length, 0));
    let at = 0;
    for (const s of part) {
      states.set(s, at);
      at += s.length;
    }
    count = t.addSkills(states, Int32Array.from(part.map((s) => s.length / width)));
  }
  return count;
}

async function codeOf(p: Promise<unknown> | (() => unknown)): Promise<string | undefined> {
  try {
    await (typeof p === "function" ? p() : p);
  } catch (e) {
    expect(e).toBeInstanceOf(GavelError);
    return (e as GavelError).code;
  }
  return undefined;
}

describe("resident skills: the same step as the explicit batch of f16-rounded rows", () => {
  const nEmbd = 12, dim = 6;

  for (const freezeWs of [false, true]) {
    it(`${freezeWs ? "freezeWs (dim-wide keys)" : "states (nEmbd wide)"}: loss and gradients exact, masked entries and in-batch candidates included`, async () => {
      const seed = freshSeed();
      const r = rng(seed);
      const width = freezeWs ? dim : nEmbd;
      const lib = library(r, 23, width);
      const rounded = lib.map(f16);
      const a = createTrainer({ nEmbd, dim, seed: 3, freezeWs, threads: 2 });
      const b = createTrainer({ nEmbd, dim, seed: 3, freezeWs, threads: 2 });
      try {
        expect(a.residentSkills).toBe(0);
        expect(addAll(a, lib, width, 3), `seed ${seed}`).toBe(lib.length);
        expect(a.residentSkills).toBe(lib.length);
        const rows = lib.reduce((n, s) => n + s.length / width, 0);
        expect(a.residentBytes).toBeGreaterThanOrEqual(rows * width * 2);
        for (let k = 0; k < 4; k++) {
          const rb = residentBatch(r, lib, width, nEmbd);
          const eb = explicitOf(rb, rounded, width);
          const [x, y] = [await a.lossAndGrad(rb, { keepPairs: true }), await b.lossAndGrad(eb, { keepPairs: true })];
          expect(x.loss, `seed ${seed}`).toBe(y.loss);
          expect(x.gradWq, `seed ${seed}`).toEqual(y.gradWq);
          expect(x.gradWs, `seed ${seed}`).toEqual(y.gradWs);
          expect(x.pairs!.argmax).toEqual(y.pairs!.argmax);
          // Not the unrounded rows' step (the f16 rounding is real).
          // (the pair scores m, not the loss: a saturated loss can round to the same value either way)
          if (k === 0) expect((await b.lossAndGrad(explicitOf(rb, lib, width), { keepPairs: true })).pairs!.m).not.toEqual(x.pairs!.m);
          // Steps too: the weights move the same way.
          const [sa, sb] = [await a.step(rb), await b.step(eb)];
          expect(sa.loss).toBe(sb.loss);
          expect(a.getState()).toEqual(b.getState());
        }
        // A batch without keepOffsets keeps every row.
        const rb = residentBatch(r, lib, width, nEmbd);
        const { keepOffsets: _o, keepRows: _r, ...all } = rb;
        const none = { ...rb, keepOffsets: new Int32Array(rb.skillRefs.length + 1), keepRows: new Int32Array(0) };
        expect((await a.lossAndGrad(all)).loss).toBe((await b.lossAndGrad(explicitOf(none, rounded, width))).loss);
        a.clearSkills();
        expect(a.residentSkills).toBe(0);
        expect(a.residentBytes).toBe(0);
        expect(await codeOf(a.step(rb))).toBe("INVALID_ARGUMENT");
      } finally {
        a.dispose();
        b.dispose();
      }
    });
  }

  it("packBatch's resident batch names the rows its explicit batch carries (same draws)", () => {
    const seed = freshSeed();
    const r = rng(seed);
    const lib = library(r, 17, nEmbd);
    // The masked positives keep rows by construction: 3 rows each, of which the mask takes row 0
    // (a 1-row skill would keep none, and a batch of such would hold no kept row at all).
    for (const s of [0, 2, 3, 4, 5]) lib[s] = randArray(r, 3 * nEmbd, 3);
    const train = Array.from({ length: 9 }, (_, k) => {
      const s = [0, 2, 3, 4, 5][k % 5];
      return { query: randArray(r, 2 * nEmbd), positives: [s], hard: [6, 7, 8], mask: { skill: s, ranges: [0, 1] } };
    });
    const o = { batchTasks: 4, batchTokens: 1e6, negatives: 5, hardNegatives: 2, inBatch: true, skillWidth: nEmbd, queryWidth: nEmbd };
    const e = packBatch(train, lib, new Rng(seed), o);
    const rr = new Rng(seed);
    const p = packBatch(train, lib, rr, { ...o, resident: true });
    const after = new Rng(seed);
    packBatch(train, lib, after, o);
    expect(rr.state).toBe(after.state);
    expect(p.tokens).toBe(e.tokens);
    expect(p.tasks).toBe(e.tasks);
    expect(explicitOf(p.batch, lib, nEmbd)).toEqual(e.batch);
    expect(p.batch.keepRows!.length, `seed ${seed}`).toBeGreaterThan(0);
  });
});

describe("resident skills: malformed input is a typed error, never a crash", () => {
  const nEmbd = 8, dim = 4;

  it("addSkills and resident batches reject every malformed argument with INVALID_ARGUMENT", async () => {
    const seed = freshSeed();
    const r = rng(seed);
    const lib = library(r, 9, nEmbd);
    const t = createTrainer({ nEmbd, dim, threads: 1 });
    try {
      // The malformed kept-row cases below need an entry that keeps ≥ 2 rows: draw until one does
      // (a random batch may have none; seen once in CI).
      const hasPair = (b: NativeResidentBatch) => b.keepOffsets!.some((o, e) => e < b.skillRefs.length && b.keepOffsets![e + 1] - o >= 2);
      let good = residentBatch(r, lib, nEmbd, nEmbd);
      for (let tries = 0; !hasPair(good) && tries < 1000; tries++) good = residentBatch(r, lib, nEmbd, nEmbd);
      expect(hasPair(good), `seed ${seed}: no batch keeps 2 rows of an entry`).toBe(true);
      // Refs before any addSkills.
      expect(await codeOf(t.step(good))).toBe("INVALID_ARGUMENT");
      const flat = new Float32Array(lib.reduce((a, s) => a + s.length, 0));
      let at = 0;
      for (const s of lib) (flat.set(s, at), (at += s.length));
      const rows = Int32Array.from(lib.map((s) => s.length / nEmbd));
      const badAdds: [string, unknown, unknown][] = [
        ["states not a Float32Array", new Float64Array(flat.length), rows],
        ["rows not an Int32Array", flat, Float32Array.from(rows)],
        ["too few states", flat.subarray(1), rows],
        ["too many states", new Float32Array(flat.length + nEmbd), rows],
        ["negative rows", flat, rows.map((x, i) => (i === 0 ? -1 : x))],
        ["NaN", flat.map((x, i) => (i === 5 ? NaN : x)), rows],
        ["Infinity", flat.map((x, i) => (i === flat.length - 1 ? -Infinity : x)), rows],
        ["beyond f16", flat.map((x, i) => (i === 7 ? 70000 : x)), rows],
      ];
      for (const [why, s, n] of badAdds) {
        expect(await codeOf(() => t.addSkills(s as Float32Array, n as Int32Array)), why).toBe("INVALID_ARGUMENT");
        expect(t.residentSkills, why).toBe(0);
      }
      expect(t.addSkills(flat, rows)).toBe(lib.length);
      const n = good.skillRefs.length;
      const kept = good.keepOffsets!.findIndex((o, e) => e < n && good.keepOffsets![e + 1] - o >= 2);
      expect(kept, `seed ${seed}`).toBeGreaterThanOrEqual(0);
      const k0 = good.keepOffsets![kept];
      const swap = good.keepRows!.slice();
      [swap[k0], swap[k0 + 1]] = [swap[k0 + 1], swap[k0]];
      const dup = good.keepRows!.slice();
      dup[k0 + 1] = dup[k0];
      const far = good.keepRows!.slice();
      far[k0] = 99;
      const neg = good.keepRows!.slice();
      neg[k0] = -1;
      const badBatches: [string, unknown][] = [
        ["ref out of range", { ...good, skillRefs: good.skillRefs.map((x, i) => (i === 0 ? lib.length : x)) }],
        ["negative ref", { ...good, skillRefs: good.skillRefs.map((x, i) => (i === 0 ? -1 : x)) }],
        ["refs not Int32", { ...good, skillRefs: Float32Array.from(good.skillRefs) }],
        ["no refs", { ...good, skillRefs: new Int32Array(0), keepOffsets: Int32Array.from([0]), keepRows: new Int32Array(0) }],
        ["unsorted kept rows", { ...good, keepRows: swap }],
        ["repeated kept row", { ...good, keepRows: dup }],
        ["kept row out of range", { ...good, keepRows: far }],
        ["negative kept row", { ...good, keepRows: neg }],
        ["keepOffsets too short", { ...good, keepOffsets: good.keepOffsets!.subarray(1) }],
        ["keepRows too short", { ...good, keepRows: good.keepRows!.subarray(1) }],
        ["keepRows alone", { ...good, keepOffsets: undefined }],
        ["keepOffsets decreasing", { ...good, keepOffsets: good.keepOffsets!.map((x, i) => (i === 1 ? x + 100 : x)) }],
        ["states and refs", { ...good, skillStates: new Float32Array(nEmbd), skillOffsets: Int32Array.from([0, 1]) }],
        ["candidate beyond the entries", { ...good, candidates: good.candidates.map((x, i) => (i === 0 ? n : x)) }],
        ["a row-less skill as candidate", { ...good, skillRefs: good.skillRefs.map((x, i) => (i === good.candidates[0] ? 1 : x)), keepOffsets: new Int32Array(n + 1), keepRows: new Int32Array(0) }],
        ["short queries", { ...good, queryStates: good.queryStates.subarray(1) }],
      ];
      for (const [why, b] of badBatches) {
        expect(await codeOf(t.step(b as NativeResidentBatch)), why).toBe("INVALID_ARGUMENT");
        expect(await codeOf(t.lossAndGrad(b as NativeResidentBatch)), why).toBe("INVALID_ARGUMENT");
      }
      expect(t.steps).toBe(0);
      // Widths: keys while freezeWs are dim wide; the store holds nEmbd-wide rows.
      t.freezeWs = true;
      expect(await codeOf(t.step(good))).toBe("INVALID_ARGUMENT");
      expect(await codeOf(() => t.addSkills(new Float32Array(dim), Int32Array.from([1])))).toBe("INVALID_ARGUMENT");
      t.freezeWs = false;
      // The store survived all of it; a step in flight locks it.
      expect(t.residentSkills).toBe(lib.length);
      const p = t.step(good);
      expect(await codeOf(() => t.addSkills(flat, rows))).toBe("INVALID_ARGUMENT");
      expect(await codeOf(() => t.clearSkills())).toBe("INVALID_ARGUMENT");
      await p;
      expect(t.steps).toBe(1);
      // Zero skills in a call is a no-op; zero-row skills are indices too.
      expect(t.addSkills(new Float32Array(0), new Int32Array(0))).toBe(lib.length);
      expect(t.addSkills(new Float32Array(0), Int32Array.from([0, 0]))).toBe(lib.length + 2);
    } finally {
      t.dispose();
    }
    // After dispose: the disposed trainer's own code.
    expect(await codeOf(() => t.addSkills(new Float32Array(nEmbd), Int32Array.from([1])))).toBe("DISPOSED");
    expect(await codeOf(() => t.clearSkills())).toBe("DISPOSED");
    expect(await codeOf(() => t.residentBytes)).toBe("DISPOSED");
  });
});

describe("runTraining with resident skills", () => {
  const nEmbd = 16, dim = 8;

  /** Skills = noisy copies of a centre; queries = noisy centre rows; masks on row 0; BM25-like hard lists. */
  function synthetic(seed: number, nSkills: number): TrainingSet {
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
        return { query: q, positives: [s], hard: [(s + 1) % nSkills, (s + 2) % nSkills], mask: { skill: s, ranges: [0, 1] } };
      });
    return { nEmbd, skills, train: examples(2 * nSkills), val: examples(nSkills) };
  }

  async function coverAll(skills: readonly Float32Array[], ws: Float32Array) {
    const keys: Float32Array[] = [];
    const keyRows: Int32Array[] = [];
    for (const s of skills) {
      const c = await coverKeys(s, nEmbd, { ws, dim, eps: 0.5 });
      keys.push(c.keys);
      keyRows.push(c.kept);
    }
    return { keys, keyRows };
  }

  const base: Omit<TrainLoopOptions, "steps"> = {
    dim, seed: 5, lr: 5e-3, batchTasks: 5, batchTokens: 400, negatives: 6, hardNegatives: 2, checkpointEvery: 3, inBatch: true, threads: 1,
  };

  it("equals a non-resident run fed f16-rounded states, bit for bit (main phase and fine-tune)", async () => {
    const seed = freshSeed() % 1000;
    const set = synthetic(seed, 12);
    const roundedSet = { ...set, skills: set.skills.map(f16) };
    const reports: (number | undefined)[] = [];
    const on = await runTraining(set, { ...base, steps: 7, resident: true, onProgress: (p) => reports.push(p.residentBytes) });
    const off = await runTraining(roundedSet, { ...base, steps: 7, resident: false });
    expect(on.losses, `seed ${seed}`).toEqual(off.losses);
    expect(on.wq).toEqual(off.wq);
    expect(on.ws).toEqual(off.ws);
    expect(on.residentBytes).toBeGreaterThan(0);
    expect(off.residentBytes).toBeUndefined();
    expect(reports).toHaveLength(7);
    expect(reports.every((b) => b === on.residentBytes)).toBe(true);
    // Not the unrounded run.
    const raw = await runTraining(set, { ...base, steps: 7 });
    expect(raw.ws).not.toEqual(on.ws);
    // The fine-tune: the keys held resident (dim wide) against the rounded keys given explicitly.
    const { keys, keyRows } = await coverAll(set.skills, on.ws);
    const ft = { ...base, steps: 5, phase: "finetune" as const, keyRows, init: { wq: on.wq, ws: on.ws } };
    const ftOn = await runTraining(set, { ...ft, keys, resident: true });
    const ftOff = await runTraining(roundedSet, { ...ft, keys: keys.map(f16) });
    expect(ftOn.losses, `seed ${seed}`).toEqual(ftOff.losses);
    expect(ftOn.wq).toEqual(ftOff.wq);
  });

  it("a resumed resident run (one step per call) ends bit for bit like an uninterrupted one", async () => {
    const seed = freshSeed() % 1000;
    const dir = mkdtempSync(join(tmpdir(), "gavel-resident-"));
    try {
      const o = { ...base, glanceNegatives: 2, refreshEvery: 3, glancePool: 4, resident: true, steps: 8 };
      const full = await runTraining(synthetic(seed, 12), { ...o, checkpoint: join(dir, "full.ckpt") });
      let pieces = 0;
      let cut: Awaited<ReturnType<typeof runTraining>>;
      do {
        cut = await runTraining(synthetic(seed, 12), { ...o, checkpoint: join(dir, "cut.ckpt"), resume: true, stopAfterSeconds: 0 });
        pieces++;
      } while (!cut.finished && pieces < 50);
      expect(pieces).toBe(8);
      expect(cut.wq, `seed ${seed}`).toEqual(full.wq);
      expect(cut.ws).toEqual(full.ws);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("uploadSkills fills the store in pieces and replaces what it held", () => {
    const r = rng(freshSeed());
    const lib = library(r, 30, nEmbd);
    const t = createTrainer({ nEmbd, dim, threads: 1 });
    try {
      t.addSkills(new Float32Array(nEmbd), Int32Array.from([1]));
      expect(uploadSkills(t, lib, nEmbd)).toBe(t.residentBytes);
      expect(t.residentSkills).toBe(lib.length);
      expect(() => uploadSkills(t, [new Float32Array(nEmbd + 1)], nEmbd)).toThrow(GavelError);
    } finally {
      t.dispose();
    }
  });
});
