// The native live accumulator (native/src/live, used by LiveContext) against the fold a live context
// did in TypeScript before it: per batch of ≤ 2,048 rows, one projectNormalize, one bank glance with
// the batch's decayWeights, then A ← A·2^(−b/64) + g·Σw and W ← W·2^(−b/64) + Σw (float64, common
// scale renormalised below 2^−400), columns remapped by handle. That reference is kept here, plain.
// Both read the same CPU kernels, so the scores agree to float64 rounding: |Δg| ≤ 1e-10.
import { describe, expect, it } from "vitest";
import { KeyBank } from "../../src/bank/key-bank.js";
import { decayWeights, projectNormalize, voteK } from "../../src/kernels/kernels.js";
import { loadBinding } from "../../src/native/binding.js";
import { LiveContext } from "../../src/route/live.js";
import type { RouterParts } from "../../src/route/parts.js";
import { freshSeed, randArray, rng, unitKeys } from "../helpers/random.js";
import { expectCode } from "../helpers/gavel-error.js";

/** The TypeScript fold of a live context, as src/route/live.ts computed it before the native one. */
class ReferenceFold {
  column = new Map<number, number>();
  handles = new Int32Array(0);
  acc = new Float64Array(0);
  wsum = 0;
  scale = 1;
  renorms = 0;

  constructor(
    readonly bank: KeyBank,
    readonly wq: Float32Array,
    readonly nEmbd: number,
    readonly dim: number,
  ) {}

  async append(states: Float32Array, routable: Int32Array): Promise<void> {
    const n = states.length / this.nEmbd;
    for (let start = 0; start < n; start += 2048) {
      const rows = states.subarray(start * this.nEmbd, Math.min(n, start + 2048) * this.nEmbd);
      const b = rows.length / this.nEmbd;
      const queries = await projectNormalize(rows, this.nEmbd, this.wq, this.dim);
      const weights = decayWeights(b);
      const all = routable.length === this.bank.size;
      const res = await this.bank.glance(queries, { weights, k: voteK(routable.length), handles: all ? undefined : routable, detail: 0 });
      let wb = 0;
      for (let i = 0; i < b; i++) wb += weights[i];
      this.remap(res.handles);
      this.scale *= 2 ** (-b / 64);
      if (this.scale < 2 ** -400) {
        for (let s = 0; s < this.acc.length; s++) this.acc[s] *= this.scale;
        this.wsum *= this.scale;
        this.scale = 1;
        this.renorms++;
      }
      const inv = 1 / this.scale;
      for (let s = 0; s < res.handles.length; s++) this.acc[s] += res.g[s] * wb * inv;
      this.wsum += wb * inv;
    }
  }

  remap(handles: Int32Array): void {
    const acc = new Float64Array(handles.length);
    const column = new Map<number, number>();
    handles.forEach((h, i) => {
      column.set(h, i);
      const old = this.column.get(h);
      if (old !== undefined) acc[i] = this.acc[old];
    });
    this.acc = acc;
    this.column = column;
    this.handles = handles.slice();
  }

  scores(): Float64Array {
    return this.acc.map((a) => (this.wsum > 0 ? a / this.wsum : 0));
  }
}

function fakeParts(nEmbd: number, wq: Float32Array, dim: number, bank: KeyBank, routable: () => Int32Array): RouterParts {
  return {
    model: { info: { nEmbd } },
    projections: { layer: 3, wq, dim },
    library: {
      routable,
      keys: bank,
      idOf: (h: number) => `s${h}`,
      entry: (id: string) => ({ name: id }),
      label: (h: number) => ({ id: `s${h}`, name: `s${h}` }),
    },
  } as unknown as RouterParts;
}

function expectClose(got: { handles: Int32Array; g: Float64Array }, ref: ReferenceFold, what: string): void {
  expect(Array.from(got.handles), what).toEqual(Array.from(ref.handles));
  const want = ref.scores();
  for (let s = 0; s < want.length; s++) expect(Math.abs(got.g[s] - want[s]), `${what}, column ${s}`).toBeLessThanOrEqual(1e-10);
}

