/**
 * KeyBank (skills' keys held natively across glances), projectNormalize and
 * coverFarthestFirstAsync against their float64 references and the flat-bank kernels:
 * - KeyBank.glance = the flat glance (bit for bit: the same inner loops) = the float64 reference,
 *   after random sequences of add/remove, over every instruction set the CPU has;
 * - restricted handles; add/remove/clear while a glance runs (copy-on-write snapshots);
 * - abort: rejects ABORTED, leaves the bank usable, and touches only the aborted glance;
 * - projectNormalize = float64 normalize(W h) within 1e-5, odd and large shapes, zero rows;
 * - coverFarthestFirstAsync = coverFarthestFirst;
 * - bad inputs throw / reject GavelError INVALID_ARGUMENT and never crash.
 *
 * Inputs are fresh random draws on every run; the seed is logged so a failure can be replayed with
 * GAVEL_TEST_SEED=<seed>.
 */
import { describe, expect, it } from "vitest";
import { loadBinding } from "../../src/native/binding.js";
import { kernelIsas, restoreKernelIsaAfterEach, setKernelIsa } from "../helpers/isa.js";
import { runNode } from "../helpers/run.js";
import { KeyBank, glanceDevice } from "../../src/bank/key-bank.js";
import {
  coverFarthestFirst,
  coverFarthestFirstAsync,
  decayWeights,
  glance,
  projectNormalize,
  voteK,
} from "../../src/kernels/kernels.js";
import { referenceGlance, referenceProjectNormalize, referenceVote, row } from "../oracles/glance-reference.js";
import { expectMaxSimNearReference } from "../helpers/glance-check.js";
import { caught, expectCode, expectCodeSync, expectGavelError } from "../helpers/gavel-error.js";
import { freshSeed, gauss, rng } from "../helpers/random.js";

const SEED = freshSeed();
console.log(`bank-kernels.test.ts seed: ${SEED} (replay with GAVEL_TEST_SEED=${SEED})`);

const TOL = 1e-5;

/** n unit rows; with `centres`, drawn around a few directions (spread `spread`) like a skill's keys. */
function unitRows(r: () => number, n: number, dim: number, spread = 0): Float32Array {
  const centres = spread > 0 ? Array.from({ length: 1 + Math.floor(r() * 4) }, () => unitRows(r, 1, dim)) : [];
  const out = new Float32Array(n * dim);
  const v = new Float64Array(dim);
  for (let i = 0; i < n; i++) {
    const c = centres.length ? centres[Math.floor(r() * centres.length)] : null;
    let ss = 0;
    for (let d = 0; d < dim; d++) {
      v[d] = c ? c[d] + (spread * gauss(r)) / Math.sqrt(dim) : gauss(r);
      ss += v[d] * v[d];
    }
    const norm = Math.sqrt(ss);
    for (let d = 0; d < dim; d++) out[i * dim + d] = v[d] / norm;
  }
  return out;
}

/** Flat bank + offsets of these skills' keys, in this order. */
function flatten(banks: Float32Array[], dim: number) {
  const offsets = new Int32Array(banks.length + 1);
  banks.forEach((b, s) => (offsets[s + 1] = offsets[s] + b.length / dim));
  const bank = new Float32Array(offsets[banks.length] * dim);
  banks.forEach((b, s) => bank.set(b, offsets[s] * dim));
  return { bank, offsets };
}

/** A pool of unit rows and skills cut from it: cheap large banks whose values do not matter. */
function poolSkills(r: () => number, nSkills: number, keysPer: number, dim: number): Float32Array[] {
  const pool = unitRows(r, 512, dim);
  return Array.from({ length: nSkills }, () => {
    const keys = new Float32Array(keysPer * dim);
    for (let j = 0; j < keysPer; j++) keys.set(row(pool, Math.floor(r() * 512), dim), j * dim);
    return keys;
  });
}

