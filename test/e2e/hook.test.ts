// `gavel hook claude-code` (a Claude Code UserPromptSubmit hook) and `gavel hook install claude-code`,
// run as Claude Code runs them: node dist/cli/gavel.js with the hook's JSON on stdin.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runNode } from "../helpers/run.js";
import { repoRoot } from "../helpers/paths.js";
import { bin, cli, endChildren, hookInput as input, runChild, runHook as runHookWith, startServe, type ServeChild } from "../helpers/serve-process.js";
import { offDomainPrompts } from "../helpers/off-domain-prompts.js";

const env = { ...process.env, GAVEL_MODEL: "", GAVEL_PROJECTIONS: "", GAVEL_BANK: "", CLAUDE_PROJECT_DIR: "" };

/**
 * Runs the hook with `stdin` in this file's environment. The answer may wait a minute: these tests
 * check what the hook adds, not its 5 s default budget, which a route misses on a loaded machine.
 */
const runHook = (stdin: string, args: string[] = []) =>
  runHookWith(stdin, args.includes("--timeout-ms") ? args : [...args, "--timeout-ms", "60000"], env);

describe("gavel hook claude-code", () => {
  let project: string;
  let server: ServeChild;

  beforeAll(async () => {
    project = mkdtempSync(join(tmpdir(), "gavel-hook-"));
    const bank = join(project, ".gavel", "bank");
    const inst = await runNode([cli, "install", join(repoRoot, "examples", "skills"), "--bank", bank, "--context", "2048"], { env });
    expect(inst.code, inst.err).toBe(0);
    server = await startServe(["--bank", bank], { env });
  }, 300_000);

  afterAll(async () => {
    endChildren();
    server?.child.kill("SIGTERM");
    await server?.exited;
  });

  it("names the skill a prompt needs, with its SKILL.md (the bank found from the prompt's cwd)", async () => {
    const r = await runHook(input("Our quarterly report came as report.pdf; get the revenue table out of it into a CSV file.", project));
    expect(r.code).toBe(0);
    expect(r.err).toBe("");
    const out = JSON.parse(r.out) as { hookSpecificOutput: { hookEventName: string; additionalContext: string } };
    expect(out.hookSpecificOutput.hookEventName).toBe("UserPromptSubmit");
    expect(out.hookSpecificOutput.additionalContext).toMatch(/skill "pdf-extract"/);
    expect(out.hookSpecificOutput.additionalContext).toContain(join(repoRoot, "examples", "skills", "pdf-extract", "SKILL.md"));
    // the full route (glance + verdict) behind --verdict agrees
    const v = await runHook(input("Our quarterly report came as report.pdf; get the revenue table out of it into a CSV file.", project), ["--verdict"]);
    expect(v.code).toBe(0);
    expect(JSON.parse(v.out).hookSpecificOutput.additionalContext).toMatch(/skill "pdf-extract"/);
  });

  it("adds nothing when the ruling abstains", async () => {
    const r = await runHook(input("Write a haiku about autumn leaves.", project));
    expect(r.code).toBe(0);
    expect(r.out).toBe("");
  });

  it("exits 0 when no server runs, saying so in one line on stderr, and loads no model", async () => {
    const elsewhere = mkdtempSync(join(tmpdir(), "gavel-hook-none-"));
    // no clock: a preload writes, at exit, the files the run loaded; a model needs the native addon
    const probe = join(elsewhere, "probe.cjs");
    const loaded = join(elsewhere, "loaded.json");
    writeFileSync(probe, `process.on("exit", () => require("node:fs").writeFileSync(${JSON.stringify(loaded)}, JSON.stringify(Object.keys(require.cache))));\n`);
    const r = await runChild(process.execPath, ["-r", probe, bin, "hook", "claude-code", "--timeout-ms", "60000"], input("Extract the tables from report.pdf", elsewhere), env);
    expect(r.code).toBe(0);
    expect(r.out).toBe("");
    expect(r.err.trim().split("\n")).toHaveLength(1);
    expect(r.err).toMatch(/no gavel server runs for the bank/);
    expect((JSON.parse(readFileSync(loaded, "utf8")) as string[]).sort()).toEqual([bin, probe].sort());
  });

  it("exits 0 with one line on stderr for malformed stdin", async () => {
    for (const bad of ["not json", "{\"no_prompt\": 1}", ""]) {
      const r = await runHook(bad, ["--bank", join(project, ".gavel", "bank")]);
      expect(r.code).toBe(0);
      expect(r.out).toBe("");
      expect(r.err.trim().split("\n")).toHaveLength(1);
    }
  });
});

