// Cutting a long skill to the token budget: the render fits, and no longer cut would. The verdict
// tail, rendered directly, is the tail the old dummy-skill method found, token for token.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { DEFAULT_MODEL } from "../../src/defaults.js";
import { Model, loadSkills } from "../../src/index.js";
import { RenderEncoder, type EncodedTask } from "../../src/render/encode.js";
import { renderVerdict } from "../../src/render/index.js";
import { defaultFixtureDir, makeQwen3Fixture } from "../fixtures/qwen3.js";
import { SHARED, needsShared, sharedDir } from "../helpers/paths.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";
import { freshSeed, rng } from "../helpers/random.js";

describe("RenderEncoder.encodeSkill under a budget", () => {
  let model: Model;
  beforeAll(async () => {
    model = await Model.load(TINY_LLAMA_PATH, { contextSize: 1024, sequences: 2, threads: 1 });
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
            // one code point more: a cut never splits a surrogate pair (🙂)
            const next = e.bodyChars + (body.codePointAt(e.bodyChars)! > 0xffff ? 2 : 1);
            expect(unbounded.encodeSkill({ ...skill, body: body.slice(0, next) }).tokens.length, `seed ${seed}`).toBeGreaterThan(budget);
          }
        }
      }
    }
  });

  it("never cuts inside a surrogate pair: the longest cut of whole code points, body or description", () => {
    const unbounded = new RenderEncoder(model, 1 << 20);
    const isHigh = (c: number) => c >= 0xd800 && c <= 0xdbff;
    let cutsBeforeAPair = 0;
    for (let budget = 80; budget < 140; budget++) {
      const enc = new RenderEncoder(model, budget);
      for (const skill of [
        { name: "e", description: "d", body: "a😀".repeat(200) },
        { name: "e", description: "😀b".repeat(200), body: "x" },
      ]) {
        const e = enc.encodeSkill(skill);
        const [text, n] = e.descriptionChars < skill.description.length ? [skill.description, e.descriptionChars] : [skill.body, e.bodyChars];
        expect(e.truncated).toBe(true);
        expect(e.tokens.length).toBeLessThanOrEqual(budget);
        expect(isHigh(text.charCodeAt(n - 1)), `budget ${budget}: cut at ${n} splits a pair`).toBe(false);
        // one code point more overflows: the cut is the longest of whole code points
        const next = n + (text.codePointAt(n)! > 0xffff ? 2 : 1);
        const longer = text === skill.body ? { ...skill, body: text.slice(0, next) } : { ...skill, description: text.slice(0, next), body: "" };
        expect(unbounded.encodeSkill(longer).tokens.length, `budget ${budget}`).toBeGreaterThan(budget);
        if (text.codePointAt(n)! > 0xffff) cutsBeforeAPair++;
      }
    }
    // the inputs do put cuts right before an emoji (where a cut inside it was possible)
    expect(cutsBeforeAPair).toBeGreaterThan(0);
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

  it.skipIf(needsShared("the MIT skills library for real skills to cut", SHARED.mit))("cuts real skills with gavel-mini's 32K vocabulary to a longest fitting render", async () => {
    // Public skills, long and short, prose and code: what the probe that skips tokenizing a long
    // body whole must get right. A cut is right when its render is the unbounded render of the kept
    // body, it fits, and one character more overflows.
    const mini = await Model.load(DEFAULT_MODEL, { contextSize: 2048, threads: 1 });
    try {
      const seed = freshSeed();
      const r = rng(seed);
      const offset = Math.floor(r() * 30000);
      // a window of the public library may hold a row the loader refuses (a failure, not a skill)
      const { skills, failed } = await loadSkills(join(sharedDir, "data", "skills-mit.jsonl.gz"), { offset, limit: 24 });
      expect(skills.length + failed.length, `seed ${seed}`).toBe(24);
      expect(skills.length, `seed ${seed}`).toBeGreaterThanOrEqual(20);
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
            // one character more: a whole code point, as the cut never splits a surrogate pair
            const next = e.bodyChars + (skill.body.codePointAt(e.bodyChars)! > 0xffff ? 2 : 1);
            expect(unbounded.encodeSkill({ ...skill, body: skill.body.slice(0, next) }).tokens.length, at).toBeGreaterThan(budget);
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

/**
 * The verdict tail as RenderEncoder found it before it was rendered directly: render the verdict of a
 * dummy skill, take what follows r(s), and split plain text from scaffolding at the question's end.
 * Kept here only as the oracle of the direct render.
 */
function oldVerdictTail(model: Model, encoder: RenderEncoder, task: string, maxTokens: number, keep: "start" | "end"): EncodedTask {
  const plainText = (text: string) => model.tokenize(text, { special: false, addBos: false });
  const scaffold = (text: string) => model.tokenize(text, { special: true, addBos: false });
  const cat = (parts: Int32Array[]) => Int32Array.from(parts.flatMap((p) => Array.from(p)));
  const v = renderVerdict(encoder.template, { name: "n", description: "d", body: "" }, task);
  const plainEnd = v.question.indexOf("Answer yes or no:") + "Answer yes or no:".length;
  const taskTokens = plainText(v.task);
  if (taskTokens.length > maxTokens) {
    const cut = keep === "start" ? taskTokens.subarray(0, maxTokens) : taskTokens.subarray(taskTokens.length - maxTokens);
    return { tokens: cat([cut, plainText(v.question.slice(0, plainEnd)), scaffold(v.question.slice(plainEnd))]), taskStart: 0, taskEnd: cut.length, truncated: true, wholeTokens: taskTokens.length };
  }
  const plain = plainText(v.task + v.question.slice(0, plainEnd));
  let taskEnd = 0;
  while (taskEnd < Math.min(taskTokens.length, plain.length) && taskTokens[taskEnd] === plain[taskEnd]) taskEnd++;
  return { tokens: cat([plain, scaffold(v.question.slice(plainEnd))]), taskStart: 0, taskEnd, truncated: false, wholeTokens: taskEnd };
}

describe("RenderEncoder.encodeVerdictTail renders the tail directly", () => {
  const long = Array.from({ length: 120 }, (_, i) => `step ${i}: docker compose up, then kubectl apply -f k8s/`).join("\n");
  const tasks = [
    "x",
    "  \n a \r\n", // empty-ish: trimmed to one character, CRLF normalised
    "?",
    "Write a Dockerfile for the Flask app",
    "Extract the tables from 報告書.pdf and summarise them 🚀 — ça va?",
    "line one\r\nline two\n\n  indented <|im_end|> not a control token",
    long,
    long.repeat(3), // over 16,384 characters: the async encoding tokenizes it off the JS thread
  ];
  const models: [string, () => Promise<string>][] = [
    ["stories260K", async () => TINY_LLAMA_PATH],
    ["gavel-mini", async () => DEFAULT_MODEL],
    ["the random qwen3 fixture", () => makeQwen3Fixture(defaultFixtureDir())],
  ];
  for (const [label, path] of models) {
    it(`gives the old method's tokens on ${label}, whole and cut`, async () => {
      const model = await Model.load(await path(), { contextSize: 2048, threads: 1 });
      try {
        const enc = new RenderEncoder(model, 256);
        let cuts = 0;
        for (const task of tasks) {
          for (const maxTokens of [1 << 20, 64, 5, 1]) {
            for (const keep of ["end", "start"] as const) {
              const at = `${label}, task ${JSON.stringify(task.slice(0, 40))}, maxTokens ${maxTokens}, keep ${keep}`;
              const want = oldVerdictTail(model, enc, task, maxTokens, keep);
              const got = keep === "end" ? enc.encodeVerdictTail(task, maxTokens) : enc.encodeVerdictTail(task, maxTokens, keep);
              expect(Array.from(got.tokens), at).toEqual(Array.from(want.tokens));
              expect({ ...got, tokens: null }, at).toEqual({ ...want, tokens: null });
              const gotAsync = await enc.encodeVerdictTailAsync(task, maxTokens, keep);
              expect({ ...gotAsync, tokens: Array.from(gotAsync.tokens) }, `${at}, async`).toEqual({ ...got, tokens: Array.from(got.tokens) });
              if (got.truncated) cuts++;
            }
          }
        }
        expect(cuts).toBeGreaterThan(0);
        // the glance's task render and a live context: the async encodings equal the sync ones
        const asArrays = (e: EncodedTask) => ({ ...e, tokens: Array.from(e.tokens) });
        for (const task of tasks) {
          for (const maxTokens of [1 << 20, 64, 1]) {
            expect(asArrays(await enc.encodeTaskAsync(task, maxTokens, "start")), `${label} task ${maxTokens}`).toEqual(asArrays(enc.encodeTask(task, maxTokens, "start")));
            expect(asArrays(await enc.encodeLiveAsync(task, maxTokens)), `${label} live ${maxTokens}`).toEqual(asArrays(enc.encodeLive(task, maxTokens)));
          }
        }
        // an empty task is still refused, typed
        expect(() => enc.encodeVerdictTail(" \n ", 64)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
      } finally {
        await model.dispose();
      }
    }, 120_000);
  }
});
