// Live routing over a generated rollout on a real model: a LiveContext fed the ℓ* states captured by
// Model.generate (prompt prefill, then one token at a time) ranks the library as a from-scratch live
// glance (router.glance(text, { live: true }), which re-encodes the whole text) over the same tokens.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model, Projections, Router } from "../../src/index.js";
import { sharedDir, storiesPath, needsShared, SHARED } from "../helpers/paths.js";
import { freshSeed } from "../helpers/random.js";

const NO_SHARED = needsShared("stories260K and SWE-Skills-Bench's skills", SHARED.stories, SHARED.benchSkills);

const benchSkills = join(sharedDir, "data", "swe-skills-bench", "skills.jsonl");

describe.skipIf(NO_SHARED)("router.live() over a generated rollout (stories260K, random projections)", () => {
  let model: Model;
  let router: Router;
  let dir: string;
  const seed = freshSeed();
  beforeAll(async () => {
    model = await Model.load(storiesPath, { contextSize: 1024, threads: 1 });
    const projections = await Projections.random(model, { seed, dim: 64 });
    dir = mkdtempSync(join(tmpdir(), "gavel-live-"));
    router = await Router.open(model, { projections, bankDir: dir, skillBudget: 96 });
    await router.install(benchSkills, { limit: 20 });
  }, 600_000);
  afterAll(async () => {
    await router?.close();
    await model?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("per-token live scores equal a from-scratch live glance of the same tokens, same top skill", async () => {
    const live = router.live();
    const prompt = "Once upon a time the build failed and the little robot";
    let promptTokens: ArrayLike<number> = [];
    const it = model.generate(prompt, {
      temperature: 0, maxTokens: 24, ignoreEog: true, captureLayer: live.layer,
      onPrompt: (s, t) => void ((promptTokens = t), live.append(s)),
    });
    const gen: number[] = [];
    for await (const c of it) {
      await live.append(c.state);
      gen.push(c.token);
    }
    const all = Int32Array.from([...Array.from(promptTokens), ...gen]);
    expect(live.tokens).toBe(all.length);
    // From scratch over the same tokens: one forward pass, every row appended at once (one glance
    // with decayWeights(n), the router's live glance).
    const scratch = router.live();
    await scratch.append(await model.hiddenStates(all, live.layer));
    const mine = live.top(20);
    const ref = scratch.top(20);
    expect(mine[0].skill, `seed ${seed}`).toBe(ref[0].skill);
    const bySkill = new Map(ref.map((h) => [h.skill, h.g]));
    for (const m of mine) expect(Math.abs(m.g - bySkill.get(m.skill)!), `seed ${seed}`).toBeLessThanOrEqual(1e-4);
  });

  it("a one-shot live context is the router's live glance of the same text", async () => {
    const text = "Fix the failing build: the linker cannot find libssl and the tests time out.";
    const tokens = model.tokenize(text, { special: true, addBos: model.info.addBos });
    const live = router.live();
    await live.append(await model.hiddenStates(tokens, live.layer));
    const ref = await router.glance(text, { live: true, topK: 20 });
    const mine = live.top(20);
    expect(mine.map((m) => m.skill), `seed ${seed}`).toEqual(ref.map((h) => h.skill));
    for (let i = 0; i < ref.length; i++) expect(Math.abs(mine[i].g - ref[i].g), `seed ${seed}`).toBeLessThanOrEqual(1e-6);
  });
});