describe("native live accumulator against the TypeScript fold", () => {
  it("many appends of varied sizes, past the renormalisation and across 2,048-row batches (|Δg| ≤ 1e-10)", async () => {
    const seed = freshSeed();
    const r = rng(seed);
    const nEmbd = 12, dim = 6, nSkills = 9;
    const wq = randArray(r, dim * nEmbd, 0.4);
    const bank = new KeyBank(dim);
    const handles = new Int32Array(nSkills);
    for (let s = 0; s < nSkills; s++) handles[s] = bank.add(unitKeys(r, 1 + Math.floor(r() * 4), dim));
    const live = new LiveContext(fakeParts(nEmbd, wq, dim, bank, () => handles.slice()));
    const ref = new ReferenceFold(bank, wq, nEmbd, dim);
    // single tokens, small blocks, prompts past one batch; 2^−400 is reached after 25,600 rows
    const sizes: number[] = [];
    let total = 0;
    while (total < 27_000) {
      const pick = r();
      const b = pick < 0.5 ? 1 : pick < 0.8 ? 2 + Math.floor(r() * 30) : pick < 0.95 ? 100 + Math.floor(r() * 900) : 2049 + Math.floor(r() * 2000);
      sizes.push(b);
      total += b;
    }
    let appended = 0;
    for (const [i, b] of sizes.entries()) {
      const states = randArray(r, b * nEmbd);
      await live.append(states);
      await ref.append(states, handles);
      appended += b;
      if (i % 25 === 0 || i === sizes.length - 1) expectClose(live.scores(), ref, `seed ${seed}, after ${appended} rows`);
    }
    expect(live.tokens).toBe(total);
    expect(ref.renorms, `seed ${seed}`).toBeGreaterThan(0);
    const { g } = live.scores();
    expect(g.some((x) => x !== 0)).toBe(true);
    bank.dispose();
  }, 60_000);

  it("skills added, removed and left out between appends: kept ones keep their sums, new ones start at 0 (|Δg| ≤ 1e-10)", async () => {
    const seed = freshSeed();
    const r = rng(seed);
    const nEmbd = 10, dim = 5;
    const wq = randArray(r, dim * nEmbd, 0.4);
    const bank = new KeyBank(dim);
    const add = () => bank.add(unitKeys(r, 1 + Math.floor(r() * 4), dim));
    let routable = Int32Array.from({ length: 15 }, add);
    const live = new LiveContext(fakeParts(nEmbd, wq, dim, bank, () => routable.slice()));
    const ref = new ReferenceFold(bank, wq, nEmbd, dim);
    const step = async (b: number, what: string) => {
      const states = randArray(r, b * nEmbd);
      await live.append(states);
      await ref.append(states, routable);
      expectClose(live.scores(), ref, `seed ${seed}: ${what}`);
    };
    await step(40, "prompt");
    await step(1, "token");
    routable = Int32Array.from([...routable, add(), add()]);
    await step(1, "after two adds");
    const gone = routable[3];
    bank.remove(gone);
    routable = routable.filter((h) => h !== gone);
    await step(2, "after a remove");
    routable = routable.filter((_, i) => i % 4 !== 1); // held by the bank, not routable: a subset
    await step(1, "subset");
    await step(3, "same subset");
    routable = Int32Array.from(bank.handles()); // every skill again
    await step(1, "whole bank again");
    live.reset();
    ref.acc.fill(0);
    ref.wsum = 0;
    ref.scale = 1;
    expect(live.tokens).toBe(0);
    await step(5, "after reset");
    bank.dispose();
  });
});

