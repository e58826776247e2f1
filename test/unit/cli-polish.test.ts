// Issue 16's polish and the skill itself, without a model: the version, install progress with rate and
// ETA, the context default, the unsupported-platform message, the package metadata, and the skill
// record (body, front matter, allowed-tools, absolute path, provenance) over a bank view.
import { describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, sep } from "node:path";
import { Progress, formatDuration, rateText } from "../../src/cli/ui/progress.js";
import { packageVersion } from "../../src/cli/ui/version.js";
import { CLI_DEFAULT_CONTEXT, contextFor, trainedContext } from "../../src/cli/commands/model-context.js";
import { addonUnavailableMessage } from "../../src/native/binding.js";
import { hostOfFolder, locateSkill, parseAllowedTools, readSkillRecord, type SkillBankView } from "../../src/route/skill-record.js";
import { parseSkillMarkdown } from "../../src/skills/index.js";
import type { BankEntry } from "../../src/bank/types.js";
import type { RenderableSkill } from "../../src/render/index.js";
import { repoRoot } from "../helpers/paths.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";
import { expectCode } from "../helpers/gavel-error.js";

const pkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8"));

/** A stand-in for process.stderr that records what is written. */
function stream(isTTY: boolean): NodeJS.WriteStream & { text: string } {
  const s = { isTTY, text: "", write: (chunk: string) => ((s.text += chunk), true) };
  return s as unknown as NodeJS.WriteStream & { text: string };
}

describe("version and package metadata", () => {
  it("reads the package's version", () => {
    expect(packageVersion()).toBe(pkg.version);
    expect(packageVersion("/no/such/root")).toBe("unknown");
  });

  it("builds dist on pack, ships it, and names no placeholder project URLs", () => {
    expect(pkg.scripts.prepack).toMatch(/tsup/);
    // dist holds gavel.js and its lazily loaded chunks (serve, hook, mcp)
    expect(pkg.files).toContain("dist");
    // no git remote exists yet: no repository, homepage or bugs URL rather than wrong ones
    expect(pkg.repository).toBeUndefined();
    expect(pkg.homepage).toBeUndefined();
    expect(pkg.bugs).toBeUndefined();
    expect(pkg.keywords).toEqual(expect.arrayContaining(["mcp", "skills", "llama.cpp"]));
    // the MCP SDK is optional: never installed for a user who does not run `gavel mcp`
    expect(pkg.dependencies["@modelcontextprotocol/sdk"]).toBeUndefined();
    expect(pkg.peerDependenciesMeta["@modelcontextprotocol/sdk"]).toEqual({ optional: true });
    expect(pkg.peerDependenciesMeta.zod).toEqual({ optional: true });
  });
});

