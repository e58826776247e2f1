/**
 * The resident router's glance batches (src/route/glance-many.ts, src/serve/glance-scheduler.ts):
 * glanceMany over several tasks gives each task exactly the g of its own KeyBank.glance (bit for bit,
 * same handles, no m or argmax as `detail: 0`), over fresh random banks and tasks: f32 and f16 keys,
 * every instruction set the CPU has, restricted columns, tied scores (keys repeated across skills),
 * skills without keys, zero and decaying weights, any vote size. The scheduler merges the calls
 * that wait into one batch, each answered its own glance, and a call whose rows fail fails alone.
 *
 * Inputs are fresh random draws on every run; the seed is logged (replay with GAVEL_TEST_SEED=<seed>).
 */
import { describe, expect, it } from "vitest";
import { KeyBank, glanceDevice, type KeyBankGlanceResult } from "../../src/bank/key-bank.js";
import { decayWeights } from "../../src/kernels/kernels.js";
import { loadBinding } from "../../src/native/binding.js";
import { glanceMany, type GlanceTask } from "../../src/route/glance-many.js";
import { GlanceScheduler } from "../../src/serve/glance-scheduler.js";
import type { Router } from "../../src/route/index.js";
import { kernelIsas, restoreKernelIsaAfterEach, setKernelIsa } from "../helpers/isa.js";
import { freshSeed, rng, unitKeys } from "../helpers/random.js";
import { expectCode } from "../helpers/gavel-error.js";

const cpu = glanceDevice().device === "cpu";

/** A bank of `n` skills over `dim`: random unit keys, some skills empty, some keys repeated in another skill (tied m). */
function randomBank(r: () => number, n: number, dim: number, keyType: "f32" | "f16", blocks: Float32Array[] = []): KeyBank {
  const bank = new KeyBank(dim, { keyType });
  for (let s = 0; s < n; s++) {
    const rows = r() < 0.1 ? 0 : 1 + Math.floor(r() * 12);
    const keys = unitKeys(r, rows, dim);
    // a key copied from an earlier skill: the two skills tie on every query whose best key it is
    if (rows > 0 && blocks.length > 0 && r() < 0.4) {
      const from = blocks[Math.floor(r() * blocks.length)];
      if (from.length > 0) keys.set(from.subarray(0, dim), 0);
    }
    blocks.push(keys);
    bank.add(keys);
  }
  return bank;
}

function randomTask(r: () => number, dim: number, bankKeys: Float32Array[] | null): GlanceTask {
  const nq = 1 + Math.floor(r() * 40);
  const queries = unitKeys(r, nq, dim);
  // some queries equal to a key (an exact tie between skills holding it)
  if (bankKeys) for (let i = 0; i < nq; i++) if (r() < 0.2) { const b = bankKeys[Math.floor(r() * bankKeys.length)]; if (b.length > 0) queries.set(b.subarray(0, dim), i * dim); }
  const kind = r();
  const weights = kind < 0.4 ? new Float32Array(nq).fill(1) : kind < 0.7 ? decayWeights(nq) : Float32Array.from({ length: nq }, () => (r() < 0.2 ? 0 : r()));
  if (!weights.some((w) => w > 0)) weights[0] = 1;
  return { queries, weights };
}

const bits = (x: Float32Array) => Array.from(new Uint32Array(x.buffer, x.byteOffset, x.length));

function expectSame(got: KeyBankGlanceResult, want: KeyBankGlanceResult, what: string): void {
  expect(bits(got.g), `${what}: g`).toEqual(bits(want.g));
  expect(Array.from(got.handles), `${what}: handles`).toEqual(Array.from(want.handles));
  expect(got.m.length, `${what}: m`).toBe(want.m.length);
  expect(got.argmax.length, `${what}: argmax`).toBe(want.argmax.length);
}