function expectSameArray(got: ArrayLike<number>, want: ArrayLike<number>) {
  expect(got.length).toBe(want.length);
  for (let i = 0; i < want.length; i++) if (!Object.is(got[i], want[i])) expect([i, got[i]]).toEqual([i, want[i]]);
}

const binding = loadBinding();
const isas = kernelIsas(binding);
restoreKernelIsaAfterEach();

/**
 * The bank's glance against the flat native glance (exactly) and the float64 reference (as in
 * kernels.test.ts: scores within 1e-5, argmax and g differing only at near-ties).
 */
async function checkGlance(
  bank: KeyBank,
  skills: Map<number, Float32Array>,
  queries: Float32Array,
  weights: Float32Array,
  k: number,
  only?: Int32Array,
) {
  const dim = bank.dim;
  const got = await bank.glance(queries, { weights, k, handles: only });
  const handles = only ?? bank.handles();
  expectSameArray(got.handles, handles);
  const N = handles.length;
  const nq = queries.length / dim;
  const { bank: flat, offsets } = flatten(Array.from(handles, (h) => skills.get(h)!), dim);
  const viaFlat = await glance(queries, flat, offsets, dim, { weights, k });
  expectSameArray(got.g, viaFlat.g);
  expectSameArray(got.m, viaFlat.m);
  expectSameArray(got.argmax, viaFlat.argmax);
  const want = referenceGlance(queries, flat, offsets, dim, weights, k);
  expect(got.m.length).toBe(nq * N);
  expectMaxSimNearReference(got, want, queries, flat, offsets, dim, N, TOL);
  const voteOnNative = referenceVote(got.m, nq, N, weights, k);
  for (let s = 0; s < N; s++) expect(Math.abs(got.g[s] - voteOnNative[s])).toBeLessThanOrEqual(1e-6);
  let nearTie = false;
  if (k < N)
    for (let i = 0; i < nq && !nearTie; i++) {
      const sorted = Array.from(want.m.subarray(i * N, (i + 1) * N)).sort((a, b) => b - a);
      nearTie = sorted[k - 1] - sorted[k] <= 2 * TOL;
    }
  if (!nearTie) for (let s = 0; s < N; s++) expect(Math.abs(got.g[s] - want.g[s])).toBeLessThanOrEqual(TOL);
  return got;
}

