// Issue 17, "hostile and look-alike skills": names are compared in Unicode NFC (an NFD "café" and an
// NFC "café" are one name), and look-alike names (mixed scripts, e.g. a Cyrillic "а" in "react";
// invisible characters; a name that reads as another's) are flagged as spec warnings, which install
// and list show.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadSkills, Model, Projections, Router } from "../../src/index.js";
import { lookalikeWarnings, nameSkeleton, scriptsOf } from "../../src/skills/confusables.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";

const root = mkdtempSync(join(tmpdir(), "gavel-names-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
/** A library folder holding one skill folder per [folder, front-matter name] (name null: none). */
function library(skills: [string, string | null][]): string {
  const dir = join(root, `lib${n++}`);
  for (const [folder, name] of skills) {
    mkdirSync(join(dir, folder), { recursive: true });
    const fm = name === null ? "" : `name: ${JSON.stringify(name)}\n`;
    writeFileSync(join(dir, folder, "SKILL.md"), `---\n${fm}description: Builds ${folder} apps with components and hooks.\n---\n\nUse it for ${folder}.\n`);
  }
  return dir;
}
const cafeNfc = "caf\u00e9";
const cafeNfd = "cafe\u0301";
const cyrillicReact = "re\u0430ct"; // Cyrillic а (U+0430)
const warningsOf = (skills: { name: string; warnings: string[] }[], name: string) => skills.find((s) => s.name === name)?.warnings ?? [];

describe("names in NFC", () => {
  it("reads a name in NFC, warns when it was not, and takes an NFD and an NFC spelling as one name (the later one is a duplicate)", async () => {
    expect(cafeNfc).not.toBe(cafeNfd);
    const { skills, failed } = await loadSkills(library([["a-cafe", cafeNfc], ["b-cafe", cafeNfd]]));
    expect(skills.map((s) => s.name)).toEqual([cafeNfc]);
    expect(failed).toHaveLength(1);
    expect(failed[0].error.message).toMatch(/duplicate skill name "café"/);
    const alone = await loadSkills(library([["b-cafe", cafeNfd]]));
    expect(alone.skills[0].name).toBe(cafeNfc);
    expect(alone.skills[0].id).toBe(cafeNfc);
    expect(alone.skills[0].warnings.join("\n")).toMatch(/was not in Unicode NFC form; it is read in NFC/);
  });

  it("a folder named in NFD (as macOS writes it) gives an NFC name, and an NFC name in its front matter does not differ from it", async () => {
    const byFolder = await loadSkills(library([[cafeNfd, null]]));
    expect(byFolder.skills[0].name).toBe(cafeNfc);
    const named = await loadSkills(library([[cafeNfd, cafeNfc]]));
    expect(named.skills[0].name).toBe(cafeNfc);
    expect(named.skills[0].warnings.join("\n")).not.toMatch(/differs from its folder/);
  });
});

describe("look-alike names", () => {
  it("flags a name that mixes scripts, naming the odd letters, and one with invisible characters", () => {
    expect(scriptsOf(cyrillicReact)).toEqual(["Latin", "Cyrillic"]);
    const w = lookalikeWarnings(cyrillicReact, "x/SKILL.md:2", cyrillicReact);
    expect(w).toHaveLength(1);
    expect(w[0]).toMatch(/mixes scripts \(Latin, Cyrillic: "а" U\+0430\)/);
    expect(lookalikeWarnings("re\u200bact", "at", "re\u200bact")[0]).toMatch(/invisible characters \(U\+200B\)/);
    // one writing system each: no warning
    for (const ok of ["react", "pdf-tools-2", "сервер", "ελληνικά", "日本語のスキル", "한국어漢字", "café"]) expect(lookalikeWarnings(ok, "at", ok), ok).toEqual([]);
  });

  it("gives look-alike names one skeleton, and different names different ones", () => {
    for (const alike of [cyrillicReact, "REACT", "re\u200bact", "rеасt", "ｒｅａｃｔ"]) expect(nameSkeleton(alike), alike).toBe(nameSkeleton("react"));
    expect(nameSkeleton("g00gle")).toBe(nameSkeleton("google"));
    for (const other of ["reacts", "redact", "vue", "rust"]) expect(nameSkeleton(other)).not.toBe(nameSkeleton("react"));
  });

  it("warns on the later of two skills whose names look alike, and on the mixed-script one, not on the honest one", async () => {
    const { skills, failed } = await loadSkills(library([["a-react", "react"], ["b-react", cyrillicReact], ["c-vue", "vue"]]));
    expect(failed).toEqual([]);
    expect(skills.map((s) => s.name)).toEqual(["react", cyrillicReact, "vue"]);
    expect(warningsOf(skills, "react").join("\n")).not.toMatch(/look|script/);
    const w = warningsOf(skills, cyrillicReact).join("\n");
    expect(w).toMatch(/mixes scripts \(Latin, Cyrillic/);
    expect(w).toMatch(/name "reаct" looks like "react" \(.*a-react.*\); a look-alike name can pass for another skill/);
    expect(warningsOf(skills, "vue").join("\n")).not.toMatch(/look|script/);
  });
});

describe("at install", () => {
  let model: Model;
  beforeAll(async () => {
    model = await Model.load(TINY_LLAMA_PATH, { contextSize: 512, threads: 1 });
  });
  afterAll(async () => {
    await model?.dispose();
  });

  it("install reports the look-alike warning, list keeps it, and an NFD name finds the NFC skill", async () => {
    const projections = await Projections.random(model, { seed: 9, dim: 16 });
    const router = await Router.open(model, { projections, bankDir: join(root, "bank"), skillBudget: 256 });
    const report = await router.install(library([["a-react", "react"], ["b-react", cyrillicReact], ["c-cafe", cafeNfd]]));
    expect(report.installed).toHaveLength(3);
    expect(report.warnings.find((w) => w.name === cyrillicReact)?.warnings.join("\n")).toMatch(/mixes scripts.*\n?.*looks like "react"/s);
    expect(router.list().find((s) => s.name === cyrillicReact)?.warnings?.join("\n")).toMatch(/looks like "react"/);
    expect(router.list().find((s) => s.name === "react")?.warnings ?? []).toEqual(expect.not.arrayContaining([expect.stringMatching(/looks like/)]));
    expect((await router.get(cafeNfd)).name).toBe(cafeNfc);
    expect(await router.uninstall(cafeNfd)).toBe(true);
    expect(router.list().map((s) => s.name)).toEqual(["react", cyrillicReact]);
    await router.close();
  });
});