describe("NativeLive", () => {
  const setup = (nSkills = 6, nEmbd = 8, dim = 4) => {
    const r = rng(freshSeed());
    const bank = new KeyBank(dim);
    for (let s = 0; s < nSkills; s++) bank.add(unitKeys(r, 2, dim));
    const wq = randArray(r, dim * nEmbd, 0.5);
    const live = new (loadBinding().NativeLive)(bank._native, wq, nEmbd, dim, "cpu");
    return { r, bank, wq, live, nEmbd, dim };
  };

  it("refuses bad arguments with typed errors, changing nothing", () => {
    const { r, bank, wq, live, nEmbd, dim } = setup();
    const NativeLive = loadBinding().NativeLive;
    const bad = (f: () => unknown, code = "INVALID_ARGUMENT") => expect(f).toThrow(expect.objectContaining({ code }));
    bad(() => new NativeLive(bank._native, wq.subarray(1), nEmbd, dim));
    bad(() => new NativeLive(bank._native, wq, nEmbd, dim + 1));
    bad(() => new NativeLive({} as never, wq, nEmbd, dim));
    bad(() => new NativeLive(bank._native, wq, nEmbd, dim, "gpu" as never));
    bad(() => new NativeLive(bank._native, Float32Array.from(wq, (x, i) => (i === 3 ? Number.NaN : x)), nEmbd, dim));
    const row = randArray(r, nEmbd);
    bad(() => live.append(new Float32Array(nEmbd + 1), null, 3));
    bad(() => live.append(Float32Array.from(row, (x, i) => (i === 2 ? Number.POSITIVE_INFINITY : x)), null, 3));
    bad(() => live.append(row, null, 0));
    bad(() => live.append(row, new Int32Array(0), 3));
    bad(() => live.append(row, Int32Array.of(999), 3));
    const [h0] = bank.handles();
    bad(() => live.append(row, Int32Array.of(h0, h0), 3));
    expect(live.tokens).toBe(0);
    expect(live.scores().handles.length).toBe(0);
    expect(live.append(row, null, 3)).toBeUndefined(); // small: done at once
    expect(live.tokens).toBe(1);
    bank.dispose();
    bad(() => live.append(row, null, 3), "DISPOSED");
    live.dispose();
    bad(() => live.scores(), "DISPOSED");
    live.dispose(); // idempotent
  });

  it("runs a large append on a worker (a Promise), refuses another meanwhile, and aborts", async () => {
    const { r, bank, live, nEmbd } = setup(400, 64, 32);
    const states = randArray(r, 3000 * nEmbd);
    const pending = live.append(states, null, 5);
    expect(pending).toBeInstanceOf(Promise);
    expect(() => live.append(states.subarray(0, nEmbd), null, 5)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    await pending;
    expect(live.tokens).toBe(3000);
    const before = live.scores().g;
    // an append complete on the CPU: reading without waiting reads the same scores
    const noWait = live.scores(false);
    expect(noWait.tokens).toBe(3000);
    expect(Array.from(noWait.g)).toEqual(Array.from(before));
    expect(() => live.scores(1 as unknown as boolean)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    const big = randArray(r, 8 * 2048 * nEmbd);
    const aborted = live.append(big, null, 5)!;
    // while it runs on the worker, the scores (either way) are those of the 3,000 rows folded
    const during = live.scores(false);
    expect(during.tokens).toBe(3000);
    expect(Array.from(during.g)).toEqual(Array.from(before));
    expect(live.abort()).toBeGreaterThan(0);
    await expectCode(aborted, "ABORTED");
    // nothing of the aborted append was folded
    expect(live.tokens).toBe(3000);
    expect(Array.from(live.scores().g)).toEqual(Array.from(before));
    live.dispose();
    bank.dispose();
  }, 60_000);

  it("LiveContext: a reset applies after the appends called before it, one not yet started or one running on a worker", async () => {
    const seed = freshSeed();
    const r = rng(seed);
    // 400 skills of 2 keys, 3,000 rows: far above the native's synchronous limit, so the append runs on a worker
    const nEmbd = 64, dim = 32;
    const bank = new KeyBank(dim);
    for (let s = 0; s < 400; s++) bank.add(unitKeys(r, 2, dim));
    const handles = bank.handles();
    const wq = randArray(r, dim * nEmbd, 0.5);
    const live = new LiveContext(fakeParts(nEmbd, wq, dim, bank, () => handles));
    const big = randArray(r, 3000 * nEmbd);
    const small = randArray(r, 7 * nEmbd);
    // called, not yet started: it folds nothing
    const queued = live.append(big);
    live.reset();
    await queued;
    expect(live.tokens, `seed ${seed}`).toBe(0);
    // running on a worker when reset: its rows are cleared when it completes; an append called after
    // the reset starts from zero
    await live.append(small);
    const running = live.append(big);
    for (let i = 0; i < 3; i++) await Promise.resolve(); // the append is on the worker (no macrotask has run)
    live.reset();
    expect(live.tokens).toBe(0);
    const after = live.append(small);
    await running;
    expect(live.tokens, `seed ${seed}`).toBe(0);
    await after;
    expect(live.tokens).toBe(7);
    const fresh = new LiveContext(fakeParts(nEmbd, wq, dim, bank, () => handles));
    await fresh.append(small);
    const got = live.scores(), want = fresh.scores();
    expect(Array.from(got.handles)).toEqual(Array.from(want.handles));
    for (let c = 0; c < want.g.length; c++) expect(Math.abs(got.g[c] - want.g[c]), `seed ${seed}, column ${c}`).toBeLessThanOrEqual(1e-12);
    live.dispose();
    fresh.dispose();
    bank.dispose();
  }, 60_000);

  it("LiveContext: an aborted signal rejects with ABORTED, an empty library with EMPTY_LIBRARY, a disposed context with DISPOSED", async () => {
    const { r, bank, wq, nEmbd, dim } = setup();
    const handles = bank.handles();
    let routable = handles;
    const live = new LiveContext(fakeParts(nEmbd, wq, dim, bank, () => routable));
    const ac = new AbortController();
    ac.abort();
    await expectCode(live.append(randArray(r, nEmbd), { signal: ac.signal }), "ABORTED");
    routable = new Int32Array(0);
    await expectCode(live.append(randArray(r, nEmbd)), "EMPTY_LIBRARY");
    routable = handles;
    await live.append(randArray(r, 2 * nEmbd));
    expect(live.tokens).toBe(2);
    expect(live.device).toBe(loadBinding().glanceDevice().device);
    // read after waiting, then without: the same scores over the same 2 rows
    const waited = live.scores();
    expect(waited.tokens).toBe(2);
    const unwaited = live.scores({ wait: false });
    expect(unwaited.tokens).toBe(2);
    expect(Array.from(unwaited.g)).toEqual(Array.from(waited.g));
    expect(Array.from(unwaited.handles)).toEqual(Array.from(waited.handles));
    expect(() => live.scores({ wait: "no" as unknown as boolean })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    const [best] = live.top(1, { wait: false });
    expect(best.g).toBe(Math.max(...waited.g));
    expect(best.skill).toBe(`s${waited.handles[waited.g.indexOf(best.g)]}`);
    live.dispose();
    live.dispose();
    await expectCode(live.append(randArray(r, nEmbd)), "DISPOSED");
    expect(live.scores().g.length).toBe(0);
    expect(live.tokens).toBe(0);
    bank.dispose();
  });

  it("LiveContext: the rows are copied at the call (a buffer changed or detached after append() changes nothing); a detached one is INVALID_ARGUMENT", async () => {
    const seed = freshSeed();
    const r = rng(seed);
    const nEmbd = 8, dim = 4;
    const bank = new KeyBank(dim);
    for (let s = 0; s < 6; s++) bank.add(unitKeys(r, 2, dim));
    const handles = bank.handles();
    const wq = randArray(r, dim * nEmbd, 0.5);
    const parts = fakeParts(nEmbd, wq, dim, bank, () => handles);
    const rows = randArray(r, 3 * nEmbd);
    const want = new LiveContext(parts);
    await want.append(rows.slice());
    // changed right after the call
    const changed = new LiveContext(parts);
    const pending = changed.append(rows);
    rows.set(randArray(r, rows.length));
    await pending;
    expect(changed.tokens).toBe(3);
    expect(Array.from(changed.scores().g), `seed ${seed}`).toEqual(Array.from(want.scores().g));
    // detached right after the call
    const moved = randArray(r, 3 * nEmbd);
    const ref = new LiveContext(parts);
    await ref.append(moved.slice());
    const detached = new LiveContext(parts);
    const transferred = detached.append(moved);
    structuredClone(moved.buffer, { transfer: [moved.buffer as ArrayBuffer] });
    await transferred;
    expect(detached.tokens).toBe(3);
    expect(Array.from(detached.scores().g), `seed ${seed}`).toEqual(Array.from(ref.scores().g));
    // detached before the call: refused, not read as no rows
    await expect(detached.append(moved)).rejects.toMatchObject({ name: "GavelError", code: "INVALID_ARGUMENT", message: expect.stringContaining("detached") });
    expect(detached.tokens).toBe(3);
    for (const l of [want, changed, ref, detached]) l.dispose();
    bank.dispose();
  });

  // on the CPU only: on a CUDA device an append is queued there and resolves at once
  it.skipIf(loadBinding().glanceDevice().device === "cuda")("LiveContext: a dispose while an append runs on a worker rejects it with DISPOSED, in append's words (not the glance's ABORTED)", async () => {
    const r = rng(freshSeed());
    const nEmbd = 64, dim = 32;
    const bank = new KeyBank(dim);
    for (let s = 0; s < 400; s++) bank.add(unitKeys(r, 2, dim));
    const handles = bank.handles();
    const live = new LiveContext(fakeParts(nEmbd, randArray(r, dim * nEmbd, 0.5), dim, bank, () => handles));
    // 8 batches of 2,048 rows: far above the native's synchronous limit, so the append runs on a worker
    const running = live.append(randArray(r, 8 * 2048 * nEmbd));
    await Promise.resolve(); // the append has started (its native object is made), no macrotask has run
    expect(live.device).toBe("cpu");
    live.dispose();
    await expect(running).rejects.toMatchObject({ name: "GavelError", code: "DISPOSED", message: "live append: this live context was disposed" });
    expect(live.tokens).toBe(0);
    bank.dispose();
  }, 60_000);

  // The router's close is seen as the context's dispose: before, an append whose worker finished after
  // the router closed (nothing stopped it) resolved, since the check after it read the dispose alone.
  it.skipIf(loadBinding().glanceDevice().device === "cuda")("LiveContext: an append running on a worker when the router closes rejects with DISPOSED, though the worker finishes", async () => {
    const r = rng(freshSeed());
    const nEmbd = 64, dim = 32;
    const bank = new KeyBank(dim);
    for (let s = 0; s < 400; s++) bank.add(unitKeys(r, 2, dim));
    const handles = bank.handles();
    let routerClosed = false;
    const live = new LiveContext(fakeParts(nEmbd, randArray(r, dim * nEmbd, 0.5), dim, bank, () => handles), () => routerClosed);
    // 3,000 rows: far above the native's synchronous limit, so the append runs on a worker
    const running = live.append(randArray(r, 3000 * nEmbd));
    await Promise.resolve(); // the append has started (its native object is made), no macrotask has run
    expect(live.device).toBe("cpu");
    // closed while it runs; nothing aborts the worker, which finishes
    routerClosed = true;
    await expect(running).rejects.toMatchObject({ name: "GavelError", code: "DISPOSED", message: "live append: the router of this live context was closed" });
    expect(live.disposed).toBe(true);
    bank.dispose();
  }, 60_000);

  it("LiveContext: once its router closed, the scores read empty, as a disposed context's", async () => {
    const r = rng(freshSeed());
    const nEmbd = 64, dim = 32;
    const bank = new KeyBank(dim);
    for (let s = 0; s < 5; s++) bank.add(unitKeys(r, 2, dim));
    const handles = bank.handles();
    let routerClosed = false;
    const live = new LiveContext(fakeParts(nEmbd, randArray(r, dim * nEmbd, 0.5), dim, bank, () => handles), () => routerClosed);
    await live.append(randArray(r, 3 * nEmbd));
    expect(live.scores().g.length).toBe(handles.length);
    expect(live.top(2)).toHaveLength(2);
    routerClosed = true;
    expect(live.disposed).toBe(true);
    expect(live.scores()).toMatchObject({ handles: new Int32Array(0), g: new Float64Array(0), tokens: 0 });
    expect(live.scores({ wait: false }).g.length).toBe(0);
    expect(live.top(2)).toEqual([]);
    bank.dispose();
  }, 60_000);
});