// ---------------------------------------------------------------------------------------------
describe("KeyBank.glance = flat glance = float64 reference", () => {
  const r = rng(SEED);

  it.each(isas)("random add/remove sequences on %s", async (isa) => {
    setKernelIsa(isa);
    for (const dim of [5, 37, 64, 768]) {
      const bank = new KeyBank(dim);
      const skills = new Map<number, Float32Array>();
      const maxKeys = dim === 768 ? 14 : 9;
      for (let step = 0; step < 6; step++) {
        // A burst of adds (some empty skills), then removals of random held skills.
        const adds = 1 + Math.floor(r() * 25);
        for (let a = 0; a < adds; a++) {
          const n = r() < 0.1 ? 0 : 1 + Math.floor(r() * maxKeys);
          const keys = unitRows(r, n, dim, 0.3 + r());
          const h = bank.add(keys);
          expect(skills.has(h)).toBe(false);
          skills.set(h, keys);
        }
        const held = Array.from(skills.keys());
        for (const h of held) if (r() < 0.3) {
          bank.remove(h);
          skills.delete(h);
        }
        expect(bank.size).toBe(skills.size);
        expect(bank.keys).toBe(Array.from(skills.values()).reduce((a, b) => a + b.length / dim, 0));
        expectSameArray(bank.handles(), Array.from(skills.keys()).sort((a, b) => a - b));
        if (bank.size === 0) continue;
        const nq = 1 + Math.floor(r() * 40);
        const queries = unitRows(r, nq, dim);
        const weights = r() < 0.5 ? decayWeights(nq, nq - 1 + Math.floor(r() * 200)) : new Float32Array(nq).fill(1);
        for (const k of [voteK(bank.size), 1, bank.size + 2]) await checkGlance(bank, skills, queries, weights, k);
        // the default k is voteK(size)
        const dflt = await bank.glance(queries, { weights });
        const explicit = await bank.glance(queries, { weights, k: voteK(bank.size) });
        expectSameArray(dflt.g, explicit.g);
      }
    }
  });

  it("restricted handles: any subset, in the order given", async () => {
    for (const dim of [16, 100]) {
      const bank = new KeyBank(dim);
      const skills = new Map<number, Float32Array>();
      for (let s = 0; s < 60; s++) {
        const keys = unitRows(r, r() < 0.1 ? 0 : 1 + Math.floor(r() * 8), dim, 0.5 + r());
        skills.set(bank.add(keys), keys);
      }
      const held = Array.from(skills.keys());
      for (let trial = 0; trial < 6; trial++) {
        // a random subset in random order (Fisher–Yates)
        const pick = held.filter(() => r() < 0.4);
        for (let i = pick.length - 1; i > 0; i--) {
          const j = Math.floor(r() * (i + 1));
          [pick[i], pick[j]] = [pick[j], pick[i]];
        }
        if (pick.length === 0) pick.push(held[0]);
        const only = Int32Array.from(pick);
        const nq = 1 + Math.floor(r() * 20);
        const queries = unitRows(r, nq, dim);
        const weights = decayWeights(nq);
        await checkGlance(bank, skills, queries, weights, voteK(only.length), only);
        // the default k follows the restricted set's size
        const a = await bank.glance(queries, { weights, handles: only });
        const b = await bank.glance(queries, { weights, handles: only, k: voteK(only.length) });
        expectSameArray(a.g, b.g);
      }
      const none = await bank.glance(unitRows(r, 3, dim), { handles: new Int32Array(0) });
      expect(none.g.length).toBe(0);
      expect(none.m.length).toBe(0);
      expect(none.handles.length).toBe(0);
    }
  });

  it("empty banks and empty skills follow the flat glance's conventions", async () => {
    const dim = 8;
    const bank = new KeyBank(dim);
    const q = unitRows(r, 2, dim);
    const empty = await bank.glance(q);
    expect([empty.g.length, empty.m.length, empty.argmax.length, empty.handles.length]).toEqual([0, 0, 0, 0]);
    const h0 = bank.add(new Float32Array(0));
    const h1 = bank.add(unitRows(r, 3, dim));
    const h2 = bank.add(new Float32Array(0));
    const got = await bank.glance(q, { k: 3 });
    expectSameArray(got.handles, [h0, h1, h2]);
    for (const c of [0, 2, 3, 5]) {
      expect(got.m[c]).toBe(-1);
      expect(got.argmax[c]).toBe(-1);
    }
    expect(got.g[0]).toBeCloseTo(-1, 6);
    expect(bank.keys).toBe(3);
  });

  it("size, keys and bytes track adds, removes and clear", () => {
    const dim = 64;
    const bank = new KeyBank(dim);
    expect([bank.size, bank.keys]).toEqual([0, 0]);
    const base = bank.bytes;
    const h = [bank.add(unitRows(r, 30, dim)), bank.add(unitRows(r, 10, dim)), bank.add(new Float32Array(0))];
    expect(h[0]).toBeGreaterThanOrEqual(1);
    expect(h[1]).toBeGreaterThan(h[0]);
    expect([bank.size, bank.keys]).toEqual([3, 40]);
    expect(bank.bytes).toBeGreaterThanOrEqual(base + 40 * dim * 4);
    expect(bank.bytes).toBeLessThan(base + 40 * dim * 4 + 4096);
    bank.remove(h[0]);
    expect([bank.size, bank.keys]).toEqual([2, 10]);
    expect(bank.bytes).toBeLessThan(base + 10 * dim * 4 + 4096);
    bank.clear();
    expect([bank.size, bank.keys, bank.handles().length]).toEqual([0, 0, 0]);
    // handles are never reused
    expect(bank.add(unitRows(r, 1, dim))).toBeGreaterThan(h[2]);
  });
});

