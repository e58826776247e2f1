// Cutting a long skill to the token budget: the render fits, and no longer cut would.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Model } from "../src/index.js";
import { RenderEncoder } from "../src/router/encode.js";
import { storiesPath } from "./helpers/paths.js";
import { freshSeed, rng } from "./helpers/random.js";

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
});
