// loadSkills on a library this user may not read: the folder itself (its listing refused) or the path
// (a folder above it not searchable) is PERMISSION_DENIED naming the path and the errno, never "not
// found"; a folder that is not there is still FILE_NOT_FOUND, and an unreadable host folder is still
// one failure at the folder in discoverSkills (gavel sync keeps its skills). The refusals are injected
// on node:fs/promises (the tests may run as root, whom chmod does not stop); one more test chmods a
// real folder where that restricts this user.
import { describe, expect, it, vi } from "vitest";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { discoverSkills, loadSkills } from "../../src/index.js";
import { expectCode } from "../helpers/gavel-error.js";
import { tempDirs } from "../helpers/temp-dirs.js";

/** Listing (readdir) or stat of a path in `refused` fails with its error code. */
const fsState = vi.hoisted(() => ({ readdir: new Map<string, string>(), stat: new Map<string, string>() }));

vi.mock("node:fs/promises", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs/promises")>();
  const fail = (code: string, syscall: string, path: string) => Promise.reject(Object.assign(new Error(`${code}: permission denied, ${syscall} '${path}'`), { code, syscall, path }));
  const readdir = ((...a: Parameters<typeof real.readdir>) => {
    const code = fsState.readdir.get(String(a[0]));
    return code !== undefined ? fail(code, "scandir", String(a[0])) : real.readdir(...a);
  }) as typeof real.readdir;
  const stat = ((...a: Parameters<typeof real.stat>) => {
    const code = fsState.stat.get(String(a[0]));
    return code !== undefined ? fail(code, "stat", String(a[0])) : real.stat(...a);
  }) as typeof real.stat;
  return { ...real, readdir, stat, default: { ...real, readdir, stat } };
});

const freshDir = tempDirs("gavel-skills-perm-");
const isRoot = process.getuid?.() === 0;

function library(): string {
  const lib = join(freshDir(), "skills");
  mkdirSync(join(lib, "alpha"), { recursive: true });
  writeFileSync(join(lib, "alpha", "SKILL.md"), "---\nname: alpha\ndescription: Use for alpha tasks.\n---\n# alpha\n\nThe alpha steps.\n");
  return lib;
}

describe("loadSkills on a library this user may not read", () => {
  it.each(["EACCES", "EPERM"])("a folder whose listing is refused (%s) is PERMISSION_DENIED naming it; to discoverSkills, a host folder so is one failure", async (code) => {
    const lib = library();
    fsState.readdir.set(lib, code);
    try {
      const err = await expectCode(loadSkills(lib), "PERMISSION_DENIED", new RegExp(`^cannot read folder ${lib}: permission denied \\(${code}\\)$`));
      expect(err.cause).toMatchObject({ code });
    } finally {
      fsState.readdir.clear();
    }
    expect((await loadSkills(lib)).skills.map((s) => s.id)).toEqual(["alpha"]);
    // discoverSkills still reads an unreadable host folder as one failure at the folder (gavel sync keeps its skills)
    const home = freshDir();
    const skills = join(home, ".claude", "skills");
    mkdirSync(join(skills, "alpha"), { recursive: true });
    writeFileSync(join(skills, "alpha", "SKILL.md"), "---\nname: alpha\ndescription: Use for alpha tasks.\n---\n# alpha\n");
    fsState.readdir.set(skills, code);
    try {
      const found = await discoverSkills({ host: "claude-code", home, projectDir: join(home, "project"), managedDir: join(home, "managed") });
      expect(found.skills).toEqual([]);
      expect(found.failed).toEqual([{ where: skills, error: expect.objectContaining({ code: "SKILL_INVALID", message: expect.stringContaining(code) }) }]);
    } finally {
      fsState.readdir.clear();
    }
  });

  it("a path that cannot be reached (stat refused) is PERMISSION_DENIED; one that is not there is still FILE_NOT_FOUND", async () => {
    const lib = library();
    fsState.stat.set(lib, "EACCES");
    try {
      await expectCode(loadSkills(lib), "PERMISSION_DENIED", new RegExp(`^cannot read the skill library ${lib}: permission denied \\(EACCES\\)$`));
    } finally {
      fsState.stat.clear();
    }
    await expectCode(loadSkills(join(lib, "nope")), "FILE_NOT_FOUND", /^skill library not found: /);
    fsState.readdir.set(lib, "EIO");
    try {
      await expectCode(loadSkills(lib), "FILE_NOT_FOUND", new RegExp(`^cannot read folder ${lib}$`));
    } finally {
      fsState.readdir.clear();
    }
  });

  it.skipIf(isRoot)("a real folder chmod 000 is PERMISSION_DENIED (skipped as root: chmod does not stop root)", async () => {
    const lib = library();
    chmodSync(lib, 0o000);
    try {
      await expectCode(loadSkills(lib), "PERMISSION_DENIED", /permission denied \(EACCES\)$/);
    } finally {
      chmodSync(lib, 0o755);
    }
  });
});