describe("install progress with rate and ETA", () => {
  /** Reports items from..to of `total` to a fresh Progress, the clock `step` ms on before each; its log lines. */
  function logLines(opts: { every: number; everySeconds?: number }, total: number, runs: { from: number; to: number; step: number; worked?: boolean }[], start = 0): string[] {
    let t = 0;
    const s = stream(false);
    const p = new Progress(s, { ...opts, rate: { unit: "skills" }, now: () => t });
    t = start;
    for (const r of runs)
      for (let i = r.from; i <= r.to; i++) {
        t += r.step;
        p.update(i, total, `skill-${i}`, r.worked ?? true);
      }
    expect(s.text).not.toMatch(/\r/);
    return s.text.trim().split("\n");
  }

  it("formats durations and rates", () => {
    expect(formatDuration(4.4)).toBe("4 s");
    expect(formatDuration(185)).toBe("3 min 5 s");
    expect(formatDuration(7380)).toBe("2 h 3 min");
    expect(rateText(0, 10, 1, "skills")).toBe("");
    expect(rateText(5, 20, 2, "skills")).toBe("2.50 skills/s, ETA 6 s");
    expect(rateText(20, 20, 8, "skills")).toBe("2.50 skills/s, took 8 s");
  });

  it("prints plain lines, no carriage return, where the stream is not a terminal", () => {
    let t = 0;
    const s = stream(false);
    const p = new Progress(s, { bar: 30, every: 25, rate: { unit: "skills" }, now: () => t });
    for (let i = 1; i <= 8; i++) {
      t += 500;
      p.update(i, 8, `skill-${i}`);
    }
    expect(s.text).not.toMatch(/\r/);
    expect(s.text.trim().split("\n")).toEqual([
      "1/8 (12%)",
      "3/8 (37%) 2.00 skills/s, ETA 3 s",
      "5/8 (62%) 2.00 skills/s, ETA 2 s",
      "7/8 (87%) 2.00 skills/s, ETA 1 s",
      "8/8 (100%) 2.00 skills/s, took 4 s",
    ]);
  });

  it("shows the rate and ETA on the terminal line", () => {
    let t = 0;
    const s = stream(true);
    const p = new Progress(s, { bar: 4, every: 5, nameWidth: 5, rate: { unit: "skills" }, now: () => t });
    t = 1000;
    p.update(1, 2, "alpha");
    t = 2000;
    p.update(2, 2, "beta");
    expect(s.text).toBe(`\r[##..] 1/2 ${"".padEnd(30)} alpha\r[####] 2/2 ${"1.00 skills/s, took 2 s".padEnd(30)} beta \n`);
  });

  it("counts the rate from the first item, so a slow start (reading the library) does not inflate the ETA", () => {
    // 30 s before the first skill (a large library read and checked), then 4 skills a second
    const lines = logLines({ every: 10 }, 1000, [{ from: 1, to: 1000, step: 250 }], 30_000);
    expect(lines[0]).toBe("1/1000 (0%)");
    // 99 skills after the first in 24.75 s: 4.00 a second, 900 left: 225 s
    expect(lines[1]).toBe("100/1000 (10%) 4.00 skills/s, ETA 3 min 45 s");
    // the whole run took 30 s of reading and 250 s of skills
    expect(lines.at(-1)).toBe("1000/1000 (100%) 4.00 skills/s, took 4 min 40 s");
  });

  it("leaves skills that needed no work (a resumed install's unchanged ones) out of the rate", () => {
    // 500 unchanged skills in half a second, then 500 installed at 2 a second
    const runs = [{ from: 1, to: 500, step: 1, worked: false }, { from: 501, to: 1000, step: 500 }];
    expect(logLines({ every: 25 }, 1000, runs)).toEqual([
      "1/1000 (0%)",
      "250/1000 (25%)",
      "500/1000 (50%)",
      // 249 installed after the first installed one (t 1,000 ms) in 124.5 s: 2.00 a second, 250 left
      "750/1000 (75%) 2.00 skills/s, ETA 2 min 5 s",
      "1000/1000 (100%) 2.00 skills/s, took 4 min 11 s",
    ]);
  });

  it("writes a log line at least once a minute between percent lines (everySeconds)", () => {
    // a skill every 30 s, 1,000 skills: 1% every 5 min
    const runs = [{ from: 1, to: 10, step: 30_000 }];
    // the first item, then one line a minute (items 3, 5, 7, 9), each with the rate since the first
    expect(logLines({ every: 50, everySeconds: 60 }, 1000, runs)).toEqual([
      "1/1000 (0%)",
      "3/1000 (0%) 0.03 skills/s, ETA 8 h 18 min",
      "5/1000 (0%) 0.03 skills/s, ETA 8 h 17 min",
      "7/1000 (0%) 0.03 skills/s, ETA 8 h 16 min",
      "9/1000 (0%) 0.03 skills/s, ETA 8 h 15 min",
    ]);
    // without everySeconds: only the first line
    expect(logLines({ every: 50 }, 1000, runs)).toEqual(["1/1000 (0%)"]);
  });
});

describe("the context default follows the model's trained context", () => {
  const mini = join(repoRoot, "models", "gavel-mini.gguf");

  it("reads <arch>.context_length", async () => {
    expect(await trainedContext(mini)).toBe(2048);
    expect(await trainedContext(TINY_LLAMA_PATH)).toBe(128);
  });

  it("lowers the default to it, keeps --context and warns past it", async () => {
    const warnings: string[] = [];
    const warn = (m: string) => warnings.push(m);
    expect(await contextFor(mini, undefined, warn)).toBe(2048);
    expect(await contextFor(mini, "1024", warn)).toBe(1024);
    expect(warnings).toEqual([]);
    expect(await contextFor(mini, "4096", warn)).toBe(4096);
    expect(warnings).toEqual([expect.stringMatching(/--context 4096 exceeds the 2048 tokens the model was trained on/)]);
    // a model trained on too few tokens to route in (stories260K: 128) keeps the default, with a warning
    warnings.length = 0;
    expect(await contextFor(TINY_LLAMA_PATH, undefined, warn)).toBe(CLI_DEFAULT_CONTEXT);
    expect(warnings).toEqual([expect.stringMatching(/trained on 128 tokens only.*stays at 8192/)]);
    // a file that cannot be read leaves the default (Model.load reports the file itself)
    expect(await contextFor("/no/such.gguf", undefined, warn)).toBe(CLI_DEFAULT_CONTEXT);
    await expect(contextFor(mini, "12x", warn)).rejects.toThrow(/--context/);
  });
});

