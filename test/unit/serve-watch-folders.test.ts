// The resident router's skill folder watcher (src/serve/watch.ts), driven directly over a router of the
// tiny test model: a folder that becomes a skill only after it was made, a SKILL.md removed and copied
// back, the whole skills folder deleted and restored, a skill folder renamed (and its name's case
// changed), and a new skill in a Claude Code plugin's folder (its plugin:skill id). Each step waits
// for the bank to show it (polled with a generous deadline), never for a fixed time.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cpSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model, Projections, Router, discoverSkills } from "../../src/index.js";
import { SkillWatcher, type WatchSync } from "../../src/serve/watch.js";
import { tinyLlamaPath } from "../fixtures/tiny-llama.js";
import { until } from "../helpers/serve-process.js";

const skillText = (name: string, what: string) =>
  `---\nname: ${name}\ndescription: ${JSON.stringify(`Use for ${name} tasks: ${what}.`)}\n---\n# ${name}\n\nSteps for ${what}, one by one.\n`;

function writeSkill(folder: string, name: string, what = `the ${name} work`): string {
  mkdirSync(join(folder, name), { recursive: true });
  writeFileSync(join(folder, name, "SKILL.md"), skillText(name, what));
  return join(folder, name, "SKILL.md");
}

describe("SkillWatcher", () => {
  let root: string;
  let skills: string;
  let home: string;
  let model: Model;
  let router: Router;
  let watcher: SkillWatcher;
  const syncs: WatchSync[] = [];
  const sources = () => new Map(router.list().map((s) => [s.id, s.source]));
  /** Waits until `check` holds of the installed skills' sources (by id). */
  const bankShows = (check: (s: Map<string, string>) => boolean) => until(() => check(sources()) || undefined, 60_000);

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "gavel-watch-folders-"));
    skills = join(root, "skills");
    home = join(root, "home");
    mkdirSync(home);
    for (const n of ["alpha", "beta", "dockerfile"]) writeSkill(skills, n);
    model = await Model.load(await tinyLlamaPath(), { contextSize: 512, threads: 1 });
    const projections = await Projections.random(model, { seed: 5, dim: 16 });
    router = await Router.open(model, { projections, bankDir: join(root, "bank"), skillBudget: 256 });
    expect((await router.install(skills)).installed.sort()).toEqual(["alpha", "beta", "dockerfile"]);
    watcher = new SkillWatcher(router, { debounceMs: 50, discover: { home, projectDir: root }, report: (s) => syncs.push(s) });
  }, 120_000);

  afterAll(async () => {
    await watcher?.close();
    await router?.close();
    await model?.dispose();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it("a folder made first and given its SKILL.md later is installed", async () => {
    const gamma = join(skills, "gamma");
    mkdirSync(gamma);
    // the folder's own sync has run (it is watched now), and only then its SKILL.md is written
    await until(() => watcher.folders.includes(gamma) || undefined, 60_000);
    await watcher.idle();
    writeSkill(skills, "gamma");
    await bankShows((s) => s.get("gamma") === join(gamma, "SKILL.md"));
  }, 120_000);

  it("a SKILL.md removed is uninstalled, and installed again when copied back", async () => {
    const file = join(skills, "beta", "SKILL.md");
    rmSync(file);
    await bankShows((s) => !s.has("beta"));
    await watcher.idle();
    writeSkill(skills, "beta");
    await bankShows((s) => s.get("beta") === file);
  }, 120_000);

  it("the skills folder deleted uninstalls them all; restored, they are installed again and watched", async () => {
    const backup = join(root, "skills.bak");
    cpSync(skills, backup, { recursive: true });
    rmSync(skills, { recursive: true });
    await bankShows((s) => s.size === 0);
    await watcher.idle();
    cpSync(backup, skills, { recursive: true });
    await bankShows((s) => ["alpha", "beta", "dockerfile", "gamma"].every((id) => s.get(id) === join(skills, id, "SKILL.md")));
    // watched again: an edit is seen
    writeFileSync(join(skills, "alpha", "SKILL.md"), skillText("alpha", "the edited alpha work"));
    await until(async () => ((await router.get("alpha")).description.includes("edited alpha") ? true : undefined), 60_000);
  }, 120_000);

  it("a skill folder renamed keeps its skill installed, from the new folder; a change of case too", async () => {
    await watcher.idle();
    syncs.length = 0;
    renameSync(join(skills, "dockerfile"), join(skills, "docker-tools"));
    await bankShows((s) => s.get("dockerfile") === join(skills, "docker-tools", "SKILL.md"));
    await watcher.idle();
    renameSync(join(skills, "docker-tools"), join(skills, "Docker-Tools"));
    await bankShows((s) => s.get("dockerfile") === join(skills, "Docker-Tools", "SKILL.md"));
    await watcher.idle();
    expect(sources().has("dockerfile")).toBe(true);
    expect(syncs.flatMap((s) => s.kept)).toEqual([]);
    expect(syncs.flatMap((s) => s.uninstalled)).toEqual([]);
  }, 120_000);

  it("a new skill folder in a Claude Code plugin's skills/ is installed under the plugin's id, as gavel sync installs it", async () => {
    const plugin = join(home, ".claude", "plugins", "cache", "acme", "review", "1.0.0");
    writeSkill(join(plugin, "skills"), "lint");
    writeFileSync(join(home, ".claude", "plugins", "installed_plugins.json"), JSON.stringify({ version: 2, plugins: { "review@acme": [{ scope: "user", installPath: plugin, version: "1.0.0" }] } }));
    const found = await discoverSkills({ host: "claude-code", home, projectDir: root });
    expect((await router.install(found.skills)).installed).toEqual(["review:lint"]);
    watcher.refresh(); // as the server does after an install
    const file = writeSkill(join(plugin, "skills"), "bash-scripting");
    await bankShows((s) => s.get("review:bash-scripting") === file);
    await watcher.idle();
    expect(sources().has("bash-scripting")).toBe(false);
  }, 120_000);
});
