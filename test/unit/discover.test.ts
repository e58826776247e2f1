// Discovery as hosts do it (src/skills/discover.ts): each host's folders and precedence (Claude Code's
// managed, personal, project and plugin skills; Codex's repository, user and admin folders), duplicates
// by name resolved by it with a warning naming the shadowed one and why, over temp project, home,
// managed and admin folders (never this machine's own).
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { claudeManagedDir, discoverSkills, discoveryHost, skillRoots, type DiscoverOptions } from "../../src/skills/discover.js";

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
  let managed: string;
  let codexAdmin: string;
  /** The temp folders, so no test reads this machine's /etc/claude-code or /etc/codex. */
  let at: (host?: DiscoverOptions["host"]) => DiscoverOptions;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), "gavel-discover-"));
    project = join(root, "project");
    home = join(root, "home");
    managed = join(root, "etc", "claude-code");
    codexAdmin = join(root, "etc", "codex");
    mkdirSync(project);
    mkdirSync(home);
    at = (host) => ({ host, projectDir: project, home, managedDir: managed, codexAdminDir: codexAdmin });
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it("lists each host's folders, highest precedence first", () => {
    const labels = (host: Parameters<typeof discoveryHost>[0]) => skillRoots(at(discoveryHost(host))).map((r) => `${r.scope}:${r.label}`);
    const adminSkills = join(codexAdmin, "skills");
    expect(labels("claude-code")).toEqual(["managed:managed .claude/skills", "user:~/.claude/skills", "project:.claude/skills"]);
    expect(labels("codex")).toEqual(["project:.agents/skills", "user:~/.agents/skills", "user:~/.codex/skills", `managed:${adminSkills}`]);
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
      "managed:managed .claude/skills",
      `managed:${adminSkills}`,
    ]);
    expect(skillRoots(at("claude-code"))[1].dir).toBe(join(home, ".claude", "skills"));
    expect(() => discoveryHost("cursor")).toThrow(/host must be one of claude-code, codex, copilot, all/);
    expect(discoveryHost("github-copilot")).toBe("copilot");
  });

  it("knows Claude Code's managed folder on each platform, and Codex's admin folder", () => {
    expect(claudeManagedDir("linux")).toBe("/etc/claude-code");
    expect(claudeManagedDir("darwin")).toBe("/Library/Application Support/ClaudeCode");
    expect(claudeManagedDir("win32")).toBe("C:\\Program Files\\ClaudeCode");
    const defaults = skillRoots({ host: "claude-code", projectDir: project, home });
    expect(defaults[0]).toMatchObject({ scope: "managed", dir: join(claudeManagedDir(), ".claude", "skills") });
    expect(skillRoots({ host: "codex", projectDir: project, home }).at(-1)).toMatchObject({ scope: "managed", dir: "/etc/codex/skills" });
  });

  it("follows $HOME when no home is given", () => {
    const saved = process.env.HOME;
    process.env.HOME = home;
    try {
      expect(skillRoots({ ...at("codex"), home: undefined }).map((r) => r.dir)).toContain(join(home, ".codex", "skills"));
    } finally {
      process.env.HOME = saved;
    }
  });

  it("claude-code: a personal skill shadows the project's of the same name (its documented order), with a warning naming both", async () => {
    const projectShared = writeSkill(join(project, ".claude", "skills"), "shared", "project version");
    writeSkill(join(project, ".claude", "skills"), "alpha");
    const homeShared = writeSkill(join(home, ".claude", "skills"), "shared", "personal version");
    writeSkill(join(home, ".codex", "skills"), "codex-only");
    const found = await discoverSkills(at("claude-code"));
    expect(found.skills.map((s) => s.name).sort()).toEqual(["alpha", "shared"]);
    const shared = found.skills.find((s) => s.name === "shared")!;
    expect(shared.body).toBe("personal version");
    expect(shared.source).toBe(homeShared);
    expect(found.rootOf.get("shared")?.scope).toBe("user");
    const why = "~/.claude/skills (user) comes before .claude/skills (project): Claude Code's order is enterprise > personal > project";
    expect(found.shadowed).toEqual([{ name: "shared", winner: homeShared, shadowed: projectShared, why }]);
    expect(found.warnings.join("\n")).toContain(`skill "shared" at ${projectShared} is shadowed by ${homeShared} (claude-code precedence): ${why}`);
    expect(found.roots.map((r) => [r.label, r.exists, r.skills])).toEqual([
      ["managed .claude/skills", false, 0],
      ["~/.claude/skills", true, 1],
      [".claude/skills", true, 2],
    ]);
  });

  it("codex and all: the project's folder wins over the user's", async () => {
    const repo = writeSkill(join(project, ".agents", "skills"), "deploy", "repo version");
    const user = writeSkill(join(home, ".codex", "skills"), "deploy", "user version");
    writeSkill(join(home, ".agents", "skills"), "lint");
    writeSkill(join(project, ".github", "skills"), "gh-only");
    const codex = await discoverSkills(at("codex"));
    expect(codex.skills.map((s) => s.name).sort()).toEqual(["deploy", "lint"]);
    expect(codex.skills.find((s) => s.name === "deploy")!.source).toBe(repo);
    expect(codex.shadowed).toEqual([
      { name: "deploy", winner: repo, shadowed: user, why: ".agents/skills (project) comes before ~/.codex/skills (user): Codex's order is repository, then user, then admin" },
    ]);
    const all = await discoverSkills(at());
    expect(all.host).toBe("all");
    expect(all.skills.map((s) => s.name).sort()).toEqual(["deploy", "gh-only", "lint"]);
    const copilot = await discoverSkills(at("copilot"));
    expect(copilot.skills.map((s) => s.name).sort()).toEqual(["deploy", "gh-only", "lint"]); // ~/.codex is not Copilot's
    expect(copilot.shadowed).toEqual([]);
  });

  it("claude-code: an enterprise (managed) skill shadows the personal and the project's; Codex's admin folder ranks last", async () => {
    const org = writeSkill(join(managed, ".claude", "skills"), "review", "organisation version");
    const personal = writeSkill(join(home, ".claude", "skills"), "review", "personal version");
    const projectCopy = writeSkill(join(project, ".claude", "skills"), "review", "project version");
    const found = await discoverSkills(at("claude-code"));
    expect(found.skills.map((s) => [s.name, s.body])).toEqual([["review", "organisation version"]]);
    expect(found.rootOf.get("review")?.scope).toBe("managed");
    expect(found.shadowed.map((s) => [s.winner, s.shadowed])).toEqual([
      [org, personal],
      [org, projectCopy],
    ]);
    expect(found.shadowed[0].why).toMatch(/^managed \.claude\/skills \(managed\) comes before ~\/\.claude\/skills \(user\): Claude Code's order is enterprise > personal > project$/);
    // Codex: repository > user > admin
    const admin = writeSkill(join(codexAdmin, "skills"), "fmt", "admin version");
    writeSkill(join(codexAdmin, "skills"), "admin-only");
    const user = writeSkill(join(home, ".agents", "skills"), "fmt", "user version");
    const codex = await discoverSkills(at("codex"));
    expect(codex.skills.map((s) => [s.name, s.body]).sort()).toEqual([["admin-only", "Do admin-only."], ["fmt", "user version"]]);
    expect(codex.shadowed).toEqual([
      { name: "fmt", winner: user, shadowed: admin, why: `~/.agents/skills (user) comes before ${join(codexAdmin, "skills")} (managed): Codex's order is repository, then user, then admin` },
    ]);
  });

  describe("Claude Code's plugins", () => {
    /** A plugin in Claude Code's cache, with these skills; returns its install path. */
    function plugin(marketplace: string, name: string, skills: string[], version = "1.0.0"): string {
      const dir = join(home, ".claude", "plugins", "cache", marketplace, name, version);
      mkdirSync(join(dir, ".claude-plugin"), { recursive: true });
      writeFileSync(join(dir, ".claude-plugin", "plugin.json"), JSON.stringify({ name, version }));
      for (const skill of skills) writeSkill(join(dir, "skills"), skill, `${name}'s ${skill}`);
      return dir;
    }
    function registry(plugins: Record<string, unknown>, version = 2): void {
      writeFileSync(join(home, ".claude", "plugins", "installed_plugins.json"), JSON.stringify({ version, plugins }));
    }
    function settings(file: string, enabledPlugins: Record<string, boolean>): void {
      mkdirSync(join(file, ".."), { recursive: true });
      writeFileSync(file, JSON.stringify({ enabledPlugins }));
    }

    it("reads each installed, enabled plugin's skills as plugin:skill, beside a same-named personal skill", async () => {
      const reviewer = plugin("acme", "reviewer", ["review", "lint"]);
      const here = plugin("acme", "here-only", ["deploy"]);
      const elsewhere = plugin("acme", "elsewhere", ["deploy"]);
      const off = plugin("other", "switched-off", ["review"]);
      const tilde = plugin("other", "tilde", ["docs"], "2.0.0");
      registry({
        "reviewer@acme": [{ scope: "user", installPath: reviewer, version: "1.0.0" }],
        "here-only@acme": [{ scope: "project", projectPath: project, installPath: here, version: "1.0.0" }],
        "elsewhere@acme": [{ scope: "project", projectPath: join(root, "another-project"), installPath: elsewhere, version: "1.0.0" }],
        "switched-off@other": [{ scope: "user", installPath: off, version: "1.0.0" }],
        "tilde@other": [{ scope: "user", installPath: "~/.claude/plugins/cache/other/tilde/2.0.0", version: "2.0.0" }],
      });
      settings(join(home, ".claude", "settings.json"), { "reviewer@acme": true, "switched-off@other": true });
      settings(join(project, ".claude", "settings.local.json"), { "switched-off@other": false }); // the later file wins
      const personal = writeSkill(join(home, ".claude", "skills"), "review", "personal version");
      const found = await discoverSkills(at("claude-code"));
      expect(found.skills.map((s) => [s.id, s.name, s.body])).toEqual([
        ["review", "review", "personal version"],
        ["here-only:deploy", "deploy", "here-only's deploy"],
        ["reviewer:lint", "lint", "reviewer's lint"],
        ["reviewer:review", "review", "reviewer's review"],
        ["tilde:docs", "docs", "tilde's docs"],
      ]);
      expect(found.shadowed).toEqual([]); // namespaced: a plugin's review does not meet the personal one
      expect(found.skills[0].source).toBe(personal);
      expect(found.skills.find((s) => s.id === "reviewer:review")!.source).toBe(join(reviewer, "skills", "review", "SKILL.md"));
      expect(found.skills.find((s) => s.id === "tilde:docs")!.source).toBe(join(tilde, "skills", "docs", "SKILL.md")); // "~/" read as the home
      expect(found.rootOf.get("reviewer:review")).toMatchObject({ scope: "plugin", plugin: "reviewer@acme", label: "plugin reviewer@acme" });
      expect(found.roots.filter((r) => r.scope === "plugin").map((r) => [r.label, r.skills])).toEqual([
        ["plugin here-only@acme", 1],
        ["plugin reviewer@acme", 2],
        ["plugin tilde@other", 1],
      ]);
      // codex and copilot do not read Claude Code's plugins; all does, last
      expect((await discoverSkills(at("codex"))).skills).toEqual([]);
      expect((await discoverSkills(at())).skills.map((s) => s.id)).toEqual(["review", "here-only:deploy", "reviewer:lint", "reviewer:review", "tilde:docs"]);
    });

    it("one plugin name from two marketplaces: the first id wins, and the warning says so; version 1 registries read too", async () => {
      const a = plugin("alpha-market", "fmt", ["format"]);
      const b = plugin("beta-market", "fmt", ["format"]);
      registry({ "fmt@beta-market": { installPath: b, version: "1.0.0" }, "fmt@alpha-market": { installPath: a, version: "1.0.0" } }, 1);
      const found = await discoverSkills(at("claude-code"));
      expect(found.skills.map((s) => s.id)).toEqual(["fmt:format"]);
      expect(found.skills[0].source).toBe(join(a, "skills", "format", "SKILL.md"));
      expect(found.shadowed).toEqual([
        {
          name: "fmt:format",
          winner: join(a, "skills", "format", "SKILL.md"),
          shadowed: join(b, "skills", "format", "SKILL.md"),
          why: "plugin fmt@alpha-market (plugin) comes before plugin fmt@beta-market (plugin): both are fmt's, from two marketplaces; the first id in order wins",
        },
      ]);
    });

    it("counts a plugin's sibling folders as its versions only where its install path is a version folder", () => {
      const cache = join(home, ".claude", "plugins", "cache");
      mkdirSync(cache, { recursive: true });
      const cases: [string, string, string | undefined][] = [
        [join(cache, "acme", "review", "1a2b3c"), "1.0.0", join(cache, "acme", "review")], // the cache's <marketplace>/<plugin>/<version>
        [join(root, "opt", "review", "2.0.0"), "2.0.0", join(root, "opt", "review")], // named for its version
        [join(cache, "review"), "1.0.0", undefined], // one level into the cache: its siblings are other plugins
        [join(root, "dev", "review"), "1.0.0", undefined], // a working folder: its siblings are the user's projects
      ];
      for (const [installPath, version, versions] of cases) {
        registry({ "review@acme": [{ scope: "user", installPath, version }] });
        const roots = skillRoots(at("claude-code")).filter((r) => r.plugin !== undefined);
        expect(roots.map((r) => r.pluginVersions), installPath).toEqual([versions]);
      }
    });

    it("a registry or settings file swapped for a FIFO or /dev/zero is a warning at once, never a hang", async () => {
      mkdirSync(join(home, ".claude", "plugins"), { recursive: true });
      const registry = join(home, ".claude", "plugins", "installed_plugins.json");
      execFileSync("mkfifo", [registry]);
      writeSkill(join(project, ".claude", "skills"), "alpha");
      const found = await discoverSkills(at("claude-code"));
      expect(found.skills.map((s) => s.id)).toEqual(["alpha"]);
      expect(found.warnings).toEqual([expect.stringMatching(/installed_plugins\.json is a FIFO/)]);
      rmSync(registry);
      writeFileSync(registry, JSON.stringify({ version: 2, plugins: {} }));
      symlinkSync("/dev/zero", join(home, ".claude", "settings.json"));
      const again = await discoverSkills(at("claude-code"));
      expect(again.skills.map((s) => s.id)).toEqual(["alpha"]);
      expect(again.warnings).toEqual([expect.stringMatching(/settings\.json is a device/)]);
    });

    it("an unreadable registry is a warning, and the other folders still load", async () => {
      mkdirSync(join(home, ".claude", "plugins"), { recursive: true });
      writeFileSync(join(home, ".claude", "plugins", "installed_plugins.json"), "{ not json");
      writeSkill(join(project, ".claude", "skills"), "alpha");
      const found = await discoverSkills(at("claude-code"));
      expect(found.skills.map((s) => s.id)).toEqual(["alpha"]);
      expect(found.warnings).toEqual([expect.stringMatching(/installed_plugins\.json is not valid JSON .*its plugins are not read$/)]);
    });
  });

  it("reads one level of skill folders, reports a broken SKILL.md and keeps the others; missing folders are empty", async () => {
    const folder = join(project, ".claude", "skills");
    writeSkill(folder, "good");
    mkdirSync(join(folder, "broken"), { recursive: true });
    writeFileSync(join(folder, "broken", "SKILL.md"), "---\nname: [unclosed\n---\nbody\n");
    writeSkill(join(folder, "good", "references"), "nested"); // inside a skill's folder: not a skill of its own
    const found = await discoverSkills(at("claude-code"));
    expect(found.skills.map((s) => s.name)).toEqual(["good"]);
    expect(found.failed.map((f) => f.where)).toEqual([join(folder, "broken", "SKILL.md")]);
    expect(found.roots[1]).toMatchObject({ label: "~/.claude/skills", exists: false, skills: 0 });
    const none = await discoverSkills(at("codex"));
    expect(none.skills).toEqual([]);
  });

  it("a stray SKILL.md at the top of a host folder is a warning, never the folder as one skill: the skills in it are still read", async () => {
    const personal = join(home, ".claude", "skills");
    writeSkill(personal, "alpha");
    writeSkill(personal, "beta");
    writeFileSync(join(personal, "SKILL.md"), "---\nname: stray\ndescription: At the top.\n---\nbody\n");
    const found = await discoverSkills(at("claude-code"));
    expect(found.skills.map((s) => s.name)).toEqual(["alpha", "beta"]);
    expect(found.skills.map((s) => s.source)).toEqual([join(personal, "alpha", "SKILL.md"), join(personal, "beta", "SKILL.md")]);
    expect(found.failed).toEqual([]);
    expect(found.warnings).toEqual([expect.stringContaining(`${join(personal, "SKILL.md")}: a SKILL.md at the top of a skill folder is no skill`)]);
    expect(found.roots[1]).toMatchObject({ label: "~/.claude/skills", exists: true, skills: 2 });
    // alone in its folder: no skill, still the warning
    rmSync(join(personal, "alpha"), { recursive: true });
    rmSync(join(personal, "beta"), { recursive: true });
    const alone = await discoverSkills(at("claude-code"));
    expect(alone.skills).toEqual([]);
    expect(alone.warnings).toEqual([expect.stringContaining("a SKILL.md at the top of a skill folder is no skill")]);
  });
});
