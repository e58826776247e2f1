// Discovery as hosts do it (src/skills/discover.ts): each host's folders and precedence, duplicates by
// name resolved by it with a warning naming the shadowed one, over temp project and home folders.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { discoverSkills, discoveryHost, skillRoots } from "../../src/skills/discover.js";

function writeSkill(folder: string, name: string, body = `Do ${name}.`, description = `The ${name} skill.`): string {
  const dir = join(folder, name);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, "SKILL.md");
  writeFileSync(file, `---\nname: ${name}\ndescription: ${description}\n---\n${body}\n`);
  return file;
}

describe("discoverSkills", () => {
  let root: string;
  let project: string;
  let home: string;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), "gavel-discover-"));
    project = join(root, "project");
    home = join(root, "home");
    mkdirSync(project);
    mkdirSync(home);
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it("lists each host's folders, highest precedence first", () => {
    const labels = (host: Parameters<typeof discoveryHost>[0]) => skillRoots({ host: discoveryHost(host), projectDir: project, home }).map((r) => `${r.scope}:${r.label}`);
    expect(labels("claude-code")).toEqual(["user:~/.claude/skills", "project:.claude/skills"]);
    expect(labels("codex")).toEqual(["project:.agents/skills", "user:~/.agents/skills", "user:~/.codex/skills"]);
    expect(labels("copilot")).toEqual([
      "project:.github/skills",
      "project:.claude/skills",
      "project:.agents/skills",
      "user:~/.copilot/skills",
      "user:~/.claude/skills",
      "user:~/.agents/skills",
    ]);
    expect(labels(undefined)).toEqual([
      "project:.claude/skills",
      "project:.agents/skills",
      "project:.github/skills",
      "user:~/.claude/skills",
      "user:~/.agents/skills",
      "user:~/.codex/skills",
      "user:~/.copilot/skills",
    ]);
    expect(skillRoots({ host: "claude-code", projectDir: project, home })[0].dir).toBe(join(home, ".claude", "skills"));
    expect(() => discoveryHost("cursor")).toThrow(/host must be one of claude-code, codex, copilot, all/);
  });

  it("follows $HOME when no home is given", () => {
    const saved = process.env.HOME;
    process.env.HOME = home;
    try {
      expect(skillRoots({ host: "codex", projectDir: project }).map((r) => r.dir)).toContain(join(home, ".codex", "skills"));
    } finally {
      process.env.HOME = saved;
    }
  });

  it("claude-code: a personal skill shadows the project's of the same name (its documented order), with a warning naming both", async () => {
    const projectShared = writeSkill(join(project, ".claude", "skills"), "shared", "project version");
    writeSkill(join(project, ".claude", "skills"), "alpha");
    const homeShared = writeSkill(join(home, ".claude", "skills"), "shared", "personal version");
    writeSkill(join(home, ".codex", "skills"), "codex-only");
    const found = await discoverSkills({ host: "claude-code", projectDir: project, home });
    expect(found.skills.map((s) => s.name).sort()).toEqual(["alpha", "shared"]);
    const shared = found.skills.find((s) => s.name === "shared")!;
    expect(shared.body).toBe("personal version");
    expect(shared.source).toBe(homeShared);
    expect(found.rootOf.get("shared")?.scope).toBe("user");
    expect(found.shadowed).toEqual([{ name: "shared", winner: homeShared, shadowed: projectShared }]);
    expect(found.warnings.join("\n")).toContain(`skill "shared" at ${projectShared} is shadowed by ${homeShared} (claude-code precedence)`);
    expect(found.roots.map((r) => [r.label, r.exists, r.skills])).toEqual([
      ["~/.claude/skills", true, 1],
      [".claude/skills", true, 2],
    ]);
  });

  it("codex and all: the project's folder wins over the user's", async () => {
    const repo = writeSkill(join(project, ".agents", "skills"), "deploy", "repo version");
    const user = writeSkill(join(home, ".codex", "skills"), "deploy", "user version");
    writeSkill(join(home, ".agents", "skills"), "lint");
    writeSkill(join(project, ".github", "skills"), "gh-only");
    const codex = await discoverSkills({ host: "codex", projectDir: project, home });
    expect(codex.skills.map((s) => s.name).sort()).toEqual(["deploy", "lint"]);
    expect(codex.skills.find((s) => s.name === "deploy")!.source).toBe(repo);
    expect(codex.shadowed).toEqual([{ name: "deploy", winner: repo, shadowed: user }]);
    const all = await discoverSkills({ projectDir: project, home });
    expect(all.host).toBe("all");
    expect(all.skills.map((s) => s.name).sort()).toEqual(["deploy", "gh-only", "lint"]);
    const copilot = await discoverSkills({ host: "copilot", projectDir: project, home });
    expect(copilot.skills.map((s) => s.name).sort()).toEqual(["deploy", "gh-only", "lint"]); // ~/.codex is not Copilot's
    expect(copilot.shadowed).toEqual([]);
  });

  it("reads one level of skill folders, reports a broken SKILL.md and keeps the others; missing folders are empty", async () => {
    const folder = join(project, ".claude", "skills");
    writeSkill(folder, "good");
    mkdirSync(join(folder, "broken"), { recursive: true });
    writeFileSync(join(folder, "broken", "SKILL.md"), "---\nname: [unclosed\n---\nbody\n");
    writeSkill(join(folder, "good", "references"), "nested"); // inside a skill's folder: not a skill of its own
    const found = await discoverSkills({ host: "claude-code", projectDir: project, home });
    expect(found.skills.map((s) => s.name)).toEqual(["good"]);
    expect(found.failed.map((f) => f.where)).toEqual([join(folder, "broken", "SKILL.md")]);
    expect(found.roots[0]).toMatchObject({ label: "~/.claude/skills", exists: false, skills: 0 });
    const none = await discoverSkills({ host: "codex", projectDir: project, home });
    expect(none.skills).toEqual([]);
  });
});
