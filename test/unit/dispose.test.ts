/**
 * dispose() on the raw addon objects (NativeBank, NativeTrainer): frees their native memory, any
 * use afterwards throws (or, for async verbs, rejects) GavelError DISPOSED, a second dispose is a
 * no-op, and a dispose while a glance or a step is in flight settles that call cleanly (no crash,
 * no use-after-free: the call keeps what it reads alive until it ends).
 */
import { describe, expect, it } from "vitest";
import { GavelError } from "../../src/errors.js";
import { loadBinding, type NativeTrainBatch } from "../../src/native/binding.js";

const b = loadBinding();

function code(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    return e instanceof GavelError ? e.code : `untyped ${String(e)}`;
  }
  return "no-error";
}

async function asyncCode(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    return e instanceof GavelError ? e.code : `untyped ${String(e)}`;
  }
  return "resolved";
}

function unitRows(n: number, dim: number, seed: number): Float32Array {
  const out = new Float32Array(n * dim);
  let x = seed >>> 0;
  for (let i = 0; i < out.length; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    out[i] = x / 2 ** 32 - 0.5;
  }
  for (let r = 0; r < n; r++) {
    let ss = 0;
    for (let c = 0; c < dim; c++) ss += out[r * dim + c] ** 2;
    for (let c = 0; c < dim; c++) out[r * dim + c] /= Math.sqrt(ss);
  }
  return out;
}

describe("NativeBank.dispose", () => {
  it("frees the bank; every use afterwards throws DISPOSED; twice is fine", async () => {
    const bank = new b.NativeBank(8);
    const h = bank.add(unitRows(5, 8, 1));
    expect(bank.size).toBe(1);
    bank.dispose();
    bank.dispose();
    const q = unitRows(2, 8, 2);
    const w = new Float32Array([1, 1]);
    expect(code(() => bank.add(unitRows(1, 8, 3)))).toBe("DISPOSED");
    expect(code(() => bank.remove(h))).toBe("DISPOSED");
    expect(code(() => bank.clear())).toBe("DISPOSED");
    expect(code(() => bank.handles())).toBe("DISPOSED");
    expect(code(() => bank.abort())).toBe("DISPOSED");
    expect(code(() => bank.glance(q, w, 1))).toBe("DISPOSED");
    for (const key of ["dim", "size", "keys", "bytes"] as const) expect(code(() => bank[key])).toBe("DISPOSED");
  });

  it("settles a glance in flight cleanly (ABORTED or its result) and frees afterwards", async () => {
    const dim = 64;
    const bank = new b.NativeBank(dim);
    for (let s = 0; s < 400; s++) bank.add(unitRows(64, dim, s + 10));
    const q = unitRows(32, dim, 7);
    const w = new Float32Array(32).fill(1);
    const running = [bank.glance(q, w, 4), bank.glance(q, w, 4, null, 3), bank.glance(q, w, 4, bank.handles().subarray(0, 50))];
    bank.dispose();
    const outcomes = await Promise.all(running.map(asyncCode));
    for (const o of outcomes) expect(["ABORTED", "resolved"]).toContain(o);
    expect(code(() => bank.size)).toBe("DISPOSED");
    // the addon still works: a fresh bank glances normally
    const fresh = new b.NativeBank(dim);
    fresh.add(unitRows(3, dim, 99));
    const r = await fresh.glance(q, w, 1);
    expect(r.g.length).toBe(1);
    fresh.dispose();
  });
});

function batch(nEmbd: number): NativeTrainBatch {
  return {
    queryStates: unitRows(3, nEmbd, 21),
    queryOffsets: new Int32Array([0, 3]),
    skillStates: unitRows(4, nEmbd, 22),
    skillOffsets: new Int32Array([0, 2, 4]),
    candidateOffsets: new Int32Array([0, 2]),
    candidates: new Int32Array([0, 1]),
    positive: new Uint8Array([1, 0]),
  };
}

describe("NativeTrainer.dispose", () => {
  it("frees the trainer; every use afterwards throws or rejects DISPOSED; twice is fine", async () => {
    const t = new b.NativeTrainer({ nEmbd: 16, dim: 8, seed: 1, threads: 1 });
    await t.step(batch(16));
    t.dispose();
    t.dispose();
    expect(await asyncCode(t.step(batch(16)))).toBe("DISPOSED");
    expect(await asyncCode(t.lossAndGrad(batch(16)))).toBe("DISPOSED");
    expect(code(() => t.getWeights())).toBe("DISPOSED");
    expect(code(() => t.getState())).toBe("DISPOSED");
    expect(code(() => t.setWeights(new Float32Array(128), new Float32Array(128)))).toBe("DISPOSED");
    expect(code(() => t.lr)).toBe("DISPOSED");
    expect(code(() => { t.lr = 0.1; })).toBe("DISPOSED");
    expect(code(() => t.freezeWs)).toBe("DISPOSED");
    for (const key of ["steps", "nEmbd", "dim"] as const) expect(code(() => t[key])).toBe("DISPOSED");
  });

  it("lets a step in flight finish over its own copy", async () => {
    const nEmbd = 256;
    const t = new b.NativeTrainer({ nEmbd, dim: 64, seed: 2 });
    const running = t.step(batch(nEmbd));
    t.dispose();
    const r = await running;
    expect(Number.isFinite(r.loss)).toBe(true);
    expect(code(() => t.steps)).toBe("DISPOSED");
  });
});

describe("KeyBank.dispose (the TypeScript wrapper the Library closes)", () => {
  it("frees the native bank: later uses throw DISPOSED, a second dispose is a no-op", async () => {
    const { KeyBank } = await import("../../src/bank/key-bank.js");
    const bank = new KeyBank(16);
    const h = bank.add(unitRows(5, 16, 3));
    expect((await bank.glance(unitRows(2, 16, 4))).handles).toEqual(Int32Array.of(h));
    bank.dispose();
    bank.dispose();
    expect(code(() => bank.size)).toBe("DISPOSED");
    expect(code(() => bank.add(unitRows(1, 16, 5)))).toBe("DISPOSED");
    expect(await asyncCode(bank.glance(unitRows(2, 16, 6)))).toBe("DISPOSED");
  });
});
