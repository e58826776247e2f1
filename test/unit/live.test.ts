// The live context's incremental glance against a plain float64 reference: after N appended rows
// (in several uneven batches) its scores equal a from-scratch live glance over the same N rows,
// g(s) = Σ_i w_i v_i(s) / Σ_i w_i with w_i = 2^(−(N−1−i)/64), computed here from the definitions
// (projection, normalisation, max-sim, top-k vote) in float64 on fresh random inputs.
import { describe, expect, it } from "vitest";
import { KeyBank } from "../../src/bank/key-bank.js";
import { voteK } from "../../src/kernels/kernels.js";
import { liveVerdictText } from "../../src/route/firing.js";
import { LiveContext } from "../../src/route/live.js";
import type { RouterParts } from "../../src/route/parts.js";
import { freshSeed, randArray, rng, unitKeys } from "../helpers/random.js";
import { expectCode } from "../helpers/gavel-error.js";

function unit(v: Float64Array): Float64Array {
  let n = 0;
  for (const x of v) n += x * x;
  n = Math.sqrt(n);
  return v.map((x) => x / n);
}

/** The float64 reference: project, normalise, max-sim, top-k vote, decayed weights. */
function reference(states: Float32Array, nEmbd: number, wq: Float32Array, dim: number, skills: Float32Array[], k: number): Float64Array {
  const n = states.length / nEmbd;
  const S = skills.length;
  const acc = new Float64Array(S);
  let W = 0;
  for (let i = 0; i < n; i++) {
    const q = new Float64Array(dim);
    for (let r = 0; r < dim; r++) {
      let s = 0;
      for (let c = 0; c < nEmbd; c++) s += wq[r * nEmbd + c] * states[i * nEmbd + c];
      q[r] = s;
    }
    const qu = unit(q);
    const m = skills.map((keys) => {
      let best = -Infinity;
      for (let j = 0; j < keys.length / dim; j++) {
        let s = 0;
        for (let r = 0; r < dim; r++) s += qu[r] * keys[j * dim + r];
        best = Math.max(best, s);
      }
      return best;
    });
    const order = m.map((_, s) => s).sort((a, b) => m[b] - m[a] || a - b).slice(0, Math.min(k, S));
    const w = 2 ** (-(n - 1 - i) / 64);
    W += w;
    for (const s of order) acc[s] += w * m[s];
  }
  return acc.map((a) => a / W);
}

/** The parts a LiveContext reads: a model's width, W_q at ℓ 3, and a library over `bank`. */
function fakeParts(nEmbd: number, wq: Float32Array, dim: number, bank: KeyBank, routable: () => number[]): RouterParts {
  return {
    model: { info: { nEmbd } },
    projections: { layer: 3, wq, dim },
    library: {
      routable: () => Int32Array.from(routable()),
      keys: bank,
      idOf: (h: number) => `s${h}`,
      entry: (id: string) => ({ name: id }),
      // as the bank's: a handle no skill holds any more has no label
      label: (h: number) => {
        if (!routable().includes(h)) throw new Error(`no skill holds handle ${h}`);
        return { id: `s${h}`, name: `s${h}` };
      },
    },
  } as unknown as RouterParts;
}

