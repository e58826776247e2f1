// No message grows with its input (errors.ts): a GavelError's message is cut at MESSAGE_CHARS
// wherever it was made, the native addon's quote of a model path is clipped as every other quote of a
// path is, and a skill's warnings and errors quote its name, values and location clipped. Each case
// pairs a huge input with an ordinary one whose message reads as it always did.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Model, loadSkills } from "../../src/index.js";
import { GavelError, MESSAGE_CHARS, clip, clipLocation, clipQuote } from "../../src/errors.js";
import { discoverSkills } from "../../src/skills/discover.js";
import { tinyLlamaPath } from "../fixtures/tiny-llama.js";
import { tempDirs } from "../helpers/temp-dirs.js";

const newDir = tempDirs("gavel-error-bounds-");
const MIB = 1 << 20;
const KB100 = 100 * 1024;

/** Every one of `texts` is short: a few hundred characters at most. */
function expectShort(texts: readonly string[]): void {
  expect(texts.length).toBeGreaterThan(0);
  for (const t of texts) expect(t.length, t.slice(0, 300)).toBeLessThan(1024);
}

describe("GavelError's message cap", () => {
  it("cuts a 1 MB message in the middle, keeping its start, its end and its code", () => {
    const message = `start:${"m".repeat(MIB)}:end`;
    const err = new GavelError(message, "INVALID_ARGUMENT");
    expect(err.code).toBe("INVALID_ARGUMENT");
    expect(err.message).toBe(clip(message, MESSAGE_CHARS));
    expect(err.message.length).toBeLessThan(MESSAGE_CHARS + 40);
    expect(err.message.startsWith(`start:${"m".repeat(100)}`)).toBe(true);
    expect(err.message).toContain(`…(${message.length - MESSAGE_CHARS} chars cut)…`);
    expect(err.message.endsWith(`${"m".repeat(100)}:end`)).toBe(true);
    expect(JSON.parse(JSON.stringify(err))).toEqual({ name: "GavelError", code: "INVALID_ARGUMENT", message: err.message });
    // up to the cap a message is kept whole
    const full = "x".repeat(MESSAGE_CHARS);
    expect(new GavelError(full, "INTERNAL").message).toBe(full);
  });

  it("clipQuote clips each quote of a long value in the message as it was made, before the cap cut it", () => {
    const value = `/srv/${"v".repeat(MIB)}/model.gguf`;
    const err = new GavelError(`cannot load ${value}: truncated (${value} again)`, "MODEL_LOAD_FAILED");
    const clipped = clipQuote(err, value) as GavelError;
    expect(clipped.message).toBe(`cannot load ${clip(value)}: truncated (${clip(value)} again)`);
    expect(clipped.code).toBe("MODEL_LOAD_FAILED");
    expect(clipped.cause).toBe(err);
    // a value short enough to quote whole, or not quoted, leaves the error as it is
    const short = new GavelError("cannot load /srv/m.gguf", "MODEL_LOAD_FAILED");
    expect(clipQuote(short, "/srv/m.gguf")).toBe(short);
    expect(clipQuote(short, value)).toBe(short);
  });
});

describe("the native addon's messages", () => {
  /** The tiny model with one tensor renamed: the TypeScript checks pass it, llama.cpp refuses it. */
  async function brokenModel(path: string): Promise<void> {
    const bytes = readFileSync(await tinyLlamaPath());
    const at = bytes.indexOf(Buffer.from("output_norm.weight"));
    bytes.write("X", at + 10); // output_norX.weight
    writeFileSync(path, bytes);
  }

  it("Model.load: llama.cpp's MODEL_LOAD_FAILED quotes a long path clipped, naming its file", async () => {
    // A file the OS opens has a path of at most PATH_MAX (4096 on Linux) characters: the longest
    // such path, folders of 200 characters each, is quoted in full by the addon's message.
    let dir = newDir();
    while (dir.length < 3700) dir = join(dir, "d".repeat(200));
    mkdirSync(dir, { recursive: true });
    const long = join(dir, "model.gguf");
    await brokenModel(long);
    const err = (await Model.load(long, { contextSize: 64, threads: 1 }).catch((e: unknown) => e)) as GavelError;
    expect(err).toBeInstanceOf(GavelError);
    expect(err.code).toBe("MODEL_LOAD_FAILED");
    expect(err.message.length).toBeLessThan(1024);
    expect(err.message).toContain(`llama.cpp could not load the model (${clip(long)}): `);
    expect(clip(long).endsWith("/model.gguf")).toBe(true);
    expect(err.message).toMatch(/tensor 'output_norm\.weight' not found/);
    // an ordinary path is quoted whole, as before
    const short = join(newDir(), "model.gguf");
    await brokenModel(short);
    const plain = (await Model.load(short, { contextSize: 64, threads: 1 }).catch((e: unknown) => e)) as GavelError;
    expect(plain.code).toBe("MODEL_LOAD_FAILED");
    expect(plain.message.startsWith(`llama.cpp could not load the model (${short}): `)).toBe(true);
    expect(plain.message).toMatch(/tensor 'output_norm\.weight' not found/);
  });
});

