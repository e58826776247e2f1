// The resident router's skill folder watcher (src/serve/watch.ts), driven directly over a router of the
// tiny test model: a folder that becomes a skill only after it was made, a SKILL.md removed and copied
// back, the whole skills folder deleted and restored, a skill folder renamed (and its name's case
// changed), and a new skill in a Claude Code plugin's folder (its plugin:skill id). Each step waits
// for the bank to show it (polled with a generous deadline), never for a fixed time. Also: a symbolic
// link to a file in a skills folder (as dotfile managers make) is not watched and starts no endless
// syncs; a sync of many new plugin skills reads the plugin registry once; past the cap on watched
// folders, the roots and skills' folders take the places of other folders, and the line saying so
// comes again after all have fitted once more; a watcher syncs at start what changed while none ran.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { cpSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { Model, Projections, Router, discoverSkills } from "../../src/index.js";
import { SkillWatcher, type WatchSync } from "../../src/serve/watch.js";
import { tinyLlamaPath } from "../fixtures/tiny-llama.js";
import { until } from "../helpers/serve-process.js";

/** Every file the plugin registry and settings are read from (the synchronous bounded reader's calls). */
const syncReads = vi.hoisted(() => [] as string[]);
vi.mock("../../src/util/regular-file.js", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../src/util/regular-file.js")>();
  return { ...real, readRegularFileSync: (file: string, max: number) => (syncReads.push(file), real.readRegularFileSync(file, max)) };
});

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
  let projections: Projections;
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
    projections = await Projections.random(model, { seed: 5, dim: 16 });
    router = await Router.open(model, { projections, bankDir: join(root, "bank"), skillBudget: 256 });
    expect((await router.install(skills)).installed.sort()).toEqual(["alpha", "beta", "dockerfile"]);
    watcher = new SkillWatcher(router, { debounceMs: 50, discover: { home, projectDir: root }, report: (s) => syncs.push(s) });
    await watcher.started;
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
    await watcher.refreshAhead(); // as the server does after an install
    const file = writeSkill(join(plugin, "skills"), "bash-scripting");
    await bankShows((s) => s.get("review:bash-scripting") === file);
    await watcher.idle();
    expect(sources().has("bash-scripting")).toBe(false);
  }, 120_000);

  it("a sync of many new skills in a plugin's skills/ reads the plugin registry once", async () => {
    await watcher.idle();
    const plugin = join(home, ".claude", "plugins", "cache", "acme", "extra", "1.0.0");
    const review = join(home, ".claude", "plugins", "cache", "acme", "review", "1.0.0");
    const names = ["one", "two", "three", "four"];
    for (const n of names) writeSkill(join(plugin, "skills"), n);
    const plugins = { "review@acme": [{ scope: "user", installPath: review, version: "1.0.0" }], "extra@acme": [{ scope: "user", installPath: plugin, version: "1.0.0" }] };
    writeFileSync(join(home, ".claude", "plugins", "installed_plugins.json"), JSON.stringify({ version: 2, plugins }));
    syncReads.length = 0;
    const done = await watcher.syncFolders(names.map((n) => join(plugin, "skills", n)));
    expect(done.installed.sort()).toEqual(["extra:four", "extra:one", "extra:three", "extra:two"]);
    expect(syncReads.filter((f) => basename(f) === "installed_plugins.json")).toHaveLength(1);
  }, 120_000);

  it("a symbolic link to a file in a skills folder is not watched, and the watcher goes idle", async () => {
    await watcher.idle();
    writeFileSync(join(root, "notes.txt"), "notes");
    mkdirSync(join(root, "elsewhere", "shared"), { recursive: true });
    symlinkSync(join(root, "notes.txt"), join(skills, "README.md"));
    symlinkSync(join(root, "elsewhere", "shared"), join(skills, "shared"));
    // a link to a folder is watched, as any folder of a root
    await until(() => watcher.folders.includes(join(skills, "shared")) || undefined, 60_000);
    writeFileSync(join(skills, "alpha", "notes.txt"), "an event in a watched folder");
    // before, the link's watch was closed and made again after every sync, each time starting another
    await watcher.idle();
    expect(watcher.folders).not.toContain(join(skills, "README.md"));
  }, 120_000);
});

