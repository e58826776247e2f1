// `gavel sync`'s plan (src/serve/sync-plan.ts) across a Claude Code plugin update, over a router of the
// tiny test model: the plugin's version folder 1.0.0 replaced by 1.1.0 (1.0.0 deleted, the registry
// pointing at 1.1.0, one skill dropped). The dropped skill is uninstalled, the kept one's recorded
// source moves to the new version folder (its content unchanged), and a second sync has nothing to do.
// A plugin installed from a folder that is not one of its versions (its own working copy) has no
// other versions: a skill installed by hand from a folder beside it is not the plugin's, and stays.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model, Projections, Router, discoverSkills } from "../../src/index.js";
import { locateSkill } from "../../src/route/index.js";
import { applySync, planSync } from "../../src/serve/sync-plan.js";
import { tinyLlamaPath } from "../fixtures/tiny-llama.js";

function writeSkill(folder: string, name: string): string {
  mkdirSync(join(folder, name), { recursive: true });
  const file = join(folder, name, "SKILL.md");
  writeFileSync(file, `---\nname: ${name}\ndescription: "Use for ${name} tasks."\n---\n# ${name}\n\nThe ${name} steps, one by one.\n`);
  return file;
}

describe("planSync across a Claude Code plugin update", () => {
  let root: string;
  let home: string;
  let model: Model;
  let router: Router;
  let projections: Projections;
  const pluginDir = (version: string) => join(home, ".claude", "plugins", "cache", "acme", "review", version);
  /** The plugin at `version` with these skills, recorded in the registry; the other versions deleted. */
  function installPlugin(version: string, skills: string[]): void {
    rmSync(join(pluginDir(version), ".."), { recursive: true, force: true });
    for (const s of skills) writeSkill(join(pluginDir(version), "skills"), s);
    const registry = { version: 2, plugins: { "review@acme": [{ scope: "user", installPath: pluginDir(version), version }] } };
    writeFileSync(join(home, ".claude", "plugins", "installed_plugins.json"), JSON.stringify(registry));
  }
  /** The registry holding just this plugin, installed from `installPath` at `version`. */
  function register(id: string, installPath: string, version: string): void {
    const registry = { version: 2, plugins: { [id]: [{ scope: "user", installPath, version }] } };
    writeFileSync(join(home, ".claude", "plugins", "installed_plugins.json"), JSON.stringify(registry));
  }
  const plan = async () => planSync(router, await discoverSkills({ host: "claude-code", home, projectDir: join(root, "project") }));

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "gavel-sync-plugin-"));
    home = join(root, "home");
    mkdirSync(join(home, ".claude", "plugins"), { recursive: true });
    mkdirSync(join(root, "project"));
    model = await Model.load(await tinyLlamaPath(), { contextSize: 512, threads: 1 });
    projections = await Projections.random(model, { seed: 7, dim: 16 });
    router = await Router.open(model, { projections, bankDir: join(root, "bank"), skillBudget: 256 });
  }, 120_000);

  afterAll(async () => {
    await router?.close();
    await model?.dispose();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it("uninstalls the skill the new version dropped and records the kept one's new source", async () => {
    installPlugin("1.0.0", ["lint", "format"]);
    const first = await plan();
    expect(first.add.map((s) => s.id).sort()).toEqual(["review:format", "review:lint"]);
    await applySync(router, first);

    installPlugin("1.1.0", ["lint"]);
    const update = await plan();
    expect(update.update.map((s) => s.id)).toEqual(["review:lint"]);
    expect(update.remove.map((s) => s.id)).toEqual(["review:format"]);
    expect(update.unchanged).toEqual([]);
    expect(update.conflicts).toEqual([]);
    await applySync(router, update);

    const lint = router.list().find((s) => s.id === "review:lint")!;
    expect(lint.source).toBe(join(pluginDir("1.1.0"), "skills", "lint", "SKILL.md"));
    expect(locateSkill(lint.source, router.bankDir).path).toBe(lint.source);
    expect(router.list().map((s) => s.id)).toEqual(["review:lint"]);
    // committed: the bank opened again records the new source
    await router.close();
    router = await Router.open(model, { projections, bankDir: join(root, "bank"), skillBudget: 256, create: false });
    expect(router.list().map((s) => [s.id, s.source])).toEqual([["review:lint", lint.source]]);
    const again = await plan();
    expect([again.add, again.update, again.remove, again.conflicts]).toEqual([[], [], [], []]);
    expect(again.unchanged).toEqual(["review:lint"]);
  }, 120_000);

  it("a plugin installed from a folder that is not a version folder: skills from the folders beside it are left alone", async () => {
    const dev = join(root, "dev");
    writeSkill(join(dev, "my-plugin", "skills"), "check");
    const foo = writeSkill(join(dev, "other-project", "skills"), "foo");
    expect((await router.install(foo)).installed).toEqual(["foo"]);
    register("my-plugin@local", join(dev, "my-plugin"), "0.1.0");
    const p = await plan();
    expect(p.add.map((s) => s.id)).toEqual(["my-plugin:check"]);
    // foo (from dev/other-project) and review:lint (the cache plugin, no longer registered) are not this plugin's
    expect(p.remove).toEqual([]);
    expect(p.conflicts).toEqual([]);
    await applySync(router, p);
    expect(router.list().map((s) => s.id).sort()).toEqual(["foo", "my-plugin:check", "review:lint"]);
  }, 120_000);

  it("a plugin whose install path is named by its version, outside the cache: its other versions' skills are its own", async () => {
    const tools = join(root, "opt", "tools");
    writeSkill(join(tools, "1.0.0", "skills"), "old");
    register("tools@local", join(tools, "1.0.0"), "1.0.0");
    const first = await plan();
    expect(first.add.map((s) => s.id)).toEqual(["tools:old"]);
    await applySync(router, first);
    rmSync(join(tools, "1.0.0"), { recursive: true });
    writeSkill(join(tools, "2.0.0", "skills"), "fresh");
    register("tools@local", join(tools, "2.0.0"), "2.0.0");
    const update = await plan();
    expect(update.add.map((s) => s.id)).toEqual(["tools:fresh"]);
    expect(update.remove.map((s) => s.id)).toEqual(["tools:old"]); // the old version's, gone with its folder
    expect(update.conflicts).toEqual([]);
  }, 120_000);
});
