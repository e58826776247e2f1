// `install --states-cache` (InstallOptions.statesCache) on stories260K: after the trainer's states pass
// over a library, installing it runs no forward pass for the skills it cached, and the bank equals,
// bit for bit, an install without the cache whose states are rounded through f16 (the cache's format;
// within f16 rounding of the plain install). Skills whose tokens differ (another skill budget, the
// self-supervised render), another layer and another model file are clean misses computed exactly as
// without the cache; the cache is never written; bad option values are typed errors.
import { copyFile, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Model, Projections, Router } from "../../src/index.js";
import { Library } from "../../src/bank/library.js";
import { RenderEncoder } from "../../src/render/encode.js";
import { loadSkills, type Skill, type SkillInput } from "../../src/skills/index.js";
import { computeStates } from "../../lab/train/pipeline-states.js";
import { fromHalf, toHalf } from "../../src/util/half.js";
import { words } from "../helpers/lexicon.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";
import { freshSeed, rng } from "../helpers/random.js";
import { expectCode } from "../helpers/gavel-error.js";

const seed = freshSeed();
const r = rng(seed);
const BUDGET = 128;

/** Short skills (most fit even a budget of 96) and long ones (cut at 128 and at 96, at other places). */
function library(): SkillInput[] {
  return Array.from({ length: 14 }, (_, i) => ({
    id: `s${i}`,
    name: words(r, 1),
    description: words(r, 2 + Math.floor(r() * 3)),
    body: i % 2 === 0 ? words(r, Math.floor(r() * 4)) : words(r, 150 + Math.floor(r() * 100)),
  }));
}

/** Each installed skill's keys (bytes) and key positions, by id. */
async function bankKeys(dir: string, projections: Projections): Promise<Map<string, { keys: Buffer; positions: number[] }>> {
  const lib = await Library.open(dir, projections, { create: false });
  try {
    const out = new Map<string, { keys: Buffer; positions: number[] }>();
    for (const e of lib.store.entries()) out.set(e.id, { keys: Buffer.from((await lib.store.readKeys(e)).buffer), positions: [...(e.keyPositions ?? [])] });
    return out;
  } finally {
    await lib.close();
  }
}

/** The trainer's states pass over `skills` (no queries), cached under `root`, as `gavel train --cache` runs it. */
async function trainerPass(model: Model, root: string, layer: number, skills: readonly Skill[], noDescription = false): Promise<void> {
  await computeStates(model, { noDescription, skillTokens: BUDGET, cache: root }, layer, skills, { train: [], val: [] }, () => {});
}

/** Every file under `dir`, relative, sorted. */
async function tree(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true })).map(String).sort();
}