// Under 125 skills a route also abstains at the library's own cut (docs/BENCHMARKS.md, "Small
// libraries: each library sets its own cut"); --no-library-cut asks the server for routes by the
// calibrated model alone. Over three example skills the cut declines some held-out off-domain prompts.
describe("gavel hook claude-code --no-library-cut", () => {
  let project: string;
  let server: ServeChild;
  const cutEnv = { ...env, GAVEL_LIBRARY_CUT: "" };

  beforeAll(async () => {
    project = mkdtempSync(join(tmpdir(), "gavel-hook-cut-"));
    const bank = join(project, ".gavel", "bank");
    for (const s of ["bash-scripting", "readme-writing", "rust-cargo"]) {
      const inst = await runNode([cli, "install", join(repoRoot, "examples", "skills", s), "--bank", bank, "--context", "2048", "--threads", "1"], { env: cutEnv });
      expect(inst.code, inst.err).toBe(0);
    }
    server = await startServe(["--bank", bank, "--threads", "1"], { env: cutEnv });
  }, 300_000);

  afterAll(async () => {
    endChildren();
    server?.child.kill("SIGTERM");
    await server?.exited;
  });

  it("the flag never silences the hook, and it names a skill where only the library's cut declined", async () => {
    const prompts = offDomainPrompts(["offhw7", "offhw8"]);
    expect(prompts.length).toBeGreaterThanOrEqual(16);
    let onlyWithFlag = 0;
    for (const p of prompts) {
      const on = await runHookWith(input(p, project), ["--timeout-ms", "60000"], cutEnv);
      const off = await runHookWith(input(p, project), ["--timeout-ms", "60000", "--no-library-cut"], cutEnv);
      expect(on.code).toBe(0);
      expect(off.code).toBe(0);
      expect(on.err + off.err).toBe("");
      if (on.out !== "") expect(off.out).not.toBe("");
      if (on.out === "" && off.out !== "") {
        onlyWithFlag++;
        expect(JSON.parse(off.out).hookSpecificOutput.additionalContext).toMatch(/skill "(bash-scripting|readme-writing|rust-cargo)"/);
      }
    }
    expect(onlyWithFlag).toBeGreaterThan(0);
  }, 600_000);
});

describe("gavel hook install claude-code", () => {
  it("merges into an existing .claude/settings.json, idempotently", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gavel-hook-install-"));
    mkdirSync(join(dir, ".claude"));
    const file = join(dir, ".claude", "settings.json");
    const theirs = { type: "command", command: "echo keep-me" };
    writeFileSync(file, JSON.stringify({ model: "opus", permissions: { allow: ["Bash(ls)"] }, hooks: { UserPromptSubmit: [{ hooks: [theirs] }], PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: "echo pre" }] }] } }, null, 2));
    for (let i = 0; i < 2; i++) {
      const r = await runNode([cli, "hook", "install", "claude-code", "--project", "--dir", dir, "--bank", join(dir, "bank")], { env });
      expect(r.code, r.err).toBe(0);
    }
    const s = JSON.parse(readFileSync(file, "utf8"));
    expect(s.model).toBe("opus");
    expect(s.permissions).toEqual({ allow: ["Bash(ls)"] });
    expect(s.hooks.PreToolUse).toEqual([{ matcher: "Bash", hooks: [{ type: "command", command: "echo pre" }] }]);
    const all = s.hooks.UserPromptSubmit.flatMap((g: { hooks: { command: string }[] }) => g.hooks);
    expect(all[0]).toEqual(theirs);
    const ours = all.filter((h: { command: string }) => h.command.includes("hook claude-code"));
    expect(ours).toHaveLength(1); // installed twice, present once
    expect(ours[0]).toMatchObject({ type: "command", timeout: 10 });
    expect(ours[0].command).toBe("npx --no gavel hook claude-code --bank bank"); // portable: relative to the project
    // the hook's own options travel into the command it writes
    expect((await runNode([cli, "hook", "install", "claude-code", "--project", "--dir", dir, "--bank", join(dir, "bank"), "--no-library-cut", "--verdict"], { env })).code).toBe(0);
    const again = JSON.parse(readFileSync(file, "utf8")).hooks.UserPromptSubmit.flatMap((g: { hooks: { command: string }[] }) => g.hooks).filter((h: { command: string }) => h.command.includes("hook claude-code"));
    expect(again.map((h: { command: string }) => h.command)).toEqual(["npx --no gavel hook claude-code --bank bank --verdict --no-library-cut"]);
    // a fresh folder gets a new settings file; a malformed one is left alone
    const fresh = mkdtempSync(join(tmpdir(), "gavel-hook-fresh-"));
    expect((await runNode([cli, "hook", "install", "claude-code", "--dir", fresh], { env })).code).toBe(0);
    expect(JSON.parse(readFileSync(join(fresh, ".claude", "settings.json"), "utf8")).hooks.UserPromptSubmit).toHaveLength(1);
    writeFileSync(file, "{ not json");
    expect((await runNode([cli, "hook", "install", "claude-code", "--dir", dir], { env })).code).toBe(1);
    expect(readFileSync(file, "utf8")).toBe("{ not json");
  });
});
