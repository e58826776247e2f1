// A sync's writes against another client's write of the same skill id in between, as a resident router
// (`gavel serve`) takes them: each write of a sync (src/serve/sync-plan.ts's applySync, the watcher's
// syncFolders in src/serve/watch.ts) is done only over what the sync read installed, checked in its own
// turn of the router's write queue. Another client's install of the same id, queued after the sync read
// the bank and before its writes, is left alone: neither uninstalled nor installed over, and reported.
// The other install is called right after the sync read the bank (no timing: the router's write queue
// orders it before the sync's own writes).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model, Projections, Router, discoverSkills } from "../../src/index.js";
import { applySync, planSync } from "../../src/serve/sync-plan.js";
import { SkillWatcher } from "../../src/serve/watch.js";
import { tinyLlamaPath } from "../fixtures/tiny-llama.js";

function writeSkill(folder: string, name: string, what: string): string {
  mkdirSync(join(folder, name), { recursive: true });
  const file = join(folder, name, "SKILL.md");
  writeFileSync(file, `---\nname: ${name}\ndescription: "Use for ${name} tasks: ${what}."\n---\n# ${name}\n\nThe ${name} steps for ${what}.\n`);
  return file;
}

describe("a sync's writes against another client's install of the same id", () => {
  let root: string;
  let n = 0;
  let model: Model;
  let projections: Projections;
  let router: Router;
  /** A fresh project, home and folder of the user's own skills (outside the host's folders). */
  let project: string;
  let home: string;
  let other: string;
  const hostSkills = () => join(project, ".claude", "skills");
  const sourceOf = (id: string) => router.installed(id)?.source;
  const sync = async () => discoverSkills({ host: "claude-code", home, projectDir: project });

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "gavel-sync-race-"));
    model = await Model.load(await tinyLlamaPath(), { contextSize: 512, threads: 1 });
    projections = await Projections.random(model, { seed: 11, dim: 16 });
  }, 120_000);

  beforeEach(async () => {
    await router?.close();
    const dir = join(root, String(n++));
    project = join(dir, "project");
    home = join(dir, "home");
    other = join(dir, "other");
    mkdirSync(hostSkills(), { recursive: true });
    mkdirSync(home);
    router = await Router.open(model, { projections, bankDir: join(dir, "bank"), skillBudget: 256 });
  });

  afterAll(async () => {
    await router?.close();
    await model?.dispose();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it("a planned removal does not uninstall the id installed from elsewhere since the plan", async () => {
    writeSkill(hostSkills(), "victim", "the project's copy");
    expect((await router.install(hostSkills())).installed).toEqual(["victim"]);
    rmSync(join(hostSkills(), "victim"), { recursive: true });
    const plan = await planSync(router, await sync());
    expect(plan.remove.map((r) => r.id)).toEqual(["victim"]);
    const mine = writeSkill(other, "victim", "the user's other copy");
    expect((await router.install(join(other, "victim"))).installed).toEqual(["victim"]);
    await applySync(router, plan);
    expect(sourceOf("victim")).toBe(mine);
    expect(plan.remove).toEqual([]);
    expect(plan.conflicts).toEqual([{ id: "victim", source: expect.stringContaining(join(project, ".claude")), installed: mine }]);
  }, 120_000);

  it("a planned add does not install over the id installed from elsewhere since the plan", async () => {
    const host = writeSkill(hostSkills(), "newcomer", "the project's copy");
    const plan = await planSync(router, await sync());
    expect(plan.add.map((s) => s.id)).toEqual(["newcomer"]);
    const mine = writeSkill(other, "newcomer", "the user's other copy");
    await router.install(join(other, "newcomer"));
    const report = await applySync(router, plan);
    expect(sourceOf("newcomer")).toBe(mine);
    expect(report?.installed ?? []).toEqual([]);
    expect(plan.add).toEqual([]);
    expect(plan.conflicts).toEqual([{ id: "newcomer", source: host, installed: mine }]);
  }, 120_000);

  it("a planned update does not install over the id installed from elsewhere since the plan", async () => {
    const host = writeSkill(hostSkills(), "edited", "the first text");
    await router.install(hostSkills());
    writeSkill(hostSkills(), "edited", "the second text");
    const plan = await planSync(router, await sync());
    expect(plan.update.map((s) => s.id)).toEqual(["edited"]);
    const mine = writeSkill(other, "edited", "the user's other copy");
    await router.install(join(other, "edited"));
    await applySync(router, plan);
    expect(sourceOf("edited")).toBe(mine);
    expect(plan.conflicts).toEqual([{ id: "edited", source: host, installed: mine }]);
  }, 120_000);

  it("the watcher neither uninstalls nor installs over an id installed from elsewhere since it read the bank", async () => {
    writeSkill(hostSkills(), "victim", "the project's copy");
    await router.install(hostSkills());
    const watcher = new SkillWatcher(router, { debounceMs: 1 << 30, maxWaitMs: 1 << 30, discover: { home, projectDir: project } });
    try {
      rmSync(join(hostSkills(), "victim"), { recursive: true });
      writeSkill(hostSkills(), "newcomer", "the project's copy");
      const mine = writeSkill(other, "victim", "the user's other copy");
      const theirs = writeSkill(other, "newcomer", "the user's other copy");
      // syncFolders reads the bank before its first await; these installs are queued before its writes
      const done = watcher.syncFolders([join(hostSkills(), "victim"), join(hostSkills(), "newcomer")]);
      await router.install(other);
      const out = await done;
      expect(sourceOf("victim")).toBe(mine);
      expect(sourceOf("newcomer")).toBe(theirs);
      expect(out.uninstalled).toEqual([]);
      expect(out.installed).toEqual([]);
      expect(out.kept.map((k) => k.id)).toEqual(["newcomer", "victim"]);
      expect(out.kept[1].reason).toMatch(/installed again meanwhile .*not uninstalled/);
    } finally {
      await watcher.close();
    }
  }, 120_000);
});
