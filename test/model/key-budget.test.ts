// The key budget (RouterOpenOptions.keyBudget, Projections.keyBudget) on the tiny llama: with a key
// budget over the skill budget, an install keys a skill whose body r(s) cut from one pass over the
// skill rendered at the key budget (within the context): each key equal to normalize(W_s h) of a
// plain pass over that render, r(s)'s own keys unchanged; a key budget past the context reads the
// body beyond that render in windows after a BOS, at positions counted on from its end. Every skill
// that fits is unchanged; without a key budget the bank is the one an install always made. The
// projections' budgets are a router's defaults; bad values are typed errors.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Model, Projections, Router } from "../../src/index.js";
import { Library } from "../../src/bank/library.js";
import { projectNormalize } from "../../src/kernels/kernels.js";
import { RenderEncoder } from "../../src/render/encode.js";
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
      { id: "huge", name: words(r, 1), description: words(r, 2), body: words(r, 1500) },
    ];
  });
  afterAll(async () => {
    await model?.dispose();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("keys a skill whose body r(s) cut from one pass over its render at the key budget, each key the plain pass's; the rest unchanged", async () => {
    const plain = await install({ skillBudget: SKILL });
    expect(plain.budgets).toEqual([SKILL, SKILL]);
    const same = await install({ skillBudget: SKILL, keyBudget: SKILL });
    const wide = await install({ skillBudget: SKILL, keyBudget: KEY });
    expect(wide.budgets).toEqual([SKILL, KEY]);
    const { dim, layer, ws } = projections;
    const { nEmbd } = model.info;
    const keyRender = new RenderEncoder(model, KEY);
    for (const id of ["long", "short", "mid", "huge"]) {
      const a = plain.keys.get(id)!, b = wide.keys.get(id)!;
      // a key budget equal to the skill budget is the plain install, bit for bit
      expect(Buffer.from(same.keys.get(id)!.keys.buffer).equals(Buffer.from(a.keys.buffer)), id).toBe(true);
      expect(a.positions.every((p) => p < a.renderTokens), id).toBe(true);
      // the verdict's render is r(s), whatever the key budget
      expect([b.renderTokens, b.bodyChars]).toEqual([a.renderTokens, a.bodyChars]);
      const input = inputs.find((x) => x.id === id)!;
      if (a.bodyChars === input.body!.length) {
        // a skill that fits: its keys are r(s)'s, bit for bit
        expect(Buffer.from(b.keys.buffer).equals(Buffer.from(a.keys.buffer)), id).toBe(true);
        expect(b.positions).toEqual(a.positions);
        continue;
      }
      // the reference: the skill rendered at the key budget, one plain pass, its keyed rows projected
      const e = keyRender.encodeSkill({ name: input.name!, description: input.description!, body: input.body! });
      const h = await model.hiddenStates(e.tokens, layer);
      const ref = await projectNormalize(h.subarray(e.keyStart * nEmbd, e.keyEnd * nEmbd), nEmbd, ws, dim);
      // ε 1e-6: every distinct key is kept, and the wider render holds more of the body
      expect(b.positions.length, id).toBeGreaterThan(a.positions.length);
      expect(b.positions.length, id).toBeLessThanOrEqual(e.keyEnd - e.keyStart);
      expect(Math.max(...b.positions), id).toBeGreaterThan(Math.max(...a.positions));
      b.positions.forEach((p, i) => {
        expect(p, `${id} @${p}`).toBeGreaterThanOrEqual(e.keyStart);
        expect(p, `${id} @${p}`).toBeLessThan(e.keyEnd);
        expect(b.tokens[i]).toBe(e.tokens[p]);
        const got = b.keys.subarray(i * dim, (i + 1) * dim), want = ref.subarray((p - e.keyStart) * dim, (p - e.keyStart + 1) * dim);
        for (let d = 0; d < dim; d++) expect(Math.abs(got[d] - want[d]), `${id} @${p} dim ${d}`).toBeLessThan(1e-5);
      });
      // r(s)'s keys stand, by position (the same tokens before them, so the same states), but for the
      // last few tokens before its cut, where joining the body to the closing scaffolding may tokenize apart
      const byPos = new Map(b.positions.map((p, i) => [p, i]));
      const seam = Math.max(...a.positions) - 4;
      for (const [i, p] of a.positions.entries()) {
        if (p >= seam) continue;
        const j = byPos.get(p);
        expect(j, `${id} @${p}`).toBeDefined();
        const got = b.keys.subarray(j! * dim, (j! + 1) * dim), want = a.keys.subarray(i * dim, (i + 1) * dim);
        for (let d = 0; d < dim; d++) expect(Math.abs(got[d] - want[d]), `${id} @${p} dim ${d}`).toBeLessThan(1e-5);
      }
    }
    expect(wide.report.rawKeys).toBeGreaterThan(plain.report.rawKeys);
  });

  it("past the context, reads the body beyond the widest render in windows after a BOS, counted on from its end", async () => {
    const CTX = model.info.contextSize;
    const far = await install({ skillBudget: SKILL, keyBudget: CTX + 400 });
    const input = inputs.find((x) => x.id === "huge")!;
    const e = new RenderEncoder(model, CTX).encodeSkill({ name: input.name!, description: input.description!, body: input.body! });
    expect(e.truncated).toBe(true);
    const b = far.keys.get("huge")!;
    const { dim, layer, ws } = projections;
    const { nEmbd } = model.info;
    const rest = model.tokenize(input.body!.slice(e.bodyChars), { special: false, addBos: false }).subarray(0, 400);
    const h = await model.hiddenStates(Int32Array.from([model.info.bos!, ...rest]), layer);
    const ref = await projectNormalize(h.subarray(nEmbd), nEmbd, ws, dim);
    const extra = b.positions.map((p, i) => [p, i]).filter(([p]) => p >= e.tokens.length);
    expect(extra.length).toBeGreaterThan(0);
    expect(extra.length).toBeLessThanOrEqual(rest.length);
    for (const [p, i] of extra) {
      const o = p - e.tokens.length;
      expect(o).toBeLessThan(rest.length);
      expect(b.tokens[i]).toBe(rest[o]);
      const got = b.keys.subarray(i * dim, (i + 1) * dim), want = ref.subarray(o * dim, (o + 1) * dim);
      for (let d = 0; d < dim; d++) expect(Math.abs(got[d] - want[d]), `offset ${o} dim ${d}`).toBeLessThan(1e-5);
    }
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

  it("names the budget option it refuses (GavelError.option): a budget that leaves no room, a render that cannot fit it", async () => {
    await expect(Router.open(model, { projections, bankDir: join(dir, `bad${n++}`), skillBudget: 1020 })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      option: "skillBudget",
      message: "the skill budget of 1020 tokens (skillBudget) leaves no room for a task in the context of 1024 tokens (contextSize): lower skillBudget or raise contextSize",
    });
    // a name whose tokens alone fill the skill budget: the skill fails, the others install
    const name = words(r, 100);
    const skills: SkillInput[] = [{ id: "long-name", name, description: "d", body: "b" }, { id: "tiny", name: "tiny", description: "does one thing", body: "The body." }];
    for (const [o, origin, remedy] of [
      [{ skillBudget: 128 }, "skillBudget", "raise skillBudget"],
      [{ p: projections.withCalibration({ skillBudget: 128 }) }, "the projections' skill budget", "give a larger skillBudget"],
    ] as const) {
      const p = "p" in o ? o.p : projections;
      const router = await Router.open(model, { projections: p, bankDir: join(dir, `overflow${n++}`), ..."skillBudget" in o ? { skillBudget: o.skillBudget } : {} });
      try {
        const report = await router.install(skills);
        expect(report.installed, origin).toEqual(["tiny"]);
        expect(report.failed, origin).toHaveLength(1);
        const { error } = report.failed[0];
        expect(error, origin).toMatchObject({ code: "SKILL_INVALID", option: "skillBudget" });
        expect(error.message, origin).toMatch(/alone overflow the skill budget of 128 tokens \(its render without a body takes \d+\)/);
        expect(error.message, origin).toMatch(new RegExp(`; the skill budget is ${origin}: ${remedy}$`));
      } finally {
        await router.close();
      }
    }
  });
});
