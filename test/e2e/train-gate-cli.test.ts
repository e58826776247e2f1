// gavel train-gate end to end on a tiny set (stories260K, random projections, 8 gold skills
// installed): trajectories saved and reproducible, the gate file written and loadable for the same
// model and projections, held-out figures reported; typed refusals for test batches and bad flags.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model, Projections, Router } from "../../src/index.js";
import { Gate } from "../../src/route/gate.js";
import { repoRoot, sharedDir, storiesPath, needsShared, SHARED } from "../helpers/paths.js";
import { runNode } from "../helpers/run.js";

const NO_SHARED = needsShared("stories260K and SWE-Skills-Bench to train a gate", SHARED.stories, SHARED.bench);

const cli = join(repoRoot, "dist", "cli", "gavel.js");
const bench = join(sharedDir, "data", "swe-skills-bench");
const gavel = (...args: string[]) => runNode([cli, ...args], { env: { ...process.env, GAVEL_MODEL: "", GAVEL_PROJECTIONS: "" } });

describe.skipIf(NO_SHARED)("gavel train-gate", () => {
  let dir: string;
  let common: string[];
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "gavel-train-gate-"));
    const proj = join(dir, "p.gguf");
    common = ["--model", storiesPath, "--projections", proj, "--bank", join(dir, "bank"), "--context", "4096", "--skill-budget", "128", "--threads", "1"];
    const model = await Model.load(storiesPath, { contextSize: 4096, threads: 1 });
    try {
      const p = await Projections.random(model, { seed: 11, dim: 32 });
      await p.save(proj);
      const router = await Router.open(model, { projections: p, bankDir: join(dir, "bank"), skillBudget: 128 });
      await router.install(join(bench, "skills.jsonl"), { limit: 8 });
      await router.close();
    } finally {
      await model.dispose();
    }
  }, 600_000);
  afterAll(() => void (dir && rmSync(dir, { recursive: true, force: true })));

  const tiny = ["--tasks", join(bench, "tasks.jsonl"), "--batches", "1-2", "--max-tasks", "4", "--negatives", "4", "--max-task-chars", "120", "--seed", "5", "--held-out", "0.5"];

  it("trains, writes a loadable gate, reports held-out figures; the trajectories are reproducible", async () => {
    const out = join(dir, "gate.json");
    const traj = join(dir, "t.jsonl");
    const r = await gavel("train-gate", ...tiny, "--out", out, "--save-trajectories", traj, "--state-layer", "final", "--json", ...common);
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(/trajectories: 8 \(4 need a skill\)/);
    expect(r.err).toMatch(/8\/8 \(100%\)/); // progress
    const report = JSON.parse(r.out);
    expect(report.trajectories.train + report.trajectories.calibration + report.trajectories.held + report.trajectories.skipped).toBe(8);
    expect(report.trajectories.held).toBeGreaterThan(0);
    expect(report.stateLayer).toBe(4);
    expect(report.rows.positives).toBeGreaterThan(0);
    expect(report.held.n).toBeGreaterThan(0);
    expect(report.firing.positives + report.firing.negatives).toBe(report.trajectories.held);
    const model = await Model.load(storiesPath, { contextSize: 4096, threads: 1 });
    try {
      const router = await Router.open(model, { projections: join(dir, "p.gguf"), bankDir: join(dir, "bank"), skillBudget: 128, readOnly: true });
      const gate = await Gate.load(out, { router });
      expect(gate.info?.stateLayer).toBe(4);
      expect(gate.info?.librarySize).toBe(8);
      expect(gate.stateDim).toBe(64);
      await router.close();
    } finally {
      await model.dispose();
    }
    // the same flags build the same trajectories, without a model
    const again = await gavel("train-gate", ...tiny, "--trajectories-only", "--save-trajectories", join(dir, "t2.jsonl"));
    expect(again.code, again.err).toBe(0);
    expect(readFileSync(join(dir, "t2.jsonl"), "utf8")).toBe(readFileSync(traj, "utf8"));
    const lines = readFileSync(traj, "utf8").trim().split("\n").map((l) => JSON.parse(l));
    expect(lines.filter((t) => t.needsSkill).every((t) => t.batch >= 1 && t.batch <= 2)).toBe(true);
  }, 600_000);

  it("refuses test batches, bad flags, and a missing --out", async () => {
    const test = await gavel("train-gate", "--tasks", join(bench, "tasks.jsonl"), "--batches", "5-6", "--out", join(dir, "x.json"), ...common);
    expect(test.code).toBe(1);
    expect(test.err).toMatch(/kept for testing.*\[INVALID_ARGUMENT\]/);
    const bad = await gavel("train-gate", ...tiny, "--out", join(dir, "x.json"), "--state-layer", "99", ...common);
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/--state-layer.*\[INVALID_ARGUMENT\]/);
    expect((await gavel("train-gate", "--tasks", join(bench, "tasks.jsonl"))).code).toBe(2);
  }, 600_000);
});