describe.runIf(cpu)("glanceMany: each task's own glance, bit for bit", () => {
  restoreKernelIsaAfterEach();
  const isas = kernelIsas(loadBinding());

  for (const keyType of ["f32", "f16"] as const) {
    it(`${keyType} keys, every instruction set, whole bank and restricted columns`, async () => {
      const seed = freshSeed();
      const r = rng(seed);
      for (const isa of isas) {
        setKernelIsa(isa);
        for (let trial = 0; trial < 4; trial++) {
          const n = 1 + Math.floor(r() * 50);
          const dim = [7, 64, 96, 256][Math.floor(r() * 4)];
          const blocks: Float32Array[] = []; // the skills' keys, for queries equal to a key
          const bank = randomBank(r, n, dim, keyType, blocks);
          try {
            const all = bank.handles();
            const restricted = r() < 0.5 ? Int32Array.from([...all].filter(() => r() < 0.7).sort(() => r() - 0.5)) : undefined;
            const cols = restricted ? restricted.length : all.length;
            if (cols === 0) continue;
            const k = 1 + Math.floor(r() * Math.min(12, cols + 2));
            const tasks = Array.from({ length: 1 + Math.floor(r() * 12) }, () => randomTask(r, dim, blocks.length ? blocks : null));
            const got = await glanceMany(bank, tasks, { k, ...(restricted ? { handles: restricted } : {}) });
            expect(got).toHaveLength(tasks.length);
            for (let t = 0; t < tasks.length; t++) {
              const want = await bank.glance(tasks[t].queries, { weights: tasks[t].weights, k, handles: restricted, detail: 0 });
              expectSame(got[t], want, `seed ${seed}, ${isa}, trial ${trial}, task ${t} of ${tasks.length} (n ${n}, dim ${dim}, k ${k}${restricted ? `, ${cols} columns` : ""})`);
            }
          } finally {
            bank.dispose();
          }
        }
      }
    });
  }

  it("ties: queries equal to keys that several skills hold", async () => {
    const seed = freshSeed();
    const r = rng(seed);
    const dim = 32;
    const shared = unitKeys(r, 4, dim);
    const bank = new KeyBank(dim);
    try {
      // 12 skills, each the same 4 keys plus its own: every query equal to a shared key ties all 12
      for (let s = 0; s < 12; s++) {
        const own = unitKeys(r, 1 + Math.floor(r() * 3), dim);
        const keys = new Float32Array(shared.length + own.length);
        keys.set(shared);
        keys.set(own, shared.length);
        bank.add(keys);
      }
      const tasks: GlanceTask[] = Array.from({ length: 6 }, () => {
        const nq = 2 + Math.floor(r() * 10);
        const q = unitKeys(r, nq, dim);
        for (let i = 0; i < nq; i += 2) {
          const j = Math.floor(r() * 4);
          q.set(shared.subarray(j * dim, (j + 1) * dim), i * dim);
        }
        return { queries: q, weights: new Float32Array(nq).fill(1) };
      });
      for (const k of [1, 3, 5, 12, 20]) {
        const got = await glanceMany(bank, tasks, { k });
        for (let t = 0; t < tasks.length; t++) expectSame(got[t], await bank.glance(tasks[t].queries, { weights: tasks[t].weights, k, detail: 0 }), `seed ${seed}, k ${k}, task ${t}`);
      }
    } finally {
      bank.dispose();
    }
  });

  it("refuses a task whose queries and weights disagree", async () => {
    const bank = new KeyBank(8);
    try {
      bank.add(unitKeys(rng(1), 2, 8));
      await expectCode(glanceMany(bank, [{ queries: new Float32Array(16), weights: new Float32Array(3) }], { k: 1 }), "INVALID_ARGUMENT");
    } finally {
      bank.dispose();
    }
  });
});

describe.runIf(cpu)("GlanceScheduler", () => {
  /** The scheduler needs of its router only routeGlances and model.disposed. */
  const fakeRouter = () => ({ model: { disposed: false }, routeGlances: () => undefined }) as unknown as Router;

  it("merges the calls of one event-loop turn into one batch, each answered its own glance", async () => {
    const seed = freshSeed();
    const r = rng(seed);
    const dim = 64;
    const bank = randomBank(r, 30, dim, "f32");
    try {
      const s = new GlanceScheduler(fakeRouter(), { maxBatchCells: 1 << 18, maxBatchTasks: 64 });
      const tasks = Array.from({ length: 9 }, () => randomTask(r, dim, null));
      const got = await Promise.all(tasks.map((t) => s.glance(bank, t, { k: 3 })));
      expect(s.stats).toEqual({ passes: 1, tasks: 9, widest: 9 });
      for (let t = 0; t < tasks.length; t++) expectSame(got[t], await bank.glance(tasks[t].queries, { weights: tasks[t].weights, k: 3, detail: 0 }), `seed ${seed}, task ${t}`);
    } finally {
      bank.dispose();
    }
  });

  it("keeps a batch within its cell and task bounds, and calls of another vote size apart", async () => {
    const r = rng(freshSeed());
    const dim = 16;
    const bank = randomBank(r, 10, dim, "f32");
    try {
      const s = new GlanceScheduler(fakeRouter(), { maxBatchCells: 10 * 30, maxBatchTasks: 3 });
      const task = (nq: number): GlanceTask => ({ queries: unitKeys(r, nq, dim), weights: new Float32Array(nq).fill(1) });
      // cells: 10 columns × rows. [10, 10, 5] fit 300 cells and 3 tasks; then [10 (k 4)] apart; [40] over the bound, alone; [5]
      await Promise.all([s.glance(bank, task(10), { k: 3 }), s.glance(bank, task(10), { k: 3 }), s.glance(bank, task(10), { k: 4 }), s.glance(bank, task(40), { k: 3 }), s.glance(bank, task(5), { k: 3 }), s.glance(bank, task(5), { k: 3 })]);
      expect(s.stats).toEqual({ passes: 4, tasks: 6, widest: 3 });
    } finally {
      bank.dispose();
    }
  });

  it("fails only the call whose rows cannot be glanced", async () => {
    const r = rng(freshSeed());
    const dim = 16;
    const bank = randomBank(r, 8, dim, "f32");
    try {
      const s = new GlanceScheduler(fakeRouter(), { maxBatchCells: 1 << 18, maxBatchTasks: 64 });
      const good = [3, 7, 4].map((nq) => ({ queries: unitKeys(r, nq, dim), weights: new Float32Array(nq).fill(1) }));
      const bad = { queries: new Float32Array(5 * dim).fill(NaN), weights: new Float32Array(5).fill(1) };
      const out = await Promise.allSettled([s.glance(bank, good[0], { k: 3 }), s.glance(bank, bad, { k: 3 }), s.glance(bank, good[1], { k: 3 }), s.glance(bank, good[2], { k: 3 })]);
      expect(out[1]).toMatchObject({ status: "rejected", reason: { code: "INVALID_ARGUMENT" } });
      for (const [i, t] of [[0, 0], [2, 1], [3, 2]] as const) {
        expect(out[i].status).toBe("fulfilled");
        expectSame((out[i] as PromiseFulfilledResult<KeyBankGlanceResult>).value, await bank.glance(good[t].queries, { weights: good[t].weights, k: 3, detail: 0 }), `call ${i}`);
      }
    } finally {
      bank.dispose();
    }
  });
});