describe("SkillWatcher over a bank of its own: the cap on watched folders, the sync at start", () => {
  let root: string;
  let model: Model;
  let router: Router;
  let watcher: SkillWatcher | undefined;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "gavel-watch-cap-"));
    model = await Model.load(await tinyLlamaPath(), { contextSize: 512, threads: 1 });
    const projections = await Projections.random(model, { seed: 6, dim: 16 });
    router = await Router.open(model, { projections, bankDir: join(root, "bank"), skillBudget: 256 });
  }, 120_000);

  afterAll(async () => {
    await watcher?.close();
    await router?.close();
    await model?.dispose();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it("roots and skills' folders take the places of other folders; the line comes again after all fitted", async () => {
    const a = join(root, "a-skills");
    const b = join(root, "b-skills");
    const first = writeSkill(a, "first");
    for (const n of ["notes", "drafts"]) mkdirSync(join(a, n));
    const second = writeSkill(b, "second");
    await router.install(first);
    const warnings: string[] = [];
    watcher = new SkillWatcher(router, { maxFolders: 4, warn: (t) => warnings.push(t), discover: { home: join(root, "home"), projectDir: root } });
    expect(watcher.folders).toEqual([]); // watched once started: read off the thread, then set up
    await watcher.started;
    expect(watcher.folders.sort()).toEqual([a, join(a, "drafts"), join(a, "first"), join(a, "notes")]);
    expect(warnings).toEqual([]);

    await router.install(second);
    watcher.refresh();
    expect(watcher.folders.sort()).toEqual([a, join(a, "first"), b, join(b, "second")]);
    expect(warnings).toHaveLength(1);

    await router.uninstall("second");
    watcher.refresh();
    expect(watcher.folders.sort()).toEqual([a, join(a, "drafts"), join(a, "first"), join(a, "notes")]);
    await router.install(second);
    watcher.refresh();
    expect(watcher.folders.sort()).toEqual([a, join(a, "first"), b, join(b, "second")]);
    expect(warnings).toHaveLength(2);
    expect(warnings[1]).toMatch(/watching 4 folders, the most it watches/);
  }, 120_000);

  it("starts watching a slice of folders at a time, giving the event loop back between; a close during the start stops it", async () => {
    const c = join(root, "c-skills");
    const third = writeSkill(c, "third");
    for (let i = 0; i < 700; i++) mkdirSync(join(c, `folder-${i}`)); // a root's other folders are watched too
    await router.install(third);
    const w = new SkillWatcher(router, { debounceMs: 1 << 30, maxWaitMs: 1 << 30, discover: { home: join(root, "home"), projectDir: root } });
    try {
      expect(w.folders).toEqual([]); // the construction reads nothing on the thread
      const seen: number[] = [];
      let done = false;
      const poll = () => {
        seen.push(w.folders.length);
        if (!done) setImmediate(poll);
      };
      setImmediate(poll);
      await w.started;
      done = true;
      expect(w.folders).toEqual(expect.arrayContaining([c, join(c, "third"), join(c, "folder-0"), join(c, "folder-699")]));
      const total = w.folders.length;
      expect(total).toBeGreaterThan(700);
      // turns of the event loop ran while some but not all of the folders were watched
      expect(seen.some((n) => n > 0 && n < total)).toBe(true);
    } finally {
      await w.close();
      await router.uninstall("third");
    }
    const early = new SkillWatcher(router, { debounceMs: 1 << 30, maxWaitMs: 1 << 30, discover: { home: join(root, "home"), projectDir: root } });
    await early.close();
    await early.started;
    expect(early.folders).toEqual([]);
    await early.idle();
  }, 180_000);

  it("syncs what changed while nothing watched: an edit, a deleted skill, a new one, entries built with other budgets; nothing when nothing did", async () => {
    const skills = join(root, "start-skills");
    const home = join(root, "start-home");
    mkdirSync(home);
    let router: Router | undefined;
    let watcher: SkillWatcher | undefined;
    try {
      for (const n of ["alpha", "beta", "gamma"]) writeSkill(skills, n);
      const projections = await Projections.random(model, { seed: 8, dim: 16 });
      const bankDir = join(root, "start-bank");
      const open = (skillBudget: number) => Router.open(model, { projections, bankDir, skillBudget });
      const start = (syncs: WatchSync[]) => new SkillWatcher(router!, { debounceMs: 50, discover: { home, projectDir: root }, report: (s) => syncs.push(s) });
      const described = () => new Map(router!.list().map((s) => [s.id, s.description]));
      router = await open(256);
      expect((await router.install(skills)).installed.sort()).toEqual(["alpha", "beta", "gamma"]);

      // nothing changed: the first sync reads every folder and reports nothing
      const quiet: WatchSync[] = [];
      watcher = start(quiet);
      await until(() => watcher!.folders.includes(join(skills, "alpha")) || undefined, 60_000);
      await watcher.idle();
      expect(quiet).toEqual([]);
      await watcher.close();

      // changed while stopped
      writeSkill(skills, "alpha", "the edited alpha work");
      rmSync(join(skills, "beta", "SKILL.md"));
      writeSkill(skills, "delta");
      const syncs: WatchSync[] = [];
      watcher = start(syncs);
      await until(() => { const d = described(); return (d.get("alpha")?.includes("edited") && !d.has("beta") && d.has("delta")) || undefined; }, 60_000);
      await watcher.idle();
      expect(syncs.flatMap((s) => s.updated).sort()).toEqual(["alpha"]);
      expect(syncs.flatMap((s) => s.uninstalled)).toEqual(["beta"]);
      expect(syncs.flatMap((s) => s.installed)).toEqual(["delta"]);
      await watcher.close();

      // the router opened with another skill budget: every entry is built again at start
      await router.close();
      router = await open(128);
      const rebuilt: WatchSync[] = [];
      watcher = start(rebuilt);
      await until(() => (rebuilt.flatMap((s) => s.updated).length >= 3 ? true : undefined), 60_000);
      await watcher.idle();
      expect(rebuilt.flatMap((s) => s.updated).sort()).toEqual(["alpha", "delta", "gamma"]);
      expect(rebuilt.flatMap((s) => [...s.installed, ...s.uninstalled])).toEqual([]);
    } finally {
      await watcher?.close();
      await router?.close();
    }
  }, 180_000);
});