// ---------------------------------------------------------------------------------------------
describe("KeyBank concurrency: copy-on-write snapshots and abort", () => {
  const r = rng(SEED + 1);
  const dim = 256;
  // Large enough that a glance takes a while (≈ 2 × 200 × 60K × 256 = 6 GFLOP).
  const banks = poolSkills(r, 2000, 30, dim);
  const queries = unitRows(r, 200, dim);

  function fill(): { bank: KeyBank; skills: Map<number, Float32Array> } {
    const bank = new KeyBank(dim);
    const skills = new Map<number, Float32Array>();
    for (const keys of banks) skills.set(bank.add(keys), keys);
    return { bank, skills };
  }

  it("add/remove/clear during a glance: it sees the bank as it was called", async () => {
    const { bank, skills } = fill();
    const before = bank.handles();
    const { bank: flat, offsets } = flatten(Array.from(before, (h) => skills.get(h)!), dim);
    const pending = bank.glance(queries, { k: 10 });
    // mutate while it runs: drop every third skill, add some, then clear and refill a few
    for (let i = 0; i < before.length; i += 3) bank.remove(before[i]);
    const added = [bank.add(unitRows(r, 5, dim)), bank.add(unitRows(r, 7, dim))];
    const second = bank.glance(queries.subarray(0, 10 * dim), { k: 10 });
    bank.clear();
    const h = bank.add(unitRows(r, 2, dim));
    const got = await pending;
    const want = await glance(queries, flat, offsets, dim, { k: 10 });
    expectSameArray(got.handles, before);
    expectSameArray(got.g, want.g);
    expectSameArray(got.m, want.m);
    expectSameArray(got.argmax, want.argmax);
    const mid = await second;
    expect(mid.handles.length).toBe(before.length - Math.ceil(before.length / 3) + 2);
    expectSameArray(mid.handles.subarray(mid.handles.length - 2), added);
    expectSameArray(bank.handles(), [h]);
    expect(bank.keys).toBe(2);
  });

  it("an aborted glance rejects with ABORTED; the bank works afterwards", async () => {
    const { bank, skills } = fill();
    // aborted right after the call: the flag is registered before glance() returns
    const ac = new AbortController();
    const p = bank.glance(queries, { signal: ac.signal });
    ac.abort();
    await expectCode(p, "ABORTED");
    // already aborted
    await expectCode(bank.glance(queries, { signal: ac.signal }), "ABORTED");

    // aborted with the native glance under way: rejected at once, never waiting for the native work.
    // No clock: it is rejected before the event loop turns again (microtasks only), and the native
    // glance's end can only come back through the event loop.
    const ac2 = new AbortController();
    const p2 = bank.glance(queries, { signal: ac2.signal });
    let settled = "pending";
    p2.then(
      () => (settled = "resolved"),
      () => (settled = "rejected"),
    );
    ac2.abort();
    for (let i = 0; i < 20; i++) await Promise.resolve(); // microtasks only
    expect(settled).toBe("rejected");
    await expectCode(p2, "ABORTED");

    // a signal aborts its own glance only (each call has its own ticket)
    const p3 = bank.glance(queries);
    const p4 = bank.glance(queries);
    const ac3 = new AbortController();
    const p5 = bank.glance(queries, { signal: ac3.signal });
    ac3.abort();
    await expectCode(p5, "ABORTED");
    const [g3, g4] = await Promise.all([p3, p4]);
    expectSameArray(g3.g, g4.g);

    // still usable, and right
    const small = unitRows(r, 7, dim);
    await checkGlance(bank, skills, small, decayWeights(7), 10);
  });

  it("NativeBank.abort() with no ticket stops every running glance, and only those", async () => {
    const nb = new binding.NativeBank(dim);
    for (const keys of banks.slice(0, 1500)) nb.add(keys);
    const w = new Float32Array(200).fill(1);
    // handlers attached at once: whichever settles first must not be an unhandled rejection
    const a = caught(nb.glance(queries, w, 10, null, 7));
    const b = caught(nb.glance(queries, w, 10));
    expect(nb.abort()).toBe(2);
    expectGavelError(await a, "ABORTED");
    expectGavelError(await b, "ABORTED");
    expect(nb.abort()).toBe(0); // nothing running: a later glance is unaffected
    const c = await nb.glance(queries.subarray(0, 3 * dim), w.subarray(0, 3), 10, null, 7);
    expect(c.g.length).toBe(1500);
    // a ticket picks its own glances
    const d = caught(nb.glance(queries, w, 10, null, 8));
    const e = nb.glance(queries.subarray(0, 3 * dim), w.subarray(0, 3), 10, null, 9);
    expect(nb.abort(8)).toBe(1);
    expectGavelError(await d, "ABORTED");
    expect((await e).g.length).toBe(1500);
  });
});

