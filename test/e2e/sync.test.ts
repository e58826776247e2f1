// `gavel sync` end to end (node dist/cli/gavel.js, the embedded gavel-mini pair) over temp project and
// home folders (HOME overridden): precedence, new / changed / deleted skills, --dry-run, idempotence,
// and skills installed from elsewhere left alone.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runNode } from "../helpers/run.js";
import { repoRoot } from "../helpers/paths.js";

const cli = join(repoRoot, "dist", "cli", "gavel.js");

function writeSkill(folder: string, name: string, body: string): string {
  const dir = join(folder, name);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, "SKILL.md");
  writeFileSync(file, `---\nname: ${name}\ndescription: ${JSON.stringify(`Use for ${name} tasks. ${body}`)}\n---\n# ${name}\n\n${body}\n`);
  return file;
}

describe("gavel sync", () => {
  let root: string;
  let project: string;
  let home: string;
  let bank: string;
  let env: NodeJS.ProcessEnv;
  const gavel = async (...args: string[]) => {
    const r = await runNode([cli, ...args, "--bank", bank, "--context", "2048"], { env, cwd: project });
    expect(r.code, r.out + r.err).toBe(0);
    return r.out;
  };
  const installed = async () => (JSON.parse(await gavel("list", "--json")) as { name: string; source: string }[]).map((s) => s.name).sort();

  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), "gavel-sync-"));
    project = join(root, "project");
    home = join(root, "home");
    bank = join(root, "bank");
    mkdirSync(project);
    mkdirSync(home);
    env = { ...process.env, HOME: home, GAVEL_MODEL: "", GAVEL_PROJECTIONS: "", GAVEL_BANK: "" };
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("installs the host's skills, resolving a duplicate by its precedence with a warning", async () => {
    writeSkill(join(project, ".claude", "skills"), "resize-images", "Shrink photos with ImageMagick.");
    const projectShared = writeSkill(join(project, ".claude", "skills"), "team-review", "The project's review checklist.");
    const homeShared = writeSkill(join(home, ".claude", "skills"), "team-review", "My own review checklist.");
    writeSkill(join(home, ".claude", "skills"), "write-commits", "Write commit messages in the imperative.");
    writeSkill(join(home, ".codex", "skills"), "codex-thing", "Only Codex reads this.");
    const out = await gavel("sync", "--host", "claude-code");
    expect(out).toContain(`warning: skill "team-review" at ${projectShared} is shadowed by ${homeShared} (claude-code precedence)`);
    expect(out).toMatch(/install resize-images \(new\)/);
    expect(out).toMatch(/installed 3 new, 0 changed; uninstalled 0; unchanged 0/);
    expect(await installed()).toEqual(["resize-images", "team-review", "write-commits"]);
    const shown = JSON.parse(await gavel("list", "--json")) as { name: string; source: string }[];
    expect(shown.find((s) => s.name === "team-review")!.source).toBe(homeShared);
  });

  it("a second sync does nothing", async () => {
    const out = await gavel("sync", "--host", "claude-code");
    expect(out).toMatch(/installed 0 new, 0 changed; uninstalled 0; unchanged 3 \(nothing to do\)/);
    expect(out).not.toMatch(/^install /m);
  });

  it("reinstalls what changed and uninstalls what was deleted, after a dry run that changes nothing", async () => {
    writeSkill(join(project, ".claude", "skills"), "resize-images", "Shrink photos with ImageMagick, then strip EXIF.");
    rmSync(join(home, ".claude", "skills", "write-commits"), { recursive: true });
    // a skill installed from elsewhere is not the host's: sync leaves it alone
    writeSkill(join(root, "elsewhere"), "side-skill", "Installed by hand.");
    await gavel("install", join(root, "elsewhere"));

    const dry = await gavel("sync", "--host", "claude-code", "--dry-run");
    expect(dry).toMatch(/would install resize-images \(changed\)/);
    expect(dry).toMatch(/would uninstall write-commits \(deleted on disk\)/);
    expect(dry).toMatch(/dry run: would install 0 new, 1 changed; would uninstall 1; unchanged 1/);
    expect(await installed()).toEqual(["resize-images", "side-skill", "team-review", "write-commits"]);

    const out = await gavel("sync", "--host", "claude-code");
    expect(out).toMatch(/installed 0 new, 1 changed; uninstalled 1; unchanged 1/);
    expect(await installed()).toEqual(["resize-images", "side-skill", "team-review"]);
    expect(await gavel("sync", "--host", "claude-code")).toMatch(/\(nothing to do\)/);
  });

  it("another host's precedence: all puts the project first, so the project's copy replaces the personal one", async () => {
    const out = await gavel("sync", "--json");
    const summary = JSON.parse(out) as { host: string; installed: string[]; updated: string[]; uninstalled: string[]; shadowed: { name: string; winner: string }[] };
    expect(summary.host).toBe("all");
    expect(summary.installed).toEqual(["codex-thing"]);
    expect(summary.updated).toEqual(["team-review"]);
    expect(summary.uninstalled).toEqual([]);
    expect(summary.shadowed.map((s) => [s.name, s.winner])).toEqual([["team-review", join(project, ".claude", "skills", "team-review", "SKILL.md")]]);
  });

  it("a host skill whose id is installed from elsewhere is a conflict: the installed one is neither replaced nor, once the copy is deleted, uninstalled", async () => {
    const original = join(root, "elsewhere", "side-skill", "SKILL.md");
    const copy = writeSkill(join(project, ".claude", "skills"), "side-skill", "Installed by hand, then copied and edited.");
    const sourceOf = async () => (JSON.parse(await gavel("list", "--json")) as { name: string; source: string }[]).find((s) => s.name === "side-skill")?.source;
    // the default host (all): the previous sync's precedence, so only the copy is new on disk
    const out = await gavel("sync");
    expect(out).toContain(`conflict side-skill: installed from ${original}, not from the host's folders; kept, ${copy} not installed`);
    expect(out).not.toMatch(/^install side-skill/m);
    expect(out).toMatch(/installed 0 new, 0 changed; uninstalled 0; unchanged 3; conflicts 1 \(nothing to do\)/);
    const json = JSON.parse(await gavel("sync", "--json")) as { updated: string[]; conflicts: unknown[] };
    expect(json.updated).toEqual([]);
    expect(json.conflicts).toEqual([{ id: "side-skill", source: copy, installed: original }]);
    expect(await sourceOf()).toBe(original);
    rmSync(join(project, ".claude", "skills", "side-skill"), { recursive: true });
    const gone = await gavel("sync");
    expect(gone).toMatch(/uninstalled 0; unchanged 3 \(nothing to do\)/);
    expect(await sourceOf()).toBe(original);
  });

  it("a skill whose install fails is reported failed, not installed (exit 1); a mistyped --project is FILE_NOT_FOUND and makes no bank", async () => {
    const proj = join(root, "failing");
    writeSkill(join(proj, ".claude", "skills"), "dockerfile", "Write a Dockerfile with a multi-stage build. ".repeat(8));
    const other = join(root, "failing-bank");
    const bare = { ...env, HOME: join(root, "bare-home") };
    mkdirSync(bare.HOME!);
    // a skill budget under the render's scaffolding: the one skill cannot be encoded
    const r = await runNode([cli, "sync", "--host", "claude-code", "--project", proj, "--bank", other, "--context", "2048", "--skill-budget", "16", "--json"], { env: bare, cwd: proj });
    expect(r.code, r.out + r.err).toBe(1);
    const summary = JSON.parse(r.out) as { installed: string[]; failed: { where: string; error: string; option?: string }[] };
    expect(summary.installed).toEqual([]);
    expect(summary.failed.map((f) => f.where)).toEqual([join(proj, ".claude", "skills", "dockerfile", "SKILL.md")]);
    // the flag to raise, not the library's option
    const remedy = /alone overflow the skill budget of 16 tokens .*; the skill budget is --skill-budget: raise --skill-budget$/;
    expect(summary.failed[0].error).toMatch(remedy);
    expect(summary.failed[0].option).toBe("skillBudget");
    const text = await runNode([cli, "sync", "--host", "claude-code", "--project", proj, "--bank", other, "--context", "2048", "--skill-budget", "16"], { env: bare, cwd: proj });
    expect(text.code).toBe(1);
    expect(text.out).toMatch(/installed 0 new, 0 changed; uninstalled 0; unchanged 0; failed 1/);
    const failedLine = text.err.split("\n").find((l) => l.startsWith("failed: "));
    expect(failedLine).toMatch(remedy);
    expect(failedLine).not.toMatch(/skillBudget/);
    const typo = join(root, "no-such-project");
    const t = await runNode([cli, "sync", "--project", typo, "--bank", join(root, "typo-bank"), "--context", "2048"], { env, cwd: project });
    expect(t.code).not.toBe(0);
    expect(t.err).toMatch(/FILE_NOT_FOUND|no such folder/);
    expect(existsSync(join(root, "typo-bank"))).toBe(false);
  });
});