describe("the unsupported-platform message", () => {
  it("says what a user can do, not to run a build script", () => {
    for (const [platform, arch] of [["freebsd", "x64"], ["linux", "arm"], ["win32", "arm64"]]) {
      const m = addonUnavailableMessage(new Error("dlopen failed"), platform, arch);
      expect(m).toContain(`${platform}-${arch}`);
      expect(m).toMatch(/prebuilt for linux-x64, linux-arm64, win32-x64, darwin-arm64, darwin-x64 only/);
      expect(m).toMatch(/What you can do: .*linux\/amd64 container/);
      expect(m).not.toMatch(/build:native/);
    }
    // a platform package this copy's package.json does not list (a copy packed from the repository,
    // not a release): reinstalling with optional dependencies cannot help, so it is not advised
    const listed = (JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { optionalDependencies?: Record<string, string> }).optionalDependencies ?? {};
    for (const [platform, arch] of [["darwin", "arm64"], ["linux", "arm64"], ["win32", "x64"]]) {
      const m = addonUnavailableMessage(new Error("dlopen failed"), platform, arch);
      const name = `gavel-router-${platform}-${arch}`;
      if (listed[name] === undefined) {
        expect(m).toMatch(new RegExp(`does not list it.*What you can do: install ${name} beside it`));
        expect(m).not.toMatch(/--omit=optional|build:native/);
      } else expect(m).toMatch(/without --omit=optional/);
    }
    const here = addonUnavailableMessage(new Error("libggml.so: cannot open"), "linux", "x64");
    expect(here).toMatch(/libggml\.so/);
    expect(here).toMatch(/prebuilds\/linux-x64\/gavel-router\.node/);
    expect(here).not.toMatch(/build:native/);
    // the addon's own CPU check (a load that bypassed src/native/cpu.ts) says what the CPU needs
    const cpu = addonUnavailableMessage(new Error("this CPU lacks avx2,fma, which the addon's llama.cpp was compiled for"), "linux", "x64");
    expect(cpu).toMatch(/lacks avx2,fma/);
    expect(cpu).toMatch(/sse4_2, avx, avx2, fma, f16c, bmi2/);
    expect(cpu).toMatch(/What you can do: run gavel-router on a newer x86-64 machine/);
  });
});

describe("allowed-tools and host folders", () => {
  it("splits allowed-tools as hosts write it", () => {
    expect(parseAllowedTools(undefined)).toBeNull();
    expect(parseAllowedTools("Read Grep Glob")).toEqual(["Read", "Grep", "Glob"]);
    expect(parseAllowedTools("Read, Bash(git add:*), Bash(npm run test:*)")).toEqual(["Read", "Bash(git add:*)", "Bash(npm run test:*)"]);
    expect(parseAllowedTools(["Read", " Write ", 3])).toEqual(["Read", "Write"]);
    expect(parseAllowedTools(42)).toBeNull();
  });

  it("names the host of a skills folder", () => {
    expect(hostOfFolder(`${sep}p${sep}.claude${sep}skills`)).toBe("claude-code");
    expect(hostOfFolder(`${sep}home${sep}me${sep}.codex${sep}skills`)).toBe("codex");
    expect(hostOfFolder(`${sep}p${sep}.agents${sep}skills`)).toBe("agents");
    expect(hostOfFolder(`${sep}p${sep}.github${sep}skills`)).toBe("github-copilot");
    expect(hostOfFolder(`${sep}p${sep}skills`)).toBeNull();
  });
});