// ---------------------------------------------------------------------------------------------
describe("projectNormalize = float64 normalize(W h)", () => {
  const r = rng(SEED + 2);

  /** Hidden-state-like rows: gaussian with per-row scale and a few large outlier features. */
  function states(n: number, inDim: number): Float32Array {
    const out = new Float32Array(n * inDim);
    for (let i = 0; i < n; i++) {
      const scale = 0.1 + 20 * r();
      for (let d = 0; d < inDim; d++) out[i * inDim + d] = scale * gauss(r) * (r() < 0.01 ? 30 : 1);
    }
    return out;
  }
  function matrix(outDim: number, inDim: number): Float32Array {
    const W = new Float32Array(outDim * inDim);
    for (let i = 0; i < W.length; i++) W[i] = gauss(r) / Math.sqrt(inDim);
    return W;
  }

  // [n, inDim, outDim]: tiny, odd, k-blocked (inDim > 512), both thread splits, the paper's shapes.
  const shapes: Array<[number, number, number]> = [
    [1, 1, 1], [3, 1, 5], [2, 7, 3], [13, 33, 7], [100, 129, 17], [130, 600, 31], [67, 64, 768], [1, 64, 768],
    [300, 1024, 96], [5, 1024, 768], [3, 5120, 768], [2, 5120, 13], [41, 513, 45],
  ];
  const cases: Array<[number, number, number, string]> = [];
  for (const s of shapes) for (const isa of isas) cases.push([...s, isa]);

  it.each(cases)("n %i, inDim %i → outDim %i on %s", async (n, inDim, outDim, isa) => {
    setKernelIsa(isa);
    const H = states(n, inDim);
    if (n > 2) H.fill(0, inDim, 2 * inDim); // row 1 zero
    const W = matrix(outDim, inDim);
    const got = await projectNormalize(H, inDim, W, outDim);
    expect(got).toBeInstanceOf(Float32Array);
    expect(got.length).toBe(n * outDim);
    const want = referenceProjectNormalize(H, inDim, W, outDim);
    let worst = 0;
    for (let c = 0; c < want.length; c++) worst = Math.max(worst, Math.abs(got[c] - want[c]));
    expect(worst).toBeLessThanOrEqual(1e-5);
    if (n > 2) for (let o = 0; o < outDim; o++) expect(Object.is(got[outDim + o], 0)).toBe(true);
  });

  it("no rows gives an empty result; a zero W gives zero rows", async () => {
    expect((await projectNormalize(new Float32Array(0), 8, matrix(4, 8), 4)).length).toBe(0);
    const y = await projectNormalize(states(3, 8), 8, new Float32Array(32), 4);
    expect(Array.from(y)).toEqual(new Array(12).fill(0));
  });
});