describe(`install --states-cache on the tiny llama (seed ${seed})`, () => {
  let model: Model;
  let projections: Projections;
  let dir: string;
  let inputs: SkillInput[];
  let skills: Skill[];
  let plain: Map<string, { keys: Buffer; positions: number[] }>;
  let plainPasses: number;
  let n = 0;

  /** Installs `inputs` into a fresh bank; counts the model's forward passes (skills' and the breadth probes'). */
  async function install(options: { statesCache?: string; budget?: number; m?: Model } = {}) {
    const m = options.m ?? model;
    const bank = join(dir, `bank${n++}`);
    const spy = vi.spyOn(m, "hiddenStates");
    try {
      const router = await Router.open(m, { projections, bankDir: bank, skillBudget: options.budget ?? BUDGET });
      const report = await router.install(inputs, { statesCache: options.statesCache, concurrency: 4 });
      await router.close();
      return { report, passes: spy.mock.calls.length, keys: await bankKeys(bank, projections) };
    } finally {
      spy.mockRestore();
    }
  }

  beforeAll(async () => {
    model = await Model.load(TINY_LLAMA_PATH, { contextSize: 1024, sequences: 4, threads: 1 });
    projections = await Projections.random(model, { seed, dim: 32 });
    dir = await mkdtemp(join(tmpdir(), "gavel-install-states-"));
    inputs = library();
    skills = (await loadSkills(inputs)).skills;
    const p = await install();
    expect(p.report.installed.length).toBe(inputs.length);
    expect(p.report.statesCache).toBeUndefined();
    plain = p.keys;
    plainPasses = p.passes;
  });
  afterAll(async () => {
    await model?.dispose();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("reads every skill the trainer cached: no forward pass for them, keys = the plain install's over f16-rounded states", async () => {
    const root = join(dir, "states-a");
    await trainerPass(model, root, projections.layer, skills);
    const before = await tree(root);
    const cached = await install({ statesCache: root });
    expect(cached.report.statesCache).toEqual({ hits: inputs.length, misses: 0, present: true });
    expect(cached.report.installed.length).toBe(inputs.length);
    expect(plainPasses - cached.passes).toBe(inputs.length); // only the breadth probes' passes are left
    expect(await tree(root)).toEqual(before); // read only

    // The same install without the cache, its states rounded through f16 as the cache stores them: the same bank, bit for bit.
    const original = model.hiddenStates.bind(model);
    const rounded = vi.spyOn(model, "hiddenStates").mockImplementation(async (...args) => (await original(...args)).map((x) => fromHalf(toHalf(x))));
    let viaF16;
    try {
      viaF16 = await install();
    } finally {
      rounded.mockRestore();
    }
    for (const [id, k] of cached.keys) {
      expect(k.positions, `${id}, seed ${seed}`).toEqual(viaF16.keys.get(id)!.positions);
      expect(k.keys.equals(viaF16.keys.get(id)!.keys), `${id}, seed ${seed}`).toBe(true);
    }
    // …and within f16's rounding of the plain install wherever the ε-cover kept the same rows.
    let same = 0;
    for (const [id, k] of cached.keys) {
      const p = plain.get(id)!;
      if (p.positions.join() !== k.positions.join()) continue;
      same++;
      const a = new Float32Array(k.keys.buffer, k.keys.byteOffset, k.keys.length / 4);
      const b = new Float32Array(p.keys.buffer, p.keys.byteOffset, p.keys.length / 4);
      for (let i = 0; i < a.length; i++) expect(Math.abs(a[i] - b[i]), `${id}, seed ${seed}`).toBeLessThan(5e-3);
    }
    expect(same).toBeGreaterThan(inputs.length / 2);
  });

  it("computes a skill whose tokens differ (another skill budget) exactly as without the cache, and reads the others", async () => {
    const root = join(dir, "states-b");
    await trainerPass(model, root, projections.layer, skills);
    // Which skills a budget of 96 renders as the same tokens as 128: by the encoder itself
    const e128 = new RenderEncoder(model, BUDGET);
    const e96 = new RenderEncoder(model, 96);
    let same = 0;
    for (const s of skills) {
      const a = e128.encodeSkill(s);
      const b = e96.encodeSkill(s);
      if (a.keyStart === b.keyStart && a.keyEnd === b.keyEnd && Buffer.from(a.tokens.buffer).equals(Buffer.from(b.tokens.buffer))) same++;
    }
    expect(same).toBeGreaterThan(0);
    expect(same).toBeLessThan(skills.length);
    const plain96 = await install({ budget: 96 });
    const cached = await install({ statesCache: root, budget: 96 });
    expect(cached.report.statesCache).toEqual({ hits: same, misses: skills.length - same, present: true });
    expect(plain96.passes - cached.passes).toBe(same);
    let exact = 0;
    for (const [id, k] of cached.keys) if (k.keys.equals(plain96.keys.get(id)!.keys)) exact++;
    expect(exact).toBeGreaterThanOrEqual(skills.length - same); // every miss (and any hit f16 did not move) bit for bit
  });

  it("misses every skill of the self-supervised render (no description), and of another layer", async () => {
    const selfSup = join(dir, "states-c");
    await trainerPass(model, selfSup, projections.layer, skills, true);
    const a = await install({ statesCache: selfSup });
    expect(a.report.statesCache).toEqual({ hits: 0, misses: skills.length, present: true });
    const other = join(dir, "states-d");
    await trainerPass(model, other, projections.layer - 1, skills);
    const b = await install({ statesCache: other });
    expect(b.report.statesCache).toEqual({ hits: 0, misses: skills.length, present: false });
    expect(b.passes).toBe(plainPasses);
    for (const got of [a, b]) for (const [id, k] of got.keys) expect(k.keys.equals(plain.get(id)!.keys), id).toBe(true);
  });

  it("never reads the states of another model file with the same fingerprint (other weights)", async () => {
    // one low mantissa byte of the last tensor changed: same shapes and vocabulary, other weights
    const twin = join(dir, "twin.gguf");
    await copyFile(TINY_LLAMA_PATH, twin);
    const bytes = await readFile(twin);
    bytes[bytes.length - 4] ^= 1;
    await writeFile(twin, bytes);
    const m = await Model.load(twin, { contextSize: 1024, sequences: 4, threads: 1 });
    try {
      const root = join(dir, "states-e");
      await trainerPass(m, root, projections.layer, skills);
      const got = await install({ statesCache: root });
      expect(got.report.statesCache).toEqual({ hits: 0, misses: skills.length, present: false });
      for (const [id, k] of got.keys) expect(k.keys.equals(plain.get(id)!.keys), id).toBe(true);
    } finally {
      await m.dispose();
    }
  });

  it("refuses bad option values with typed errors", async () => {
    const router = await Router.open(model, { projections, bankDir: join(dir, "bank-bad"), skillBudget: BUDGET });
    try {
      const one = inputs.slice(0, 1);
      await expectCode(router.install(one, { statesCache: "" }), "INVALID_ARGUMENT");
      await expectCode(router.install(one, { statesCache: 42 as unknown as string }), "INVALID_ARGUMENT");
      await expectCode(router.install(one, { statesCache: join(dir, "no-such-folder") }), "FILE_NOT_FOUND");
      const file = join(dir, "a-file");
      await writeFile(file, "x");
      await expectCode(router.install(one, { statesCache: file }), "INVALID_ARGUMENT");
      expect(router.list()).toEqual([]);
    } finally {
      await router.close();
    }
  });
});
