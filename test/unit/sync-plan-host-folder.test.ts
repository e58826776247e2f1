// `gavel sync`'s plan (src/serve/sync-plan.ts) over a host folder that reads oddly, over a router of
// the tiny test model: a stray SKILL.md at the top of ~/.claude/skills (never a skill: the skills
// beside it are still read, so none is uninstalled), and a skill folder that cannot be read (an
// injected EACCES or EIO on its listing: a failure at its SKILL.md, so the installed skill is kept,
// never uninstalled as deleted on disk).
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model, Projections, Router, discoverSkills, loadSkills } from "../../src/index.js";
import { applySync, planSync } from "../../src/serve/sync-plan.js";
import { tinyLlamaPath } from "../fixtures/tiny-llama.js";

/** Listing a folder in `dirs` fails with its error code. */
const fsState = vi.hoisted(() => ({ dirs: new Map<string, string>() }));

vi.mock("node:fs/promises", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs/promises")>();
  const readdir = ((...a: Parameters<typeof real.readdir>) => {
    const code = fsState.dirs.get(String(a[0]));
    if (code !== undefined) return Promise.reject(Object.assign(new Error(`${code}: cannot read, scandir '${String(a[0])}'`), { code, syscall: "scandir" }));
    return real.readdir(...a);
  }) as typeof real.readdir;
  return { ...real, readdir, default: { ...real, readdir } };
});

function writeSkill(folder: string, name: string): string {
  mkdirSync(join(folder, name), { recursive: true });
  const file = join(folder, name, "SKILL.md");
  writeFileSync(file, `---\nname: ${name}\ndescription: "Use for ${name} tasks."\n---\n# ${name}\n\nThe ${name} steps, one by one.\n`);
  return file;
}

describe("planSync over a host folder that reads oddly", () => {
  let root: string;
  let home: string;
  let skills: string;
  let model: Model;
  let router: Router;
  const plan = async () => planSync(router, await discoverSkills({ host: "claude-code", home, projectDir: join(root, "project"), managedDir: join(root, "managed") }));

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "gavel-sync-host-"));
    home = join(root, "home");
    skills = join(home, ".claude", "skills");
    mkdirSync(join(root, "project"));
    writeSkill(skills, "alpha");
    writeSkill(skills, "beta");
    model = await Model.load(await tinyLlamaPath(), { contextSize: 512, threads: 1 });
    const projections = await Projections.random(model, { seed: 7, dim: 16 });
    router = await Router.open(model, { projections, bankDir: join(root, "bank"), skillBudget: 256 });
    await applySync(router, await plan());
  }, 120_000);

  afterAll(async () => {
    await router?.close();
    await model?.dispose();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it("a stray SKILL.md at the top of the folder uninstalls nothing", async () => {
    expect(router.list().map((s) => s.id).sort()).toEqual(["alpha", "beta"]);
    writeFileSync(join(skills, "SKILL.md"), "---\nname: stray\ndescription: Not in a folder of its own.\n---\nbody\n");
    try {
      const p = await plan();
      expect(p).toMatchObject({ add: [], update: [], remove: [], kept: [] });
      expect(p.unchanged.sort()).toEqual(["alpha", "beta"]);
    } finally {
      rmSync(join(skills, "SKILL.md"));
    }
  });

  it.each(["EACCES", "EIO"])("a skill folder whose listing fails (%s) is kept installed, reported at its SKILL.md", async (code) => {
    fsState.dirs.set(join(skills, "beta"), code);
    try {
      const loaded = await loadSkills(skills);
      expect(loaded.skills.map((s) => s.name)).toEqual(["alpha"]);
      expect(loaded.failed).toEqual([
        { where: join(skills, "beta", "SKILL.md"), error: expect.objectContaining({ code: "SKILL_INVALID", message: expect.stringContaining(`its folder cannot be read: ${code}`) }) },
      ]);
      const p = await plan();
      expect(p.remove).toEqual([]);
      expect(p.kept).toEqual([{ id: "beta", source: join(skills, "beta", "SKILL.md"), reason: expect.stringContaining("its folder cannot be read") }]);
      expect(p.unchanged).toEqual(["alpha"]);
    } finally {
      fsState.dirs.clear();
    }
  });

  it.each(["EACCES", "EIO"])("a host folder that exists but cannot be listed (%s) is a failure, and its skills are kept installed", async (code) => {
    fsState.dirs.set(skills, code);
    try {
      const found = await discoverSkills({ host: "claude-code", home, projectDir: join(root, "project"), managedDir: join(root, "managed") });
      expect(found.failed).toEqual([{ where: skills, error: expect.objectContaining({ code: "SKILL_INVALID", message: expect.stringContaining("cannot be read") }) }]);
      const p = await plan();
      expect(p.remove).toEqual([]);
      expect(p.kept.map((k) => k.id).sort()).toEqual(["alpha", "beta"]);
      expect(p.kept[0].reason).toContain(code);
    } finally {
      fsState.dirs.clear();
    }
  });

  it("a folder deleted while searched (ENOENT) is no failure", async () => {
    fsState.dirs.set(join(skills, "beta"), "ENOENT");
    try {
      const loaded = await loadSkills(skills);
      expect(loaded.skills.map((s) => s.name)).toEqual(["alpha"]);
      expect(loaded.failed).toEqual([]);
    } finally {
      fsState.dirs.clear();
    }
  });
});
