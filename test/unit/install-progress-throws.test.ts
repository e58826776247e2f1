// An install whose onProgress throws: the caller's error ends the install and is what it rejects with;
// the skill that was stored when the callback threw stays installed (and committed), and it is never
// reported as failed too (before, the throw was taken for the skill's own failure: the skill was in
// the report's `installed` and, as SKILL_INVALID "could not install: …", in its `failed`, and the
// callback heard "installed" then "failed" for it while the install went on).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Model, Projections, Router, type InstallProgress } from "../../src/index.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";

const skills = ["alpha", "beta", "gamma"].map((name) => ({ name, description: `The ${name} skill: format ${name} files.`, body: `# ${name}\nSteps to format the ${name} files.` }));

describe("an onProgress that throws", () => {
  let root: string;
  let model: Model;
  let projections: Projections;
  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "gavel-progress-throws-"));
    model = await Model.load(TINY_LLAMA_PATH, { contextSize: 512, threads: 1 });
    projections = await Projections.random(model, { seed: 11, dim: 16 });
  });
  afterAll(async () => {
    await model?.dispose();
    rmSync(root, { recursive: true, force: true });
  });

  it("ends the install with the caller's error; the stored skill stays installed, never also failed", async () => {
    const bankDir = join(root, "bank");
    const router = await Router.open(model, { projections, bankDir, skillBudget: 256 });
    const seen: InstallProgress[] = [];
    const uiBug = new Error("a bug in the caller's progress bar");
    const onProgress = (p: InstallProgress) => {
      seen.push(p);
      if (p.status === "installed" && p.skill === "beta") throw uiBug;
    };
    try {
      const outcome = await router.install(skills, { onProgress, concurrency: 1 }).then((report) => report, (err: unknown) => err);
      expect(outcome).toBe(uiBug);
      // each skill heard of once: alpha and beta installed, nothing after the throw
      expect(seen.map((p) => `${p.skill}:${p.status}`)).toEqual(["alpha:installed", "beta:installed"]);
      expect(router.list().map((s) => s.id).sort()).toEqual(["alpha", "beta"]);
    } finally {
      await router.close();
    }
    const again = await Router.open(model, { projections, bankDir, skillBudget: 256, create: false });
    try {
      expect(again.list().map((s) => s.id).sort()).toEqual(["alpha", "beta"]);
      // the rest installs normally afterwards
      const report = await again.install(skills);
      expect(report.failed).toEqual([]);
      expect(report.unchanged.sort()).toEqual(["alpha", "beta"]);
      expect(report.installed).toEqual(["gamma"]);
    } finally {
      await again.close();
    }
  });
});
