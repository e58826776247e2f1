// `gavel sync`'s plan (src/serve/sync-plan.ts) and `gavel serve --watch`'s sync of a folder
// (src/serve/watch.ts, syncFolders) over a router opened with another skill budget than the one the
// bank's entries were built with: the unchanged skills are updates (installed again, with the router's
// budgets), as `gavel install` rebuilds them (BankEntry.build); a router with the budgets they were
// built with has nothing to do. Tiny test model.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model, Projections, Router, discoverSkills } from "../../src/index.js";
import { applySync, planSync } from "../../src/serve/sync-plan.js";
import { SkillWatcher } from "../../src/serve/watch.js";
import { tinyLlamaPath } from "../fixtures/tiny-llama.js";

describe("planSync over a router of other budgets", () => {
  let root: string;
  let home: string;
  let model: Model;
  let projections: Projections;
  const open = (skillBudget: number, bank = "bank") => Router.open(model, { projections, bankDir: join(root, bank), skillBudget });
  const plan = async (router: Router) => planSync(router, await discoverSkills({ host: "claude-code", home, projectDir: join(root, "project") }));

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "gavel-sync-budgets-"));
    home = join(root, "home");
    mkdirSync(join(root, "project"));
    for (const name of ["lint", "format"]) {
      mkdirSync(join(home, ".claude", "skills", name), { recursive: true });
      writeFileSync(join(home, ".claude", "skills", name, "SKILL.md"), `---\nname: ${name}\ndescription: "Use for ${name} tasks."\n---\n# ${name}\n\nThe ${name} steps, one by one.\n`);
    }
    model = await Model.load(await tinyLlamaPath(), { contextSize: 512, threads: 1 });
    projections = await Projections.random(model, { seed: 7, dim: 16 });
  }, 120_000);

  afterAll(async () => {
    await model?.dispose();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it("updates the skills built with another skill budget, and then has nothing to do", async () => {
    let router = await open(256);
    try {
      const first = await plan(router);
      expect(first.add.map((s) => s.id).sort()).toEqual(["format", "lint"]);
      await applySync(router, first);
      const again = await plan(router);
      expect([again.add, again.update, again.unchanged.sort()]).toEqual([[], [], ["format", "lint"]]);
    } finally {
      await router.close();
    }
    router = await open(200);
    try {
      const rebuilt = await plan(router);
      expect(rebuilt.update.map((s) => s.id).sort()).toEqual(["format", "lint"]);
      expect([rebuilt.add, rebuilt.unchanged, rebuilt.remove, rebuilt.conflicts]).toEqual([[], [], [], []]);
      const report = await applySync(router, rebuilt);
      expect(report?.installed.sort()).toEqual(["format", "lint"]);
      expect(report?.unchanged).toEqual([]);
      const after = await plan(router);
      expect([after.update, after.unchanged.sort()]).toEqual([[], ["format", "lint"]]);
    } finally {
      await router.close();
    }
  }, 120_000);

  it("serve --watch's sync of a folder installs again a skill built with another skill budget, and then has nothing to do", async () => {
    const folder = join(home, ".claude", "skills", "lint");
    const first = await open(256, "bank-watch");
    try {
      expect((await first.install(folder)).installed).toEqual(["lint"]);
    } finally {
      await first.close();
    }
    for (const [budget, updated] of [[180, ["lint"]], [180, []], [256, ["lint"]]] as const) {
      const router = await open(budget, "bank-watch");
      const watcher = new SkillWatcher(router, { debounceMs: 1 << 30, maxWaitMs: 1 << 30, discover: { home, projectDir: join(root, "project") } });
      try {
        const done = await watcher.syncFolders([folder]);
        expect([done.updated, done.installed, done.uninstalled, done.kept, done.failed], `skill budget ${budget}`).toEqual([updated, [], [], [], []]);
      } finally {
        await watcher.close();
        await router.close();
      }
    }
  }, 120_000);
});
