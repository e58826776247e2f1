// gavel train end to end on stories260K: self-supervised on ~60 public skills, then the written
// projections load into a Router that installs skills and routes a task. One thread: on a shared
// two-core machine llama.cpp with two threads is ~20× slower per call under contention.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync, statSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model, Projections, Router } from "../../src/index.js";
import { trainProjections } from "../../lab/train/pipeline.js";
import { sharedDir, storiesPath, needsShared, SHARED } from "../helpers/paths.js";

const NO_SHARED = needsShared("stories260K and the MIT skills library to train", SHARED.stories, SHARED.mit);

const mitSkills = join(sharedDir, "data", "skills-mit.jsonl.gz");

describe.skipIf(NO_SHARED)("gavel train on stories260K", () => {
  let model: Model;
  let dir: string;
  beforeAll(async () => {
    model = await Model.load(storiesPath, { contextSize: 512, sequences: 4, threads: 1 });
    dir = mkdtempSync(join(tmpdir(), "gavel-train-e2e-"));
  });
  afterAll(async () => {
    await model?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("self-supervised training lowers the loss, writes projections the router loads and routes with", async () => {
    const out = join(dir, "proj.gguf");
    const opts = {
      library: mitSkills, limit: 60, selfSupervised: true, out, dim: 32, steps: 40, lr: 3e-3, batchTasks: 8,
      batchTokens: 4096, negatives: 15, skillTokens: 192, seed: 1, threads: 1, cache: join(dir, "cache"),
      checkpointEvery: 20, valEvery: 20, finetuneSteps: 5,
    };
    const r = await trainProjections(model, opts);
    const head = r.losses.slice(0, 8).reduce((a, b) => a + b) / 8;
    const tail = r.losses.slice(-8).reduce((a, b) => a + b) / 8;
    console.log(`e2e: ${r.skills} skills, ${r.trainPairs}/${r.valPairs} tasks, ${r.stateTokens} state tokens (${r.cacheBytes} B f16), loss ${head.toFixed(3)} → ${tail.toFixed(3)}, ${r.tokensPerSec.toFixed(0)} tok/s, ${r.stepsPerSec.toFixed(1)} steps/s, val Hit@1 ${r.val?.hit1.toFixed(2)} R@10 ${r.val?.recall10.toFixed(2)}`);
    expect(r.skills).toBeGreaterThanOrEqual(55);
    expect(tail).toBeLessThan(head);
    expect(statSync(out).size).toBeGreaterThan(2 * 32 * 64 * 4);
    // The states were cached: a second call (resumed, so no new steps) computes none.
    const files = readdirSync(join(dir, "cache"));
    expect(files.length).toBe(1);
    const again = await trainProjections(model, { ...opts, resume: true });
    expect(again.losses.length).toBe(0);

    const p = await Projections.load(out);
    expect(p.dim).toBe(32);
    expect(p.layer).toBe(r.layer);
    expect(p.layer).toBeGreaterThan(0);
    expect(p.layer).toBeLessThan(model.info.nLayer);
    expect(p.trainedBy).toMatch(/gavel train/);
    // the glance's vote chosen on validation, unless asked otherwise (resumed: no new step, the file rewritten)
    expect([p.glanceRowWeights, p.glanceVoteShare]).toEqual(["idf", 0.01]);
    const out2 = join(dir, "proj-paper.gguf");
    await trainProjections(model, { ...opts, out: out2, steps: 2, finetuneSteps: 0, glanceRowWeights: "uniform", glanceVoteShare: 0 });
    const paper = await Projections.load(out2);
    expect([paper.glanceRowWeights, paper.glanceVoteShare]).toEqual(["uniform", 0]);
    const router = await Router.open(model, { projections: out, bankDir: join(dir, "bank"), skillBudget: 192 });
    try {
      const inst = await router.install(mitSkills, { limit: 12 });
      expect(inst.installed.length).toBeGreaterThan(8);
      const res = await router.route("Monitor a GitHub repository for new releases and send a notification");
      // The ruling over the trained projections: installed skills only, each S = g + αL + γV with the
      // file's α and γ, best S first and committed to, g within Δ of the best, at most maxShortlist.
      const installed = new Set(router.list().map((s) => s.id));
      expect(res.abstained).toBe(false);
      expect(res.shortlist.length).toBeGreaterThan(0);
      expect(res.shortlist.length).toBeLessThanOrEqual(p.maxShortlist);
      expect(res.skill).toBe(res.shortlist[0].skill);
      const bestG = Math.max(...res.shortlist.map((c) => c.g));
      for (const [i, c] of res.shortlist.entries()) {
        expect(installed.has(c.skill), c.skill).toBe(true);
        for (const v of [c.g, c.L, c.V, c.S]) expect(Number.isFinite(v)).toBe(true);
        expect(c.L).toBeLessThanOrEqual(0); // a mean log-probability
        expect(c.S).toBeCloseTo(c.g + p.alpha * c.L + p.gamma * c.V, 6);
        expect(c.g).toBeGreaterThanOrEqual(bestG - p.delta - 1e-9);
        if (i > 0) expect(c.S).toBeLessThanOrEqual(res.shortlist[i - 1].S);
      }
    } finally {
      await router.close();
    }
  });
});
