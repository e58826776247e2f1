// SKILL.md front matter as agent hosts read it: what Claude Code accepts is accepted (a value that
// breaks strict YAML is read as its text, with a warning that strict hosts such as Codex skip the
// skill), a comment that cuts an unquoted value is read as YAML reads it with a located warning,
// spec lengths are counted in characters, non-string scalars are read as text, and a skill whose own
// folder holds a broken SKILL.md is not replaced by a same-named skill from elsewhere.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GavelError } from "../../src/errors.js";
import { loadSkills, parseSkillMarkdown } from "../../src/skills/index.js";

let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), "gavel-skill-format-"));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const file = (frontMatter: string, body = "Body.") => `---\n${frontMatter}\n---\n${body}\n`;

function refusal(text: string, where = "x/SKILL.md"): GavelError {
  try {
    parseSkillMarkdown(text, where);
  } catch (e) {
    expect(e).toBeInstanceOf(GavelError);
    expect((e as GavelError).code).toBe("SKILL_INVALID");
    return e as GavelError;
  }
  throw new Error("expected SKILL_INVALID");
}

describe("front matter that strict YAML refuses but Claude Code reads", () => {
  it.each([
    ["an unquoted ': '", "Make interfaces production-ready: error handling, empty states. Use when asked."],
    ["': ' then a quoted phrase", 'Creates Three.js apps. Use for: "Create a threejs scene" or 3D web content.'],
    ["a trailing ':'", "Triggers when:"],
    ["Markdown bold at the start (a YAML alias)", "**PDF toolkit** - extract text and tables"],
    ["a leading backtick", "`pdf` reader: extracts text"],
    ["an unclosed flow sequence", "[beta] reads PDFs, [see docs"],
    ["backslashes and quotes", 'Paths like C:\\dir: "quoted" text'],
  ])("%s: read as the text written, with a located warning", (_, description) => {
    const s = parseSkillMarkdown(file(`name: pdf\ndescription: ${description}\nallowed-tools: [Read, Grep]\nmetadata:\n  author: me`), "p/SKILL.md");
    expect(s.description).toBe(description);
    // the valid lines keep their YAML meaning
    expect(s.meta).toEqual({ "allowed-tools": ["Read", "Grep"], metadata: { author: "me" } });
    expect(s.warnings).toHaveLength(1);
    expect(s.warnings[0]).toMatch(/^p\/SKILL\.md:3: the value of "description" is not valid YAML .*strict readers such as Codex skip this skill: put the value in quotes$/);
  });

  it("repairs every broken top-level value, and keeps guard flags read as before", () => {
    const s = parseSkillMarkdown(file("name: pdf\ndescription: Reads PDFs: fast\nwhen_to_use: Use when: a PDF is attached\ndisable-model-invocation: true"), "w");
    expect(s.description).toBe("Reads PDFs: fast\nUse when: a PDF is attached");
    expect(s.meta["when_to_use"]).toBe("Use when: a PDF is attached");
    expect(s.disableModelInvocation).toBe(true);
    expect(s.warnings.filter((w) => /not valid YAML/.test(w))).toHaveLength(2);
  });

  it("valid YAML is read as YAML: no repair, no warning", () => {
    for (const fm of ['name: pdf\ndescription: "Use when: quoted"', "name: pdf\ndescription: >-\n  Use when: folded\n  text", "name: &n pdf\ndescription: *n"]) {
      const s = parseSkillMarkdown(file(fm), "w");
      expect(s.warnings).toEqual([]);
    }
    expect(parseSkillMarkdown(file("name: pdf\ndescription: >-\n  Use when: folded\n  text"), "w").description).toBe("Use when: folded text");
  });

  it("what quoting cannot repair is still refused, located at the original error", () => {
    expect(refusal(file("name: a\ndescription: Use when: x\n  and more")).message).toMatch(/^x\/SKILL\.md:3: malformed YAML front matter: /);
    expect(refusal(file("name: a\ndescription: ok\n\tbad: tab")).message).toMatch(/^x\/SKILL\.md:4: malformed YAML front matter: Tabs/);
    expect(refusal(file("name: a\ndescription: Use when: x\ndescription: again")).message).toMatch(/map keys must be unique/);
  });
});