// ---------------------------------------------------------------------------------------------
describe("coverFarthestFirstAsync = coverFarthestFirst", () => {
  const r = rng(SEED + 3);
  it.each([
    [3, 50, 0.3],
    [33, 300, 0.6],
    [64, 500, 0.83],
    [768, 400, 0.83],
    [768, 200, 0],
    [8, 0, 0.5],
  ])("dim %i, n %i, eps %f", async (dim, n, eps) => {
    for (let trial = 0; trial < 3; trial++) {
      const keys = unitRows(r, n, dim, 0.2 + 2 * r());
      const want = coverFarthestFirst(keys, dim, eps);
      const pending = coverFarthestFirstAsync(keys, dim, eps);
      keys.fill(0); // the call copied them
      expectSameArray(await pending, want);
    }
  });
});

// ---------------------------------------------------------------------------------------------
describe("bad inputs throw or reject INVALID_ARGUMENT and never crash", () => {
  const dim = 4;
  const q = new Float32Array([1, 0, 0, 0]);
  const k1 = new Float32Array([1, 0, 0, 0, 0, 1, 0, 0]);
  const w = new Float32Array([1]);

  const expectInvalidSync = (fn: () => unknown) => expectCodeSync(fn, "INVALID_ARGUMENT");
  const expectInvalid = async (fn: () => unknown) => expectGavelError(await caught(fn), "INVALID_ARGUMENT");

  it.each([[0], [-1], [1.5], [NaN], ["4"], [2 ** 40], [undefined]])("KeyBank / NativeBank dim %s", (d) => {
    expectInvalidSync(() => new KeyBank(d as number));
    expectInvalidSync(() => new (binding.NativeBank as unknown as new (...a: unknown[]) => unknown)(d));
  });

  const badAdd: Array<[string, unknown]> = [
    ["number[]", [1, 0, 0, 0]],
    ["Float64Array", new Float64Array(4)],
    ["undefined", undefined],
    ["length not a multiple of dim", new Float32Array(5)],
    ["NaN", new Float32Array([1, NaN, 0, 0])],
    ["Infinity", new Float32Array([1, 0, 0, -Infinity])],
  ];
  it.each(badAdd)("add: %s", (_name, keys) => {
    const bank = new KeyBank(dim);
    expectInvalidSync(() => bank.add(keys as Float32Array));
    const nb = new binding.NativeBank(dim);
    expectInvalidSync(() => (nb.add as (...a: unknown[]) => unknown)(keys));
    expect(bank.size).toBe(0);
    expect(nb.size).toBe(0);
  });

  it("remove: unknown, removed, or malformed handles", () => {
    const bank = new KeyBank(dim);
    const h = bank.add(k1);
    const nb = new binding.NativeBank(dim);
    nb.add(k1);
    for (const bad of [h + 1, 0, -1, 1.5, NaN, "1", undefined]) {
      expectInvalidSync(() => bank.remove(bad as number));
      expectInvalidSync(() => nb.remove(bad as number));
    }
    bank.remove(h);
    expectInvalidSync(() => bank.remove(h));
    expect(bank.size).toBe(0);
  });

  const badGlance: Array<[string, unknown, Record<string, unknown>]> = [
    ["queries as number[]", [1, 0, 0, 0], {}],
    ["queries as Float64Array", new Float64Array(4), {}],
    ["queries not a multiple of dim", new Float32Array(5), {}],
    ["no query tokens", new Float32Array(0), {}],
    ["NaN query", new Float32Array([NaN, 0, 0, 0]), {}],
    ["weights null", q, { weights: null }],
    ["weights too long", q, { weights: new Float32Array(2).fill(1) }],
    ["negative weight", q, { weights: new Float32Array([-1]) }],
    ["zero weights", q, { weights: new Float32Array([0]) }],
    ["NaN weight", q, { weights: new Float32Array([NaN]) }],
    ["k = 0", q, { k: 0 }],
    ["k fractional", q, { k: 1.5 }],
    ["k Infinity", q, { k: Infinity }],
    ["handles as number[]", q, { handles: [1] }],
    ["handles as Uint32Array", q, { handles: new Uint32Array([1]) }],
    ["unknown handle", q, { handles: new Int32Array([1, 99]) }],
    ["repeated handle", q, { handles: new Int32Array([1, 2, 1]) }],
    ["negative handle", q, { handles: new Int32Array([-3]) }],
    ["signal not an AbortSignal", q, { signal: {} }],
  ];
  it.each(badGlance)("KeyBank.glance: %s", async (_name, queries, options) => {
    const bank = new KeyBank(dim);
    bank.add(k1);
    bank.add(k1);
    await expectInvalid(() => bank.glance(queries as Float32Array, options as never));
  });

  it.each(badGlance.filter(([name]) => !name.startsWith("signal")))("NativeBank.glance: %s", async (_name, queries, o) => {
    const nb = new binding.NativeBank(dim);
    nb.add(k1);
    nb.add(k1);
    const weights = "weights" in o ? o.weights : new Float32Array(Math.max(1, Math.floor((queries as Float32Array).length / dim))).fill(1);
    const k = "k" in o ? o.k : 1;
    await expectInvalid(() => (nb.glance as (...a: unknown[]) => unknown)(queries, weights, k, o.handles));
  });

  it("NativeBank.glance / abort: missing or malformed arguments", async () => {
    const nb = new binding.NativeBank(dim);
    nb.add(k1);
    const g = (nb.glance as (...a: unknown[]) => unknown).bind(nb);
    await expectInvalid(() => g());
    await expectInvalid(() => g(q, w));
    await expectInvalid(() => g(q, w, 1, null, -1));
    await expectInvalid(() => g(q, w, 1, null, "7"));
    await expectInvalid(() => g(q, w, 1, "all"));
    expectInvalidSync(() => (nb.abort as (...a: unknown[]) => unknown).call(nb, -2));
    expectInvalidSync(() => (nb.abort as (...a: unknown[]) => unknown).call(nb, NaN));
    // methods on a foreign receiver throw (V8's "Illegal invocation"), never crash
    const model = new binding.NativeModel();
    for (const self of [{}, undefined, model]) {
      expect(() => (nb.add as (...a: unknown[]) => unknown).call(self, k1)).toThrow();
      expect(() => Object.getOwnPropertyDescriptor(Object.getPrototypeOf(nb), "size")!.get!.call(self)).toThrow();
    }
    model.dispose();
    expect(() => (binding.NativeBank as unknown as (d: number) => unknown)(4)).toThrow();
  });

  const W = new Float32Array(8).fill(0.5);
  const badProject: Array<[string, unknown[]]> = [
    ["states as number[]", [[1, 2, 3, 4], 4, W, 2]],
    ["states as Float64Array", [new Float64Array(4), 4, W, 2]],
    ["W as Int32Array", [q, 4, new Int32Array(8), 2]],
    ["W undefined", [q, 4, undefined, 2]],
    ["inDim 0", [q, 0, W, 2]],
    ["inDim NaN", [q, NaN, W, 2]],
    ["inDim fractional", [q, 2.5, W, 2]],
    ["outDim 0", [q, 4, W, 0]],
    ["outDim string", [q, 4, W, "2"]],
    ["outDim huge", [q, 4, W, 2 ** 40]],
    ["states not a multiple of inDim", [new Float32Array(5), 4, W, 2]],
    ["W too short", [q, 4, new Float32Array(7), 2]],
    ["W too long", [q, 4, new Float32Array(12), 2]],
    ["NaN state", [new Float32Array([0, NaN, 0, 0]), 4, W, 2]],
    ["Infinity in W", [q, 4, new Float32Array([0, 0, 0, 0, 0, 0, Infinity, 0]), 2]],
    ["overflowing product", [new Float32Array([3e38, 3e38, 3e38, 3e38]), 4, new Float32Array(8).fill(3e38), 2]],
  ];
  it.each(badProject)("projectNormalize: %s", async (_name, args) => {
    await expectInvalid(() => (binding.projectNormalize as (...a: unknown[]) => unknown)(...args));
    await expectInvalid(() => (projectNormalize as (...a: unknown[]) => unknown)(...args));
  });
  it("projectNormalize with too few arguments", async () => {
    await expectInvalid(() => (binding.projectNormalize as (...a: unknown[]) => unknown)(q, 4, W));
  });

  const badCover: Array<[string, unknown[]]> = [
    ["keys as number[]", [[1, 0, 0, 0], dim, 0.5]],
    ["keys undefined", [undefined, dim, 0.5]],
    ["NaN dim", [k1, NaN, 0.5]],
    ["negative dim", [k1, -4, 0.5]],
    ["length not a multiple of dim", [k1, 3, 0.5]],
    ["NaN eps", [k1, dim, NaN]],
    ["negative eps", [k1, dim, -0.1]],
    ["eps as string", [k1, dim, "0.5"]],
    ["NaN key", [new Float32Array([1, 0, NaN, 0]), dim, 0.5]],
    ["too few arguments", [k1, dim]],
  ];
  it.each(badCover)("coverFarthestFirstAsync: %s", async (_name, args) => {
    await expectInvalid(() => (binding.coverFarthestFirstAsync as (...a: unknown[]) => unknown)(...args));
    await expectInvalid(() => (coverFarthestFirstAsync as (...a: unknown[]) => unknown)(...args));
  });

  it("the process is still fine afterwards", async () => {
    const bank = new KeyBank(dim);
    const h = bank.add(k1);
    const res = await bank.glance(q, { k: 1 });
    expectSameArray(res.handles, [h]);
    expect(Array.from(res.g)).toEqual([1]);
    expect(Array.from(await projectNormalize(q, 4, W, 2))).toEqual([Math.SQRT1_2, Math.SQRT1_2].map(Math.fround));
  });
});

