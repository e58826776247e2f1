// Cutting a long skill to the token budget: the render fits, and no longer cut would.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { DEFAULT_MODEL } from "../../src/defaults.js";
import { Model, loadSkills } from "../../src/index.js";
import { RenderEncoder } from "../../src/render/encode.js";
import { sharedDir, storiesPath } from "../helpers/paths.js";
import { freshSeed, rng } from "../helpers/random.js";

describe("RenderEncoder.encodeSkill under a budget", () => {
  let model: Model;
  beforeAll(async () => {
    model = await Model.load(storiesPath, { contextSize: 1024, sequences: 2, threads: 1 });
  });
  afterAll(async () => {
    await model?.dispose();
  });

  it("cuts bodies of any length to the longest render that fits", () => {
    const seed = freshSeed();
    const r = rng(seed);
    const words = ["the", "cat", "ran", "docker", "compose", "kubernetes", "日本語", "🙂", "\n", "## Step", "x=1;"];
    const unbounded = new RenderEncoder(model, 1 << 20);
    for (const budget of [90, 157, 300]) {
      const enc = new RenderEncoder(model, budget);
      for (let t = 0; t < 6; t++) {
        const n = Math.floor(r() * 3000);
        const body = Array.from({ length: n }, () => words[Math.floor(r() * words.length)]).join(" ");
        const skill = { name: "s", description: "A skill.", body };
        const e = enc.encodeSkill(skill);
        expect(e.tokens.length, `seed ${seed}`).toBeLessThanOrEqual(budget);
        if (e.truncated) {
          // one more word of body would not have fitted: the cut is (nearly) maximal
          const full = enc.encodeSkill({ ...skill, body: "" });
          expect(full.tokens.length).toBeLessThanOrEqual(budget);
          expect(e.tokens.length, `seed ${seed} budget ${budget} n ${n}`).toBeGreaterThanOrEqual(budget - 6);
          // exactly the longest cut: the render of the kept body is this one, one character more overflows
          if (e.bodyChars > 0) {
            expect(Array.from(unbounded.encodeSkill({ ...skill, body: body.slice(0, e.bodyChars) }).tokens)).toEqual(Array.from(e.tokens));
            expect(unbounded.encodeSkill({ ...skill, body: body.slice(0, e.bodyChars + 1) }).tokens.length, `seed ${seed}`).toBeGreaterThan(budget);
          }
        }
      }
    }
  });

  it("cuts the description when the name and description alone overflow, whatever the body's length", () => {
    const seed = freshSeed();
    const r = rng(seed);
    const unbounded = new RenderEncoder(model, 1 << 20);
    const words = ["the", "cat", "ran", "far", "away", "home", "\n"];
    const text = (n: number) => Array.from({ length: n }, () => words[Math.floor(r() * words.length)]).join(" ");
    const description = text(150);
    for (const bodyWords of [0, 10, 20_000]) {
      const skill = { name: "tiny", description, body: text(bodyWords) };
      const bare = unbounded.encodeSkill({ ...skill, body: "" }).tokens.length;
      const budget = bare - 40; // the description must lose about 40 tokens
      const e = new RenderEncoder(model, budget).encodeSkill(skill);
      const at = `seed ${seed}, body of ${bodyWords} words`;
      expect(e.truncated, at).toBe(true);
      expect(e.bodyChars, at).toBe(0);
      expect(e.descriptionChars, at).toBeLessThan(description.length);
      expect(e.tokens.length, at).toBeLessThanOrEqual(budget);
      const kept = { ...skill, description: description.slice(0, e.descriptionChars), body: "" };
      expect(Array.from(unbounded.encodeSkill(kept).tokens), at).toEqual(Array.from(e.tokens));
      expect(unbounded.encodeSkill({ ...kept, description: description.slice(0, e.descriptionChars + 1) }).tokens.length, at).toBeGreaterThan(budget);
    }
    // a name that alone overflows is refused, typed
    expect(() => new RenderEncoder(model, 20).encodeSkill({ name: text(40), description: "d", body: "b" })).toThrow(expect.objectContaining({ code: "SKILL_INVALID" }));
  });

  it("cuts real skills with gavel-mini's 32K vocabulary to a longest fitting render", async () => {
    // Public skills, long and short, prose and code: what the probe that skips tokenizing a long
    // body whole must get right. A cut is right when its render is the unbounded render of the kept
    // body, it fits, and one character more overflows.
    const mini = await Model.load(DEFAULT_MODEL, { contextSize: 2048, threads: 1 });
    try {
      const seed = freshSeed();
      const r = rng(seed);
      const offset = Math.floor(r() * 30000);
      const { skills } = await loadSkills(join(sharedDir, "data", "skills-mit.jsonl.gz"), { offset, limit: 24 });
      expect(skills.length).toBe(24);
      const unbounded = new RenderEncoder(mini, 1 << 20);
      let cuts = 0;
      for (const budget of [96, 512]) {
        const enc = new RenderEncoder(mini, budget);
        for (const skill of skills) {
          const e = enc.encodeSkill(skill);
          const at = `seed ${seed}, skill ${skill.id}, budget ${budget}`;
          // the same encoding with its tokenizations off the JS thread
          expect(await enc.encodeSkillAsync(skill), at).toEqual(e);
          // and again from the recorded cut alone (what the verdict re-renders)
          expect(enc.encodeSkillCut(skill, e), at).toEqual(e);
          expect(await enc.encodeSkillCutAsync(skill, e), at).toEqual(e);
          expect(e.tokens.length, at).toBeLessThanOrEqual(budget);
          if (e.bodyChars < skill.body.length) expect(e.truncated, at).toBe(true);
          if (!e.truncated) expect(e.bodyChars, at).toBe(skill.body.length);
          const kept = { ...skill, body: skill.body.slice(0, e.bodyChars) };
          if (!e.truncated || e.bodyChars > 0) expect(Array.from(unbounded.encodeSkill(kept).tokens), at).toEqual(Array.from(e.tokens));
          if (e.truncated) {
            cuts++;
            expect(unbounded.encodeSkill({ ...skill, body: skill.body.slice(0, e.bodyChars + 1) }).tokens.length, at).toBeGreaterThan(budget);
          }
        }
      }
      expect(cuts).toBeGreaterThan(0);
      // a cut that does not apply, or whose render overflows this encoder's budget, gives null
      const s0 = skills[0];
      const small = new RenderEncoder(mini, 16); // below any render with its scaffolding
      expect(unbounded.encodeSkillCut(s0, { descriptionChars: s0.description.length + 1, bodyChars: 0 })).toBeNull();
      expect(unbounded.encodeSkillCut(s0, { descriptionChars: -1, bodyChars: 0 })).toBeNull();
      expect(unbounded.encodeSkillCut(s0, { descriptionChars: 0.5, bodyChars: 0 })).toBeNull();
      expect(small.encodeSkillCut(s0, { descriptionChars: s0.description.length, bodyChars: s0.body.length })).toBeNull();
    } finally {
      await mini.dispose();
    }
  }, 120_000);
});