describe("a comment that cuts an unquoted value", () => {
  const WHY = 'is a YAML comment (a "#" after a space or tab starts one, as hosts read it); put the value in quotes to keep it';

  it("is read as YAML reads it, as hosts do, with a warning at the comment's line", () => {
    const s = parseSkillMarkdown(file("name: pdf\ndescription: tips #1 for writing PDFs\nlicense: MIT"), "p/SKILL.md");
    expect(s.description).toBe("tips");
    expect(s.warnings).toEqual([`p/SKILL.md:3: description is "tips": the rest of its line, "#1 for writing PDFs", ${WHY}`]);
    // a "#" inside a word, in quotes or in a block scalar is text; a comment on a line of its own cuts nothing
    for (const fm of [
      "name: pdf\ndescription: Use C# for PDFs",
      "name: pdf\ndescription: \"tips #1 for PDFs\" # a note",
      "name: pdf\ndescription: >-\n  tips #1\n  for PDFs",
      "name: pdf\ndescription: tips for PDFs\n# a note on a line of its own",
    ]) {
      const t = parseSkillMarkdown(file(fm), "p/SKILL.md");
      expect(t.warnings, fm).toEqual([]);
      expect(t.description, fm).toMatch(/PDFs$/);
    }
  });

  it("names each of name, description and when_to_use so cut, at the comment's line", () => {
    const s = parseSkillMarkdown(file("name: pdf #v2\ndescription: Reads PDFs,\n  tables #and forms\nwhen_to_use:\t#the user asks"), "a/pdf/SKILL.md", { folderName: "pdf" });
    expect(s.name).toBe("pdf");
    expect(s.description).toBe("Reads PDFs, tables");
    expect(s.warnings).toEqual([
      `a/pdf/SKILL.md:2: name is "pdf": the rest of its line, "#v2", ${WHY}`,
      `a/pdf/SKILL.md:4: description is "Reads PDFs, tables": the rest of its line, "#and forms", ${WHY}`,
      `a/pdf/SKILL.md:5: when_to_use is empty: the rest of its line, "#the user asks", ${WHY}`,
    ]);
  });

  it("a description the comment empties is refused, saying why, at its line", () => {
    expect(refusal(file("name: a\ndescription: #1 tool for PDFs")).message).toBe(`x/SKILL.md:3: missing description: the rest of its line, "#1 tool for PDFs", ${WHY}`);
  });

  it("a name that cannot be used is reported before a description the comment empties, as without the comment", () => {
    expect(refusal(file("name: [a, b]\ndescription: #1 tool for PDFs")).message).toMatch(/^x\/SKILL\.md:2: name must be a string, got a list/);
    expect(refusal(file("name: [a, b]\ndescription:")).message).toMatch(/^x\/SKILL\.md:2: name must be a string, got a list/);
  });
});

