import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { locateSkill, skillFileOf } from "../../src/route/skill-record.js";

const dir = mkdtempSync(join(tmpdir(), "gavel-skill-file-of-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The reference: locateSkill's file for a folder skill (its path, else the source resolved), null for the others. */
function reference(source: string, bankDir: string): string | null {
  const loc = locateSkill(source, bankDir);
  return loc.provenance.kind === "folder" ? resolve(loc.path ?? resolve(source)) : null;
}

describe("skillFileOf (the watcher's pass over every installed skill)", () => {
  it("names the file locateSkill finds, for sources of every kind", () => {
    const project = join(dir, "project");
    const bankDir = join(project, ".gavel", "bank");
    mkdirSync(bankDir, { recursive: true });
    const sources: string[] = ["input[0]", "input[12]", "skills.jsonl:3", join(dir, "lib.jsonl:7"), "notes.txt", join(dir, "a.json")];
    const rand = (n: number) => Math.floor(Math.random() * n);
    for (let i = 0; i < 40; i++) {
      const name = `s${i}-${rand(1e6).toString(36)}`;
      const folder = join(i % 2 ? project : dir, "skills", name);
      const file = join(folder, i % 5 === 0 ? "skill.MD" : "SKILL.md");
      if (i % 3 !== 0) {
        mkdirSync(folder, { recursive: true });
        writeFileSync(file, `---\nname: ${name}\ndescription: d\n---\nbody\n`);
      }
      sources.push(file, `${folder}/../${name}/SKILL.md`, relative(project, file), relative(process.cwd(), file), `missing/${name}/SKILL.md`);
    }
    for (const source of sources) expect(skillFileOf(source, bankDir), source).toBe(reference(source, bankDir));
    // a relative source found under the project that holds the bank, not the current folder
    const inProject = join("skills", "s1-x", "SKILL.md");
    mkdirSync(join(project, "skills", "s1-x"), { recursive: true });
    writeFileSync(join(project, inProject), "---\nname: s1-x\ndescription: d\n---\n");
    expect(skillFileOf(inProject, bankDir)).toBe(join(project, inProject));
  });
});