/** A bank view over entries and texts held in memory. */
function bankView(dir: string, skills: { id: string; name: string; description: string; body: string; source: string; contentHash: string; meta?: Record<string, unknown> }[]): SkillBankView {
  const entries = skills.map((s) => ({ ...s, disableModelInvocation: false, keyTokens: [], renderTokens: 0, nKeys: 0, offset: 0 }) as BankEntry);
  const texts = new Map(skills.map((s) => [s.contentHash, { name: s.name, description: s.description, body: s.body } as RenderableSkill]));
  return {
    dir,
    find: (q) => entries.find((e) => e.id === q) ?? entries.find((e) => e.name === q),
    text: async (e) => texts.get(e.contentHash)!,
  };
}

describe("the skill record", () => {
  const md = (extra = "", body = "Run the thing.\n") =>
    `---\nname: demo-skill\ndescription: Does the demo.\nallowed-tools: Read Bash(git log:*)\nlicense: MIT\n${extra}---\n\n${body}`;

  it("resolves the source, reads the front matter back and says whether it is current", async () => {
    const project = mkdtempSync(join(tmpdir(), "gavel-skill-record-"));
    try {
      const folder = join(project, ".claude", "skills", "demo-skill");
      mkdirSync(folder, { recursive: true });
      const file = join(folder, "SKILL.md");
      writeFileSync(file, md());
      const skill = parseSkillMarkdown(md(), file, { folderName: "demo-skill" });
      // a bank written before issue 16 records the source relative to the folder the install ran in
      const rel = join(".claude", "skills", "demo-skill", "SKILL.md");
      const bank = bankView(join(project, ".gavel", "bank"), [{ ...skill, source: rel }]);
      const r = await readSkillRecord(bank, "demo-skill");
      expect(r).toMatchObject({
        id: "demo-skill",
        body: "Run the thing.",
        allowedTools: ["Read", "Bash(git log:*)"],
        metadata: { name: "demo-skill", description: "Does the demo.", license: "MIT", "allowed-tools": "Read Bash(git log:*)" },
        path: file,
        dir: folder,
        source: rel,
        provenance: { kind: "folder", hostFolder: join(project, ".claude", "skills"), host: "claude-code" },
        sourceStatus: "current",
        contentHash: skill.contentHash,
      });
      writeFileSync(file, md("", "Run another thing.\n"));
      expect((await readSkillRecord(bank, "demo-skill")).sourceStatus).toBe("changed");
      rmSync(file);
      const gone = await readSkillRecord(bank, "demo-skill");
      // the front matter is the installed snapshot's, whether or not the file is still there
      expect(gone).toMatchObject({ sourceStatus: "missing", path: null, body: "Run the thing.", allowedTools: ["Read", "Bash(git log:*)"] });
      await expectCode(readSkillRecord(bank, "nope"), "SKILL_NOT_FOUND");
      await expectCode(readSkillRecord(bank, ""), "INVALID_ARGUMENT");
    } finally {
      rmSync(project, { recursive: true, force: true });
    }
  });

  it("reads a JSONL library's row, and knows records installed from memory", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gavel-skill-record-"));
    try {
      const lib = join(dir, "lib.jsonl");
      const row = { id: "r1", name: "row-skill", description: "A row.", body: "Body.", "allowed-tools": ["Read"], meta: { team: "x" } };
      writeFileSync(lib, `${JSON.stringify({ id: "r0", name: "other", description: "Other.", body: "" })}\n\n${JSON.stringify(row)}\n`);
      const { skillContentHash } = await import("../../src/skills/index.js");
      const hash = skillContentHash("row-skill", "A row.", "Body.");
      const bank = bankView(join(dir, "bank"), [
        { id: "r1", name: "row-skill", description: "A row.", body: "Body.", source: `${lib}:3`, contentHash: hash, meta: { "allowed-tools": ["Read"], team: "x" } },
        { id: "m1", name: "mem", description: "In memory.", body: "B", source: "input[0]", contentHash: "ab".repeat(32) },
      ]);
      const r = await readSkillRecord(bank, "r1");
      expect(r).toMatchObject({ path: lib, dir: null, provenance: { kind: "library", library: lib, line: 3 }, sourceStatus: "current", allowedTools: ["Read"] });
      expect(r.metadata).toMatchObject({ team: "x", "allowed-tools": ["Read"] });
      const m = await readSkillRecord(bank, "mem");
      expect(m).toMatchObject({ path: null, provenance: { kind: "input", label: "input[0]" }, sourceStatus: "memory", metadata: { name: "mem" } });
      expect(locateSkill("input[3]", dir).provenance.kind).toBe("input");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