describe("LiveContext (incremental glance)", () => {
  it.each([
    [12, 40],
    [40, 300],
  ])("after N appended rows equals a from-scratch float64 live glance (%i skills, N=%i; |Δ| ≤ 2e-6)", async (nSkills, N) => {
    const seed = freshSeed();
    const r = rng(seed);
    const nEmbd = 24, dim = 8;
    const wq = randArray(r, dim * nEmbd, 0.3);
    const bank = new KeyBank(dim);
    const skills: Float32Array[] = [];
    const handles: number[] = [];
    for (let s = 0; s < nSkills; s++) {
      const keys = unitKeys(r, 1 + Math.floor(r() * 6), dim);
      skills.push(keys);
      handles.push(bank.add(keys));
    }
    const parts = fakeParts(nEmbd, wq, dim, bank, () => handles);
    const live = new LiveContext(parts);
    const states = randArray(r, N * nEmbd);
    // Uneven batches: one prompt-like block, then single tokens, then a block.
    const cuts = [0, Math.floor(N / 3), Math.floor(N / 3) + 1, Math.floor(N / 3) + 2, Math.floor(N / 2), N];
    for (let c = 0; c + 1 < cuts.length; c++) {
      await live.append(states.subarray(cuts[c] * nEmbd, cuts[c + 1] * nEmbd));
      const n = cuts[c + 1];
      if (n === 0) continue;
      const ref = reference(states.subarray(0, n * nEmbd), nEmbd, wq, dim, skills, voteK(nSkills));
      const { g } = live.scores();
      for (let s = 0; s < nSkills; s++) expect(Math.abs(g[s] - ref[s]), `seed ${seed}, n ${n}, skill ${s}`).toBeLessThanOrEqual(2e-6);
    }
    expect(live.tokens).toBe(N);
    bank.dispose();
  });

  it("an append over an unchanged bank after skills were added and removed equals the float64 reference of the changing library (|Δ| ≤ 2e-6)", async () => {
    // A skill added later votes only on the tokens appended after it; a removed one drops out (of
    // the scores and of every later token's top-k). Each append's library is kept, and the reference
    // replays the tokens against those libraries.
    const seed = freshSeed();
    const r = rng(seed);
    const nEmbd = 20, dim = 8;
    const wq = randArray(r, dim * nEmbd, 0.3);
    const bank = new KeyBank(dim);
    const keysOf = new Map<number, Float32Array>();
    const add = () => {
      const keys = unitKeys(r, 1 + Math.floor(r() * 5), dim);
      const h = bank.add(keys);
      keysOf.set(h, keys);
      return h;
    };
    let routable: number[] = Array.from({ length: 14 }, add);
    const parts = fakeParts(nEmbd, wq, dim, bank, () => routable);
    const live = new LiveContext(parts);
    const appended: { states: Float32Array; handles: number[] }[] = [];
    const append = async (n: number) => {
      const states = randArray(r, n * nEmbd);
      appended.push({ states, handles: [...routable] });
      await live.append(states);
    };
    const check = (what: string) => {
      const N = appended.reduce((t, a) => t + a.states.length / nEmbd, 0);
      const acc = new Map<number, number>();
      let W = 0, i = 0;
      for (const a of appended) {
        const skills = a.handles.map((h) => keysOf.get(h)!);
        for (let t = 0; t < a.states.length / nEmbd; t++, i++) {
          const w = 2 ** (-(N - 1 - i) / 64);
          W += w;
          // One token's vote over that append's library: the reference of one row, times its Σw = 1.
          const v = reference(a.states.subarray(t * nEmbd, (t + 1) * nEmbd), nEmbd, wq, dim, skills, voteK(skills.length));
          a.handles.forEach((h, s) => acc.set(h, (acc.get(h) ?? 0) + w * v[s]));
        }
      }
      const { handles, g } = live.scores();
      expect(Array.from(handles), `${what} (seed ${seed})`).toEqual(routable);
      handles.forEach((h, s) => expect(Math.abs(g[s] - (acc.get(h) ?? 0) / W), `${what}, skill ${h} (seed ${seed})`).toBeLessThanOrEqual(2e-6));
    };
    await append(5);
    await append(1);
    check("unchanged");
    routable.push(add()); // a skill added between two appends
    await append(1);
    check("after an add");
    await append(1); // the same bank again: the unchanged path
    await append(3);
    check("unchanged after an add");
    const gone = routable.splice(2, 1)[0]; // a skill removed between two appends
    bank.remove(gone);
    await append(1);
    check("after a remove");
    await append(1);
    await append(2);
    check("unchanged after a remove");
    routable = routable.filter((_, s) => s !== 4); // held by the bank but not routable: a glance over a subset
    await append(1);
    check("after a subset");
    await append(1);
    check("unchanged subset");
    routable.push(add(), add());
    bank.remove(routable.shift()!);
    await append(1);
    await append(1);
    check("after an add and a remove together");
    bank.dispose();
  });

  it("top() orders the routable skills by g and drops one uninstalled since the last append", async () => {
    const seed = freshSeed();
    const r = rng(seed);
    const nEmbd = 16, dim = 8;
    const bank = new KeyBank(dim);
    const routable = Array.from({ length: 6 }, () => bank.add(unitKeys(r, 1 + Math.floor(r() * 4), dim)));
    const live = new LiveContext(fakeParts(nEmbd, randArray(r, dim * nEmbd, 0.3), dim, bank, () => routable));
    await live.append(randArray(r, 4 * nEmbd));
    const { handles, g } = live.scores();
    const before = live.top(6);
    const byG = Array.from(handles).map((h, c) => ({ h, g: g[c], c })).sort((a, b) => b.g - a.g || a.c - b.c);
    expect(before.map((s) => s.skill), `seed ${seed}`).toEqual(byG.map((x) => `s${x.h}`));
    routable.splice(routable.indexOf(byG[0].h), 1); // the best one uninstalled, no append since
    expect(live.top(6).map((s) => s.skill), `seed ${seed}`).toEqual(before.slice(1).map((s) => s.skill));
    live.dispose();
    bank.dispose();
  });

  it("top(n) takes an integer n ≥ 0 and refuses anything else with INVALID_ARGUMENT", async () => {
    const seed = freshSeed();
    const r = rng(seed);
    const nEmbd = 16, dim = 8;
    const bank = new KeyBank(dim);
    const routable = Array.from({ length: 4 }, () => bank.add(unitKeys(r, 2, dim)));
    const live = new LiveContext(fakeParts(nEmbd, randArray(r, dim * nEmbd, 0.3), dim, bank, () => routable));
    await live.append(randArray(r, 3 * nEmbd));
    expect(live.top(0)).toEqual([]);
    expect(live.top(2).map((s) => s.skill)).toEqual(live.top().slice(0, 2).map((s) => s.skill));
    expect(live.top(100)).toHaveLength(4);
    for (const n of [NaN, -1, 1.5, Infinity, "2", null]) {
      expect(() => live.top(n as number), String(n)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringContaining("LiveContext.top's n") }));
    }
    live.dispose();
    bank.dispose();
  });

  it("an append queued behind a running one rejects as soon as its signal aborts (a bad one at once), folds nothing, and the appends after it run as before", async () => {
    const seed = freshSeed();
    const r = rng(seed);
    const nEmbd = 32, dim = 16;
    const bank = new KeyBank(dim);
    const handles = Array.from({ length: 8 }, () => bank.add(unitKeys(r, 4, dim)));
    const parts = fakeParts(nEmbd, randArray(r, dim * nEmbd, 0.3), dim, bank, () => handles);
    // rows × dim × (nEmbd + key rows) = 12,000 × 16 × 64, above the native kSyncWork (2^22): a worker's append
    const big = randArray(r, 12_000 * nEmbd);
    const skipped = randArray(r, 3 * nEmbd);
    const after = randArray(r, 2 * nEmbd);
    const live = new LiveContext(parts);
    const order: string[] = [];
    const settles = (p: Promise<void>, name: string) => (p.then(() => order.push(name), () => order.push(name)), p);
    const controller = new AbortController();
    const reason = new Error("stop the queued append");
    const first = settles(live.append(big), "first");
    const queued = settles(live.append(skipped, { signal: controller.signal }), "queued");
    const bad = settles(live.append(new Float32Array(nEmbd + 1)), "bad");
    const next = settles(live.append(after), "next");
    controller.abort(reason);
    const err = await queued.then(() => null, (e: unknown) => e);
    expect(err, `seed ${seed}`).toMatchObject({ code: "ABORTED", message: "LiveContext.append: the operation was aborted" });
    expect((err as Error).cause).toBe(reason);
    await expectCode(bad, "INVALID_ARGUMENT");
    // both before the append ahead of them finished
    expect([...order].sort()).toEqual(["bad", "queued"]);
    await first;
    await next;
    expect(order.slice(2)).toEqual(["first", "next"]);
    expect(live.tokens).toBe(12_002);
    // the state is what the first and the last append make: the aborted one changed nothing
    const reference = new LiveContext(parts);
    await reference.append(big);
    await reference.append(after);
    expect(Array.from(live.scores().g), `seed ${seed}`).toEqual(Array.from(reference.scores().g));
    live.dispose();
    reference.dispose();
    bank.dispose();
  });

  it("rejects states that are not rows of nEmbd, or not finite (checked once, natively), changing nothing", async () => {
    const r = rng(freshSeed());
    const nEmbd = 4, dim = 4;
    const bank = new KeyBank(dim);
    const handles = [bank.add(unitKeys(r, 2, dim)), bank.add(unitKeys(r, 3, dim))];
    const live = new LiveContext(fakeParts(nEmbd, randArray(r, dim * nEmbd, 0.3), dim, bank, () => handles));
    await expectCode(live.append(new Float32Array(5)), "INVALID_ARGUMENT");
    await live.append(randArray(r, 2 * nEmbd));
    const before = live.scores();
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY]) {
      const rows = randArray(r, 3 * nEmbd);
      rows[2 * nEmbd + 1] = bad;
      await expect(live.append(rows)).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringContaining(`states[${2 * nEmbd + 1}] is not finite`) });
    }
    expect(live.tokens).toBe(2);
    expect(Array.from(live.scores().g)).toEqual(Array.from(before.g));
    live.dispose();
    bank.dispose();
  });
});

describe("selectLive's context", () => {
  // the verdict's text needs only the model's tokenizer: one token per word here
  const parts = {
    taskBudget: 1000,
    model: { tokenizeAsync: async (t: string) => Int32Array.from(t.split(/\s+/), () => 1), detokenize: () => "" },
  } as unknown as RouterParts;
  const user = { role: "user", content: "write a bash script" };
  const system = { role: "system", content: "you are an agent" };

  it("refuses every element that is not a chat message, at its own index, system prompt or not (as route does)", async () => {
    for (const [context, index] of [[[null, user], 0], [[system, user, null], 2], [[system, user, 5], 2], [[system, { role: "system" }, user], 1], [[user, { content: "x" }], 1]] as const) {
      await expect(liveVerdictText(parts, context as never), JSON.stringify(context)).rejects.toMatchObject({
        name: "GavelError", code: "INVALID_ARGUMENT", message: `context[${index}] must be a chat message { role, content }`,
      });
    }
    // the system prompt is left out of the verdict's text; a context of nothing else is refused
    expect(await liveVerdictText(parts, [system, user] as never)).toBe("user: write a bash script");
    await expect(liveVerdictText(parts, [system] as never)).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringContaining("besides the system prompt") });
  });
});
