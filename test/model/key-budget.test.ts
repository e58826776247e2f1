// The key budget (RouterOpenOptions.keyBudget, Projections.keyBudget) on the tiny llama: with a key
// budget over the skill budget, an install also keys the body past the render's cut, its first
// keyBudget − skillBudget tokens, each key equal to normalize(W_s h) of that token read in a window of
// its own after a BOS (a plain reference pass here), at positions counted on from the render's end;
// the render's own keys and every skill that fits are unchanged; without a key budget the bank is the
// one an install always made. The projections' budgets are a router's defaults; bad values are typed errors.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Model, Projections, Router } from "../../src/index.js";
import { Library } from "../../src/bank/library.js";
import { projectNormalize } from "../../src/kernels/kernels.js";
import type { SkillInput } from "../../src/skills/index.js";
import { words } from "../helpers/lexicon.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";
import { freshSeed, rng } from "../helpers/random.js";

const seed = freshSeed();
const r = rng(seed);
const SKILL = 96;
const KEY = 256;

interface Keyed { keys: Float32Array; positions: number[]; tokens: number[]; renderTokens: number; bodyChars: number }

async function bankKeys(dir: string, projections: Projections): Promise<Map<string, Keyed>> {
  const lib = await Library.open(dir, projections, { create: false });
  try {
    const out = new Map<string, Keyed>();
    for (const e of lib.store.entries()) {
      out.set(e.id, { keys: await lib.store.readKeys(e), positions: [...(e.keyPositions ?? [])], tokens: [...e.keyTokens], renderTokens: e.renderTokens, bodyChars: e.renderCut!.bodyChars });
    }
    return out;
  } finally {
    await lib.close();
  }
}

describe(`the key budget on the tiny llama (seed ${seed})`, () => {
  let model: Model;
  let projections: Projections;
  let dir: string;
  let inputs: SkillInput[];
  let n = 0;
  const install = async (options: { skillBudget?: number; keyBudget?: number; p?: Projections }) => {
    const bank = join(dir, `bank${n++}`);
    const p = options.p ?? projections;
    const router = await Router.open(model, { projections: p, bankDir: bank, ...options });
    const report = await router.install(inputs, { concurrency: 2 });
    const budgets = [router.skillBudget, router.keyBudget];
    await router.close();
    return { report, budgets, keys: await bankKeys(bank, p) };
  };

  beforeAll(async () => {
    model = await Model.load(TINY_LLAMA_PATH, { contextSize: 1024, sequences: 2, threads: 1 });
    // ε 1e-6: the cover keeps every distinct key, so each keyed token's key can be checked
    const random = await Projections.random(model, { seed, dim: 32 });
    projections = new Projections({ ...random.meta, wq: random.wq, ws: random.ws, eps: 1e-6 });
    dir = await mkdtemp(join(tmpdir(), "gavel-key-budget-"));
    inputs = [
      { id: "long", name: words(r, 1), description: words(r, 3), body: words(r, 300 + Math.floor(r() * 100)) },
      { id: "short", name: words(r, 1), description: words(r, 3), body: words(r, 5) },
      { id: "mid", name: words(r, 1), description: words(r, 2), body: words(r, 120) },
    ];
  });
  afterAll(async () => {
    await model?.dispose();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("keys the body past the cut up to the key budget, each key the plain pass's; the rest unchanged", async () => {
    const plain = await install({ skillBudget: SKILL });
    expect(plain.budgets).toEqual([SKILL, SKILL]);
    const same = await install({ skillBudget: SKILL, keyBudget: SKILL });
    const wide = await install({ skillBudget: SKILL, keyBudget: KEY });
    expect(wide.budgets).toEqual([SKILL, KEY]);
    const { dim, layer, ws } = projections;
    const { nEmbd } = model.info;
    for (const id of ["long", "short", "mid"]) {
      const a = plain.keys.get(id)!, b = wide.keys.get(id)!;
      // a key budget equal to the skill budget is the plain install, bit for bit
      expect(Buffer.from(same.keys.get(id)!.keys.buffer).equals(Buffer.from(a.keys.buffer)), id).toBe(true);
      expect(a.positions.every((p) => p < a.renderTokens), id).toBe(true);
      expect(b.renderTokens).toBe(a.renderTokens);
      // the render's keys stand, by position (the cover's order may change)
      const byPos = new Map(b.positions.map((p, i) => [p, i]));
      a.positions.forEach((p, i) => {
        const j = byPos.get(p);
        expect(j, `${id} @${p}`).toBeDefined();
        expect(Array.from(b.keys.subarray(j! * dim, (j! + 1) * dim))).toEqual(Array.from(a.keys.subarray(i * dim, (i + 1) * dim)));
      });
      const inputBody = inputs.find((s) => s.id === id)!.body!;
      const cut = a.bodyChars < inputBody.length;
      const extra = b.positions.map((p, i) => [p, i]).filter(([p]) => p >= b.renderTokens);
      if (!cut) {
        expect(extra, id).toEqual([]);
        continue;
      }
      // the reference: the continuation's first KEY − SKILL tokens after a BOS, projected and normalised
      const rest = model.tokenize(inputBody.slice(a.bodyChars), { special: false, addBos: false }).subarray(0, KEY - SKILL);
      const h = await model.hiddenStates(Int32Array.from([model.info.bos!, ...rest]), layer);
      const ref = await projectNormalize(h.subarray(nEmbd), nEmbd, ws, dim);
      // ε 1e-6: every distinct continuation key is kept
      expect(extra.length, id).toBeGreaterThan(0);
      expect(extra.length, id).toBeLessThanOrEqual(rest.length);
      for (const [p, i] of extra) {
        const o = p - b.renderTokens;
        expect(o).toBeLessThan(rest.length);
        expect(b.tokens[i]).toBe(rest[o]);
        const got = b.keys.subarray(i * dim, (i + 1) * dim), want = ref.subarray(o * dim, (o + 1) * dim);
        for (let d = 0; d < dim; d++) expect(Math.abs(got[d] - want[d]), `${id} offset ${o} dim ${d}`).toBeLessThan(1e-5);
      }
    }
    expect(wide.report.rawKeys).toBeGreaterThan(plain.report.rawKeys);
  });

  it("takes the projections' budgets as the router's defaults; the caller's win", async () => {
    const p = projections.withCalibration({ skillBudget: 100, keyBudget: 300 });
    const open = async (o: { skillBudget?: number; keyBudget?: number }, q = p) => {
      const router = await Router.open(model, { projections: q, bankDir: join(dir, `open${n++}`), ...o });
      const b = [router.skillBudget, router.keyBudget];
      await router.close();
      return b;
    };
    expect(await open({})).toEqual([100, 300]);
    expect(await open({ skillBudget: 400 })).toEqual([400, 400]);
    expect(await open({ keyBudget: 120 })).toEqual([100, 120]);
    // a skill budget that leaves no room in this context (1,024): the router's own rule
    expect(await open({}, projections.withCalibration({ skillBudget: 1020 }))).toEqual([768, 768]);
    expect(await open({}, projections)).toEqual([768, 768]);
  });

  it("refuses bad budgets with typed errors", async () => {
    for (const keyBudget of [8, 1.5, Number.NaN, 2 ** 21, "512" as unknown as number]) {
      await expect(Router.open(model, { projections, bankDir: join(dir, `bad${n++}`), keyBudget }), String(keyBudget)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    }
    for (const bad of [{ skillBudget: -1 }, { keyBudget: 1.5 }, { keyBudget: 2 ** 20 + 1 }]) {
      expect(() => projections.withCalibration(bad), JSON.stringify(bad)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    }
  });
});