describe("the glance's device", () => {
  it("this CPU build glances on the CPU and says why not CUDA", () => {
    const d = glanceDevice();
    expect(loadBinding().buildInfo().cuda).toBe(false);
    expect(d).toMatchObject({ device: "cpu", cudaAvailable: false });
    expect(d.reason).toMatch(/without CUDA/);
  });

  it("GAVEL_GLANCE_DEVICE=cuda without CUDA: a typed CUDA_UNAVAILABLE rejection, and the process lives on", async () => {
    const script = [
      `import { KeyBank, GavelError } from ${JSON.stringify(new URL("../../dist/index.js", import.meta.url).href)};`,
      "const bank = new KeyBank(4); bank.add(new Float32Array([1, 0, 0, 0]));",
      "const q = new Float32Array([1, 0, 0, 0]);",
      "try { await bank.glance(q, { k: 1 }); console.log('no error'); } catch (e) { console.log(e instanceof GavelError, e.code); }",
      // a glance over a handle subset goes to the device too (its own columns' rows there) …
      "try { await bank.glance(q, { k: 1, handles: bank.handles() }); console.log('no error'); } catch (e) { console.log('subset', e.code); }",
      // … but one over no skill at all has nothing to compute and stays on the CPU
      "const r = await bank.glance(q, { k: 1, handles: new Int32Array(0) }); console.log('empty', r.g.length);",
    ].join("\n");
    const { code, out, err } = await runNode(["--input-type=module", "-e", script], { env: { ...process.env, GAVEL_GLANCE_DEVICE: "cuda" } });
    expect(err).toBe("");
    expect(code).toBe(0);
    expect(out.trim().split("\n")).toEqual(["true CUDA_UNAVAILABLE", "subset CUDA_UNAVAILABLE", "empty 0"]);
  });
});