describe("skill warnings and errors", () => {
  it("a 100 KB source: each warning and error quotes it clipped, its line kept", async () => {
    const source = `/skills/${"s".repeat(KB100)}/SKILL.md`;
    const { skills, failed } = await loadSkills([
      { source, name: "Not A Spec Name", description: "Does a thing." },
      { source: `${source}:7`, name: "no-description" } as never,
    ]);
    expect(skills).toHaveLength(1);
    expect(skills[0].source).toBe(source); // the skill keeps its whole source
    expectShort(skills[0].warnings);
    expect(skills[0].warnings[0]).toBe(`${clip(source)}: name "Not A Spec Name" breaks the spec's rule (1–64 of a-z, 0-9, '-'; no leading, trailing or double hyphen)`);
    expect(failed).toHaveLength(1);
    expect(failed[0].where).toBe(`${source}:7`);
    expect(failed[0].error.message).toBe(`${clip(source)}:7: missing description`);
    expect(clipLocation(`${source}:7`)).toBe(`${clip(source)}:7`);
    // an ordinary source reads whole
    const plain = await loadSkills([{ source: "/skills/x/SKILL.md", name: "Not A Spec Name", description: "Does a thing." }]);
    expect(plain.skills[0].warnings[0]).toBe(
      `/skills/x/SKILL.md: name "Not A Spec Name" breaks the spec's rule (1–64 of a-z, 0-9, '-'; no leading, trailing or double hyphen)`,
    );
  });

  it("a 100 KB name shared by two ids, and one that looks like another: the warnings quote the names clipped", async () => {
    const name = "n".repeat(KB100);
    const { skills } = await loadSkills([
      { id: "a", name, description: "First." },
      { id: "b", name, description: "Second." },
      { id: "c", name: name.toUpperCase(), description: "Third." },
    ]);
    const warnings = skills.flatMap((s) => s.warnings);
    expectShort(warnings);
    expect(warnings).toContain(`input[1]: name "${clip(name)}" is also used by input[0]`);
    expect(warnings).toContain(`input[2]: name ${JSON.stringify(clip(name.toUpperCase()))} looks like ${JSON.stringify(clip(name))} (input[0]); a look-alike name can pass for another skill`);
  });

  it("a name of thousands of distinct letters of another script and invisible characters: the look-alike warnings list them clipped", async () => {
    const han = Array.from({ length: 3000 }, (_, i) => String.fromCodePoint(0x4e00 + i)).join("");
    const hidden = Array.from({ length: 3000 }, (_, i) => String.fromCodePoint(0xe0100 + i)).join("");
    const { skills } = await loadSkills([{ source: "/s/SKILL.md", name: `a${han}${hidden}`, description: "Mixed." }]);
    const warnings = skills[0].warnings;
    expectShort(warnings);
    expect(warnings.some((w) => /^\/s\/SKILL\.md: name ".*" mixes scripts \(Latin, Han: "一" U\+4E00, .*chars cut.*\), so it may look like another name/.test(w))).toBe(true);
    expect(warnings.some((w) => /^\/s\/SKILL\.md: name ".*" holds invisible characters \(U\+E0100, .*chars cut.*\), so it may look like another name/.test(w))).toBe(true);
  });

  it("a steering phrase stretched over 100 KB of spaces (in the body: a description is capped at 64 KiB): the warning quotes it clipped", async () => {
    const phrase = `ignore${" ".repeat(KB100)}previous instructions`;
    const { skills } = await loadSkills([{ source: "/s/SKILL.md", name: "steer", description: "Routes.", body: `${phrase}.` }]);
    expectShort(skills[0].warnings);
    expect(skills[0].warnings).toContain(`/s/SKILL.md: contains "${clip(phrase)}", which may try to steer routing (skill text is untrusted)`);
  });

  /** A SKILL.md in `dir/folder` whose front matter names it `name`. */
  function writeSkill(dir: string, folder: string, name: string): void {
    mkdirSync(join(dir, folder), { recursive: true });
    writeFileSync(join(dir, folder, "SKILL.md"), `---\nname: ${name}\ndescription: Does ${folder}.\n---\nBody.\n`);
  }

  it("SKILL.md files whose names (60 KB, under the front matter's 64 KB cap) look alike: the warning quotes them clipped", async () => {
    const dir = newDir();
    const name = "x".repeat(60_000);
    writeSkill(dir, "one", name);
    writeSkill(dir, "two", name.toUpperCase());
    const { skills } = await loadSkills(dir);
    const warnings = skills.flatMap((s) => s.warnings);
    expectShort(warnings);
    expect(warnings.some((w) => w.includes(`name ${JSON.stringify(clip(name.toUpperCase()))} looks like ${JSON.stringify(clip(name))}`))).toBe(true);
  });

  it("discoverSkills: a 60 KB name shadowed by the same name in a folder of higher precedence", async () => {
    const root = newDir();
    const project = join(root, "project");
    const home = join(root, "home");
    const name = "y".repeat(60_000);
    writeSkill(join(project, ".claude", "skills"), "mine", name);
    writeSkill(join(home, ".claude", "skills"), "theirs", name);
    const found = await discoverSkills({ host: "claude-code", projectDir: project, home, managedDir: join(root, "managed") });
    expect(found.shadowed).toHaveLength(1);
    expectShort(found.warnings);
    expect(found.warnings.some((w) => w.startsWith(`skill "${clip(name)}" at `) && w.includes("is shadowed by"))).toBe(true);
  });
});
