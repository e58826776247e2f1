// The budget flags of the router commands, run as a user would (node dist/cli/gavel.js …): a bank
// installed again with other budgets is built again, and a render that cannot fit the skill budget
// names the skill and the flag to raise.
import { afterAll, describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot } from "../helpers/paths.js";
import { run } from "../helpers/run.js";

const cli = join(repoRoot, "dist", "cli", "gavel.js");
const dir = mkdtempSync(join(tmpdir(), "gavel-cli-budgets-"));
// the embedded gavel-mini pair (context 2048, skill budget 512, key budget 1536); run in `dir`, so a
// default bank (.gavel/bank) would land there
function gavel(...args: string[]) {
  return run(process.execPath, [cli, ...args], { cwd: dir, timeoutMs: 300_000, env: { ...process.env, GAVEL_MODEL: "", GAVEL_PROJECTIONS: "", GAVEL_BANK: "" } });
}

afterAll(() => rmSync(dir, { recursive: true, force: true }));
const skills = join(repoRoot, "examples", "skills");

describe("gavel install with other budgets", () => {
  it("builds the skills again when the skill or key budget changed, and records the budgets in each entry", { timeout: 600_000 }, async () => {
    const bank = join(dir, "bank");
    const install = (...flags: string[]) => gavel("install", skills, "--limit", "2", "--bank", bank, ...flags);
    const first = await install("--skill-budget", "256");
    expect(first.code, first.err).toBe(0);
    expect(first.out).toMatch(/^installed 2, unchanged 0/);
    const entries = () => (JSON.parse(readFileSync(join(bank, "manifest.json"), "utf8")) as { entries: { build?: unknown }[] }).entries.map((e) => e.build);
    expect(entries()).toEqual([{ skillBudget: 256, keyBudget: 1536, contextSize: 2048 }, { skillBudget: 256, keyBudget: 1536, contextSize: 2048 }]);
    expect((await install("--skill-budget", "256")).out).toMatch(/^installed 0, unchanged 2/);
    // another skill budget, then another key budget: built again, not "unchanged" with the old keys
    const smaller = await install("--skill-budget", "128");
    expect(smaller.code, smaller.err).toBe(0);
    expect(smaller.out).toMatch(/^installed 2, unchanged 0/);
    expect(entries()).toEqual([{ skillBudget: 128, keyBudget: 1536, contextSize: 2048 }, { skillBudget: 128, keyBudget: 1536, contextSize: 2048 }]);
    expect((await install("--skill-budget", "128", "--key-budget", "512")).out).toMatch(/^installed 2, unchanged 0/);
    // the defaults (no flag) differ from both: built again, then unchanged
    expect((await install()).out).toMatch(/^installed 2, unchanged 0/);
    expect((await install()).out).toMatch(/^installed 0, unchanged 2/);
  });

  it("a skill whose name alone overflows the skill budget fails naming the skill and --skill-budget", async () => {
    const src = join(dir, "long-name");
    mkdirSync(join(src, "long-name"), { recursive: true });
    const name = "a-skill-name-so-long-that-its-tokens-alone-fill-a-budget-of-twenty-four";
    writeFileSync(join(src, "long-name", "SKILL.md"), `---\nname: ${name}\ndescription: does one thing\n---\nThe body.\n`);
    const r = await gavel("install", src, "--bank", join(dir, "bank-long"), "--skill-budget", "24");
    expect(r.code).toBe(1);
    const failed = r.out.split("\n").find((l) => l.startsWith("  failed: "));
    expect(failed).toContain(`skill "${name}"`);
    expect(failed).toMatch(/overflow the skill budget of 24 tokens .*; the skill budget is --skill-budget: raise --skill-budget \[SKILL_INVALID\]$/);
    expect(failed).not.toMatch(/skillBudget/);
    // --json: the same failure, with the option it refuses by the library's name
    const j = await gavel("install", src, "--bank", join(dir, "bank-long"), "--skill-budget", "24", "--json");
    expect(j.code).toBe(1);
    const report = JSON.parse(j.out) as { failed: { where: string; error: { code: string; message: string; option?: string } }[] };
    expect(report.failed).toHaveLength(1);
    expect(report.failed[0].error.code).toBe("SKILL_INVALID");
    expect(report.failed[0].error.option).toBe("skillBudget");
    expect(report.failed[0].error.message).toMatch(/; the skill budget is --skill-budget: raise --skill-budget$/);
  });
});

describe("router flags refused before anything loads, named by flag", () => {
  it("values out of the library's ranges, and a skill budget that leaves a task no room", async () => {
    for (const [flags, message] of [
      [["--skill-budget", "0"], "--skill-budget must be a whole number from 16 to 4194304, got 0"],
      [["--threads", "0"], "--threads must be a whole number from 1 to 1024, got 0"],
      [["--context", "100000000"], "--context must be a whole number from 16 to 4194304, got 100000000"],
      [["--key-budget", "2000000"], "--key-budget must be a whole number from 16 to 1048576, got 2000000"],
      [["--skill-budget", "1020", "--context", "1024"], "--skill-budget 1020 leaves no room for a task in --context 1024: lower --skill-budget or raise --context"],
    ] as const) {
      const r = await gavel("route", "a task", "--bank", join(dir, "no-bank"), ...flags);
      expect(r.code, flags.join(" ")).toBe(1);
      expect(r.err).toBe(`gavel: ${message} [INVALID_ARGUMENT]\n`);
    }
    // known only once the model gives the context (2048): still named by flag
    const late = await gavel("route", "a task", "--bank", join(dir, "no-bank"), "--skill-budget", "2040");
    expect(late.code).toBe(1);
    expect(late.err).toBe("gavel: the skill budget of 2040 tokens (--skill-budget) leaves no room for a task in the context of 2048 tokens (--context): lower --skill-budget or raise --context [INVALID_ARGUMENT]\n");
  });

  it("an empty --bank, --model or --projections is a usage error naming the flag, not the default", async () => {
    for (const args of [["install", skills, "--bank", ""], ["route", "a task", "-m", ""], ["list", "--projections="], ["check", "-b", ""]]) {
      const r = await gavel(...args, "--json");
      expect(r.code, args.join(" ")).toBe(2);
      const flag = args.includes("-m") ? "--model" : args.includes("--projections=") ? "--projections" : "--bank";
      expect(JSON.parse(r.err.trimEnd().split("\n").at(-1)!).error).toEqual({ code: "USAGE", message: `${flag} needs a value, got "" (leave the flag out for its default)`, exitCode: 2 });
    }
  });
});
