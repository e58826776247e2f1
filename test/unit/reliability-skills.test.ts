// Issue 17, bounded reads of skills and front matter: a SKILL.md that is a link to /dev/zero or
// /dev/urandom, a FIFO (or a link to one), or a directory is that skill's SKILL_INVALID, at once,
// and the other skills still load; front matter is bounded in bytes and keys before YAML builds
// anything (60K keys took 158 s); `disable-model-invocation` is read as hosts read it.
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseDocument } from "yaml";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { loadSkills, parseSkillMarkdown } from "../../src/skills/index.js";
import { MAX_DESCRIPTION_BYTES, MAX_FRONT_MATTER_BYTES, MAX_FRONT_MATTER_KEYS } from "../../src/skills/parse.js";
import { GavelError } from "../../src/errors.js";
import { expectCode } from "../helpers/gavel-error.js";

// YAML's parse, counted (it still parses): a front matter refused by its size is never parsed
vi.mock("yaml", async (importOriginal) => {
  const yaml = await importOriginal<typeof import("yaml")>();
  return { ...yaml, parseDocument: vi.fn(yaml.parseDocument) };
});

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "gavel-rel-skills-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const md = (name: string, extra = "") => `---\nname: ${name}\ndescription: Does ${name} things.\n${extra}---\nBody of ${name}.\n`;

function invalid(text: string): GavelError {
  try {
    parseSkillMarkdown(text, "x/SKILL.md");
  } catch (e) {
    expect(e).toBeInstanceOf(GavelError);
    expect((e as GavelError).code).toBe("SKILL_INVALID");
    return e as GavelError;
  }
  throw new Error("expected SKILL_INVALID");
}

describe("hostile SKILL.md files are per-skill SKILL_INVALID, never a hang or unbounded memory", () => {
  it("links to /dev/zero and /dev/urandom, a FIFO, a link to a FIFO, a directory", async () => {
    const lib = join(root, "lib");
    const folder = async (name: string) => {
      await mkdir(join(lib, name), { recursive: true });
      return join(lib, name, "SKILL.md");
    };
    await writeFile(await folder("good"), md("good"));
    await symlink("/dev/zero", await folder("zero"));
    await symlink("/dev/urandom", await folder("urandom"));
    execFileSync("mkfifo", [await folder("fifo")]);
    execFileSync("mkfifo", [join(root, "elsewhere.fifo")]);
    await symlink(join(root, "elsewhere.fifo"), await folder("fifo-link"));
    await mkdir(await folder("dir"));
    const rss0 = process.memoryUsage().rss;
    // no clock: a hang (reading the FIFO, /dev/zero or /dev/urandom) ends in the test's timeout
    const res = await loadSkills(lib);
    expect(process.memoryUsage().rss - rss0).toBeLessThan(256 * 1024 * 1024);
    expect(res.skills.map((s) => s.name)).toEqual(["good"]);
    const why = Object.fromEntries(res.failed.map((f) => [f.where.split("/").slice(-2, -1)[0], f.error]));
    expect(Object.keys(why).sort()).toEqual(["dir", "fifo", "fifo-link", "urandom", "zero"]);
    for (const e of Object.values(why)) expect(e.code).toBe("SKILL_INVALID");
    expect(why.zero.message).toMatch(/is a device, not a regular file/);
    expect(why.urandom.message).toMatch(/is a device, not a regular file/);
    expect(why.fifo.message).toMatch(/is a FIFO \(named pipe\), not a regular file/);
    expect(why["fifo-link"].message).toMatch(/is a FIFO/);
    expect(why.dir.message).toMatch(/is a directory/);
  });

  it("a SKILL.md given directly as a link to /dev/zero is refused (FILE_NOT_FOUND: not a file)", async () => {
    const p = join(root, "direct.md");
    await symlink("/dev/zero", p);
    await expectCode(loadSkills(p), "FILE_NOT_FOUND");
  });

  it("a symlinked regular SKILL.md still loads (links are followed to regular files)", async () => {
    const lib = join(root, "linked");
    await mkdir(join(lib, "real"), { recursive: true });
    await writeFile(join(root, "shared.md"), md("real"));
    await symlink(join(root, "shared.md"), join(lib, "real", "SKILL.md"));
    const res = await loadSkills(lib);
    expect(res.skills.map((s) => s.name)).toEqual(["real"]);
  });
});