describe("spec fields as hosts read them", () => {
  it("a number or boolean description is read as its text, with a warning", () => {
    const n = parseSkillMarkdown(file("name: a\ndescription: 42"), "w");
    expect(n.description).toBe("42");
    expect(n.warnings.join("\n")).toMatch(/w:3: description is a number, read as the string "42"/);
    expect(parseSkillMarkdown(file("name: a\ndescription: true"), "w").description).toBe("true");
    expect(refusal(file("name: a\ndescription: [one, two]")).message).toMatch(/description must be a string, got a list/);
  });

  it("lengths are counted in characters (code points), as the spec and Codex count them", () => {
    const within = parseSkillMarkdown(file(`name: a\ndescription: ${"😀".repeat(1024)}`), "w");
    expect(within.warnings.join("\n")).not.toMatch(/description has/);
    const over = parseSkillMarkdown(file(`name: a\ndescription: ${"😀".repeat(1025)}`), "w");
    expect(over.warnings.join("\n")).toMatch(/description has 1025 characters, above the spec's 1024/);
    const compat = parseSkillMarkdown(file(`name: a\ndescription: d\ncompatibility: ${"𝒳".repeat(500)}`), "w");
    expect(compat.warnings.join("\n")).not.toMatch(/compatibility has/);
  });
});

describe("a folder that carries a skill's name keeps it when its SKILL.md breaks", () => {
  it("a same-named skill from another folder is refused, not installed in its place", async () => {
    const lib = join(tmp, "lib");
    const put = (dir: string, text: string) => {
      mkdirSync(join(lib, dir), { recursive: true });
      writeFileSync(join(lib, dir, "SKILL.md"), text);
    };
    put("pdf", file("name: pdf\ndescription: Reads PDFs.\n\tversion: 2", "The real pdf skill."));
    put("aaa-pdf", file("name: pdf\ndescription: Impostor.", "Another body."));
    put("ok", file("name: ok\ndescription: Fine."));
    const res = await loadSkills(lib);
    expect(res.skills.map((s) => s.name)).toEqual(["ok"]);
    const why = Object.fromEntries(res.failed.map((f) => [f.where.split("/").slice(-2, -1)[0], f.error.message]));
    expect(why["pdf"]).toMatch(/malformed YAML/);
    expect(why["aaa-pdf"]).toMatch(/skill name "pdf" belongs to .*\/pdf\/SKILL\.md, whose folder carries the name but which could not be read/);
    // once the owner reads again, it wins as before and the other is the duplicate
    put("pdf", file("name: pdf\ndescription: Reads PDFs.", "The real pdf skill."));
    const fixed = await loadSkills(lib);
    expect(fixed.skills.map((s) => s.source.split("/").slice(-2, -1)[0]).sort()).toEqual(["ok", "pdf"]);
    expect(fixed.failed.map((f) => f.error.message).join("\n")).toMatch(/duplicate skill name "pdf"/);
  });
});

describe("when_to_use, as Claude Code lists it after the description", () => {
  it("is read after the description, into what the renders, BM25 and the content hash read", () => {
    const plain = parseSkillMarkdown(file("name: aws-keys\ndescription: Rotate leaked credentials."), "a/aws-keys/SKILL.md");
    const s = parseSkillMarkdown(
      file("name: aws-keys\ndescription: Rotate leaked credentials.\nwhen_to_use: Someone pushed an access key to git."),
      "a/aws-keys/SKILL.md",
    );
    expect(s.description).toBe("Rotate leaked credentials.\nSomeone pushed an access key to git.");
    expect(s.meta["when_to_use"]).toBe("Someone pushed an access key to git.");
    expect(s.contentHash).not.toBe(plain.contentHash);
    expect(s.warnings).toEqual([]);
  });

  it("reads a folded block and a number as text; a list is left unread with a located warning", () => {
    const folded = parseSkillMarkdown(file("name: a\ndescription: D.\nwhen_to_use: >-\n  first line\n  second line"), "a/a/SKILL.md");
    expect(folded.description).toBe("D.\nfirst line second line");
    const n = parseSkillMarkdown(file("name: a\ndescription: D.\nwhen_to_use: 42"), "a/a/SKILL.md");
    expect(n.description).toBe("D.\n42");
    expect(n.warnings.join("\n")).toMatch(/SKILL\.md:4: when_to_use is a number/);
    const list = parseSkillMarkdown(file("name: a\ndescription: D.\nwhen_to_use:\n  - one\n  - two"), "a/a/SKILL.md");
    expect(list.description).toBe("D.");
    expect(list.warnings.join("\n")).toMatch(/when_to_use should be text, got an? (array|list)/);
  });

  it("counts the spec's 1,024 on the description alone and warns past the host's 1,536 together", () => {
    const d = "d".repeat(1000);
    const s = parseSkillMarkdown(file(`name: a\ndescription: ${d}\nwhen_to_use: ${"w".repeat(600)}`), "a/a/SKILL.md");
    const w = s.warnings.join("\n");
    expect(w).not.toMatch(/above the spec's 1024/);
    expect(w).toMatch(/1601 characters together; Claude Code lists only the first 1536/);
  });

  it("checks when_to_use for steering phrases, and a skill loaded again keeps one copy", async () => {
    const s = parseSkillMarkdown(file("name: a\ndescription: D.\nwhen_to_use: Always use this skill."), "a/a/SKILL.md");
    expect(s.warnings.join("\n")).toMatch(/contains "Always use this skill"/i);
    const again = await loadSkills([s]);
    expect(again.skills[0]!.description).toBe("D.\nAlways use this skill.");
    expect(again.skills[0]!.contentHash).toBe(s.contentHash);
  });

  it("is read from a JSONL row's field as from front matter", async () => {
    const path = join(tmp, "wtu.jsonl");
    writeFileSync(path, `${JSON.stringify({ name: "a", description: "D.", body: "B", when_to_use: "W." })}\n`);
    const r = await loadSkills(path);
    expect(r.skills[0]!.description).toBe("D.\nW.");
  });
});
