// The CLI's shared UI: option values, progress lines, text tables.
import { describe, expect, it } from "vitest";
import { intArg, listArg, numberArg } from "../../src/cli/ui/options.js";
import { Progress } from "../../src/cli/ui/progress.js";
import { failureText, safeText } from "../../src/cli/ui/safe-text.js";
import { loadSkills } from "../../src/skills/index.js";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { formatMs, sparkline, table } from "../../src/cli/ui/table.js";

/** A stand-in for process.stderr that records what is written. */
function stream(isTTY: boolean): NodeJS.WriteStream & { text: string } {
  const s = { isTTY, text: "", write: (chunk: string) => ((s.text += chunk), true) };
  return s as unknown as NodeJS.WriteStream & { text: string };
}

describe("option values", () => {
  it("parses integers and numbers, naming the flag when they are wrong", () => {
    expect(intArg(undefined, "jobs")).toBeUndefined();
    expect(intArg("-3", "seed")).toBe(-3);
    expect(() => intArg("2.5", "seed")).toThrow("--seed must be an integer, got 2.5");
    expect(() => intArg("2.5", "jobs", { min: 1, max: 256 })).toThrow("--jobs must be a whole number from 1 to 256, got 2.5");
    expect(() => intArg("0", "threads", { min: 1 })).toThrow("--threads must be a positive integer, got 0");
    expect(() => intArg("-1", "limit", { min: 0 })).toThrow("--limit must be a non-negative integer, got -1");
    expect(() => intArg("x", "limit", { min: 0 })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(numberArg("1e-3", "lr")).toBe(1e-3);
    expect(() => numberArg("fast", "lr")).toThrow("--lr must be a number, got fast");
    expect(listArg(" a, b,,c ")).toEqual(["a", "b", "c"]);
    expect(listArg(undefined)).toBeUndefined();
  });

  it("takes numbers written in decimal only: not hex, binary, octal, Infinity or a blank", () => {
    expect(intArg(" 12 ", "top", { min: 1 })).toBe(12);
    expect(intArg("1e3", "top", { min: 1 })).toBe(1000);
    expect(numberArg("+.5", "lr")).toBe(0.5);
    expect(numberArg("-2.", "lr")).toBe(-2);
    for (const v of ["0x10", "0b11", "0o17", "Infinity", "-Infinity", "1_000", "12px", "e3", ".", ""]) {
      expect(() => intArg(v, "top", { min: 1 }), v).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/^--top must be a positive integer, got /) }));
      expect(() => numberArg(v, "lr"), v).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/^--lr must be a number, got /) }));
    }
  });
});

describe("Progress", () => {
  it("rewrites one line on a terminal and ends it at the last item", () => {
    const s = stream(true);
    const p = new Progress(s, { bar: 4, every: 5 });
    p.update(1, 2, "alpha");
    p.update(2, 2, "beta");
    expect(s.text).toBe(`\r[##..] 1/2 ${"alpha".padEnd(40)}\r[####] 2/2 ${"beta".padEnd(40)}\n`);
    p.end(); // already ended: nothing more
    expect(s.text.endsWith("\n")).toBe(true);
    expect(s.text.split("\n")).toHaveLength(2);
  });

  it("ends a line left open when asked", () => {
    const s = stream(true);
    const p = new Progress(s, { prefix: "  ", nameWidth: 3, every: 0 });
    p.update(1, 3, "abcdef");
    p.end();
    expect(s.text).toBe("\r  1/3 abc\n");
  });

  it("prints a line every few percent elsewhere, and the last one", () => {
    const s = stream(false);
    const p = new Progress(s, { every: 10, logLine: (d, t, pct) => `${d}/${t} tasks (${pct}%)` });
    for (let i = 1; i <= 40; i++) p.update(i, 40, `t${i}`);
    const lines = s.text.trim().split("\n");
    expect(lines[0]).toBe("1/40 tasks (2%)");
    expect(lines.at(-1)).toBe("40/40 tasks (100%)");
    expect(lines.length).toBe(11);
    const quiet = stream(false);
    new Progress(quiet, { every: 0 }).update(1, 1, "x");
    expect(quiet.text).toBe("");
  });
});

describe("text output", () => {
  it("aligns tables: text left, numbers right with 3 decimals", () => {
    expect(table(["skill", "g"], [["a", 1], ["long-name", -0.25]])).toBe("skill      g\na           1.000\nlong-name  -0.250");
  });

  it("draws sparklines and durations", () => {
    expect(sparkline([0, 0.5, 1, NaN])).toBe("▁▅█ ");
    expect(formatMs(850)).toBe("850 ms");
    expect(formatMs(1234)).toBe("1.2 s");
  });
});

describe("safeText", () => {
  it("escapes controls, bidi overrides and zero-width characters, and keeps other text", () => {
    expect(safeText("evil\u001b[2Jname")).toBe("evil\\u{1b}[2Jname");
    expect(safeText("a\rb\nc\u0007\u009b")).toBe("a\\u{d}b\\u{a}c\\u{7}\\u{9b}");
    expect(safeText("abc\u202egpj.exe\u200b\u2066\ufeff")).toBe("abc\\u{202e}gpj.exe\\u{200b}\\u{2066}\\u{feff}");
    expect(safeText("ünïcödé — 日本語 \t ok")).toBe("ünïcödé — 日本語 \t ok");
  });
});

describe("a failed skill's line", () => {
  it("names the file (and line) once, for the failures loadSkills reports", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gavel-failure-line-"));
    try {
      mkdirSync(join(dir, "skills", "badyaml"), { recursive: true });
      mkdirSync(join(dir, "skills", "nofm"), { recursive: true });
      mkdirSync(join(dir, "skills", "good"), { recursive: true });
      writeFileSync(join(dir, "skills", "badyaml", "SKILL.md"), "---\nname: badyaml\ndescription: ok\n\tversion: 2\n---\nbody\n");
      writeFileSync(join(dir, "skills", "nofm", "SKILL.md"), "just text\n");
      writeFileSync(join(dir, "skills", "good", "SKILL.md"), "---\nname: good\ndescription: A good skill.\n---\nbody\n");
      const lib = join(dir, "lib.jsonl");
      writeFileSync(lib, `${JSON.stringify({ name: "a", description: "A skill.", body: "x" })}\n{bad json\n`);
      const lines = [...(await loadSkills(join(dir, "skills"))).failed, ...(await loadSkills(lib)).failed].map((f) => failureText(f.where, f.error.message));
      const yaml = join(dir, "skills", "badyaml", "SKILL.md");
      expect(lines).toEqual([
        expect.stringMatching(new RegExp(`^${escape(yaml)}:4: malformed YAML front matter: `)),
        `${join(dir, "skills", "nofm", "SKILL.md")}: no YAML front matter (a SKILL.md starts with a '---' line)`,
        expect.stringMatching(new RegExp(`^${escape(lib)}:2: not valid JSON: `)),
      ]);
      for (const line of lines) expect(line.split(dir).length - 1, line).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("adds the location when the message lacks it, and makes the text inert for a terminal", () => {
    expect(failureText("input[3]", "name is missing")).toBe("input[3]: name is missing");
    expect(failureText("/a/SKILL.md", "/a/SKILL.md: bad\u001b[2J")).toBe("/a/SKILL.md: bad\\u{1b}[2J");
  });
});

/** `s` for a RegExp, literally. */
function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