describe("front matter is bounded before YAML builds anything", () => {
  it("60K keys (158 s once): a located SKILL_INVALID before YAML parses anything", () => {
    const keys = Array.from({ length: 60_000 }, (_, i) => `k${i}: ${i}`).join("\n");
    // the cost was the parse: it guards complexity by counting parses (none), not by a clock
    const parses = vi.mocked(parseDocument);
    parses.mockClear();
    const e = invalid(`---\nname: a\ndescription: b\n${keys}\n---\nbody`);
    expect(parses).not.toHaveBeenCalled();
    // (the count sees the parser's parses: a front matter within the caps is parsed)
    parseSkillMarkdown(md("counted"), "w");
    expect(parses).toHaveBeenCalled();
    expect(e.message).toMatch(new RegExp(`^x/SKILL\\.md:2: front matter is \\d+ bytes, above the cap of ${MAX_FRONT_MATTER_BYTES}`));
  });

  it("more keys than the cap within the byte cap (block and flow maps): refused fast", () => {
    const block = Array.from({ length: 5000 }, (_, i) => `k${i}: 1`).join("\n");
    const flow = `meta: {${Array.from({ length: 5000 }, (_, i) => `k${i}: 1`).join(", ")}}`;
    for (const extra of [block, flow]) {
      expect(Buffer.byteLength(extra)).toBeLessThan(MAX_FRONT_MATTER_BYTES);
      // the key-count pass refuses it before YAML builds a map (the message is that pass's); no clock
      // here: a wall-time bound failed on a loaded machine, and speed is the benches' business
      const e = invalid(`---\nname: a\ndescription: b\n${extra}\n---\nbody`);
      expect(e.message).toMatch(new RegExp(`front matter has more than ${MAX_FRONT_MATTER_KEYS} keys`));
    }
  });

  it("a duplicate key is still refused, located at the repeated key; nested maps too", () => {
    expect(invalid("---\nname: a\ndescription: b\nname: c\n---\n").message).toMatch(/^x\/SKILL\.md:4: malformed YAML front matter: map keys must be unique \("name" is repeated\)/);
    expect(invalid("---\nname: a\ndescription: b\nmetadata:\n  v: 1\n  v: 2\n---\n").message).toMatch(/^x\/SKILL\.md:6: .*"v" is repeated/);
    // 1 and "1" are different keys, as YAML has them
    expect(parseSkillMarkdown("---\nname: a\ndescription: b\nmetadata:\n  1: x\n  '1': y\n---\n", "w").name).toBe("a");
  });

  it("a normal front matter with nested metadata still parses", () => {
    const s = parseSkillMarkdown(md("ok", "metadata:\n  author: me\n  version: '1'\nallowed-tools: [Read, Grep]\n"), "w");
    expect(s.meta).toMatchObject({ metadata: { author: "me", version: "1" }, "allowed-tools": ["Read", "Grep"] });
  });
});

describe("disable-model-invocation is read as hosts read it", () => {
  const flag = (v: string) => parseSkillMarkdown(md("a", `disable-model-invocation: ${v}\n`), "w");
  it.each(["yes", "Yes", "YES", "on", "On", "1", "true", "True", "TRUE", '"true"', "'yes'"])("%s → true", (v) => {
    const s = flag(v);
    expect(s.disableModelInvocation).toBe(true);
    if (!/^(true|True|TRUE)$/.test(v)) expect(s.warnings.join("\n")).toMatch(/disable-model-invocation is the (string|number) .*read as the boolean true/);
    else expect(s.warnings.join("\n")).not.toMatch(/disable-model-invocation/);
  });
  it.each(["no", "Off", "0", "false", "FALSE"])("%s → false", (v) => {
    expect(flag(v).disableModelInvocation).toBe(false);
  });
  it("an unknown value is false with a warning", () => {
    for (const v of ["maybe", "2", "[true]"]) {
      const s = flag(v);
      expect(s.disableModelInvocation).toBe(false);
      expect(s.warnings.join("\n")).toMatch(/disable-model-invocation should be true or false, got .*; read as false/);
    }
  });
  it("JSONL rows follow the same rule", async () => {
    const p = join(root, "rows.jsonl");
    await writeFile(p, [{ name: "r1", description: "d", "disable-model-invocation": "yes" }, { name: "r2", description: "d", disableModelInvocation: 1 }].map((r) => JSON.stringify(r)).join("\n"));
    const res = await loadSkills(p);
    expect(res.skills.map((s) => s.disableModelInvocation)).toEqual([true, true]);
  });
});

describe("a description is bounded in every source (the encoder's cut searched over it)", () => {
  const cap = MAX_DESCRIPTION_BYTES;
  it("a JSONL row above the cap is that row's SKILL_INVALID, naming it; one at the cap loads", async () => {
    const file = join(root, "descriptions.jsonl");
    const rows = [
      { name: "at-cap", description: "é".repeat(cap / 2), body: "b" },
      { name: "over", description: `${"é".repeat(cap / 2)}x`, body: "b" },
      { name: "with-when", description: "d".repeat(cap - 10), body: "b", meta: { when_to_use: "Use it when the user asks." } },
    ];
    await writeFile(file, rows.map((r) => JSON.stringify(r)).join("\n") + "\n");
    const r = await loadSkills(file);
    expect(r.skills.map((s) => s.name)).toEqual(["at-cap"]);
    expect(r.failed.map((f) => [f.where, f.error.code, f.error.message])).toEqual([
      [`${file}:2`, "SKILL_INVALID", `${file}:2: description is ${cap + 1} bytes, above the cap of ${cap}`],
      [`${file}:3`, "SKILL_INVALID", expect.stringMatching(new RegExp(`^.*:3: description and when_to_use are \\d+ bytes, above the cap of ${cap}$`))],
    ]);
  });

  it("an array entry above the cap is refused the same; a SKILL.md's description is within its front matter's cap", async () => {
    const r = await loadSkills([{ name: "big", description: "x".repeat(8 * cap), body: "" }]);
    expect(r.skills).toEqual([]);
    expect(r.failed[0].error.message).toBe(`input[0]: description is ${8 * cap} bytes, above the cap of ${cap}`);
    expect(MAX_FRONT_MATTER_BYTES).toBeLessThanOrEqual(cap);
  });
});
