// A bank with damaged parts is repaired by the verbs its error names: a key block that fails its
// checksum or lies past the end of a truncated keys file, and a stored text that no longer reads as
// its content. Routes refuse such a bank (CORRUPT_FILE naming the skills), while a reinstall of the
// same skills re-encodes just the damaged ones and an uninstall removes one; afterwards routes work
// and `gavel check` finds the bank clean. Before, the open itself failed, so neither verb could run,
// and a reinstall of a skill whose text was damaged reported it "unchanged"; a text replaced by a
// folder failed the reinstall (EISDIR, SKILL_INVALID) and a stray folder in texts/ the uninstall.
import { mkdir, mkdtemp, readdir, readFile, rm, stat, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Model, Projections, Router } from "../../src/index.js";
import { checkBank } from "../../src/bank/check.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";
import { freshSeed } from "../helpers/random.js";
import { expectCode } from "../helpers/gavel-error.js";

const seed = freshSeed();
let model: Model;
let projections: Projections;
const dirs: string[] = [];
const open = (bankDir: string, extra: { readOnly?: boolean } = {}) => Router.open(model, { projections, bankDir, skillBudget: 128, ...extra });
const skills = ["alpha", "bravo", "charlie", "delta"].map((name, i) => ({
  name,
  description: `Skill ${name}: ${["parse csv files", "resize images", "query a database", "write release notes"][i]} (seed ${seed}).`,
  body: `# ${name}\n${"Steps for the task. ".repeat(3 + i)}`,
}));

beforeAll(async () => {
  model = await Model.load(TINY_LLAMA_PATH, { contextSize: 512, threads: 1 });
  projections = await Projections.random(model, { seed: 11, dim: 16 });
});
afterAll(async () => {
  await model?.dispose();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function bank(): Promise<{ dir: string; entries: { id: string; name: string; offset: number; nKeys: number; contentHash: string }[] }> {
  const dir = await mkdtemp(join(tmpdir(), "gavel-repair-"));
  dirs.push(dir);
  const router = await open(dir);
  await router.install(skills);
  await router.close();
  const entries = JSON.parse(await readFile(join(dir, "manifest.json"), "utf8")).entries;
  return { dir, entries };
}

describe(`a damaged bank is repaired by reinstall or uninstall (seed ${seed})`, () => {
  it("a key block that fails its checksum: routes name it; a reinstall re-encodes it alone; the bank checks clean", async () => {
    const { dir, entries } = await bank();
    const bad = entries.find((e) => e.name === "bravo")!;
    const keys = await readFile(join(dir, "keys.bin"));
    keys[bad.offset * 16 * 4 + 7] ^= 0x40;
    await writeFile(join(dir, "keys.bin"), keys);
    for (const readOnly of [false, true]) {
      const r = await open(dir, { readOnly });
      try {
        await expectCode(r.route("resize the images"), "CORRUPT_FILE", /damaged keys.*"[^"]*bravo[^"]*".*reinstall or uninstall/);
        expect((await r.list()).map((s) => s.name).sort()).toEqual(["alpha", "bravo", "charlie", "delta"]);
      } finally {
        await r.close();
      }
    }
    const r = await open(dir);
    try {
      const report = await r.install(skills);
      expect(report.installed.map((id) => entries.find((e) => e.id === id)?.name)).toEqual(["bravo"]);
      expect(report.unchanged).toHaveLength(3);
      expect((await r.route("resize the images", { abstain: false })).skill).not.toBeNull();
    } finally {
      await r.close();
    }
    expect((await checkBank(dir)).problems).toEqual([]);
  });

  it("a keys file cut short: the skills past its end are damaged; uninstalling the last one and reinstalling the rest repairs it", async () => {
    const { dir, entries } = await bank();
    const last = [...entries].sort((a, b) => b.offset - a.offset)[0];
    await truncate(join(dir, "keys.bin"), (last.offset + last.nKeys) * 16 * 4 - 10);
    const r = await open(dir);
    try {
      await expect(r.route("parse the csv")).rejects.toMatchObject({ code: "CORRUPT_FILE", message: expect.stringContaining(JSON.stringify(last.id)) });
      expect(await r.uninstall(last.id)).toBe(true);
      expect((await r.route("parse the csv", { abstain: false })).skill).not.toBeNull();
      const report = await r.install(skills);
      expect(report.installed).toEqual([last.id]);
    } finally {
      await r.close();
    }
    expect((await checkBank(dir)).problems).toEqual([]);
  });

  it("a stored text that no longer reads as its content is written again by a reinstall, not reported unchanged", async () => {
    const { dir, entries } = await bank();
    const e = entries.find((x) => x.name === "charlie")!;
    await writeFile(join(dir, "texts", `${e.contentHash}.json`), "{\"name\":\"charlie\",\"description\":\"tampered\",\"body\":\"\"}");
    expect((await checkBank(dir)).problems.join("\n")).toMatch(/texts/);
    const r = await open(dir);
    try {
      const report = await r.install(skills);
      expect(report.installed).toEqual([e.id]);
      expect(report.unchanged).toHaveLength(3);
      expect((await r.get(e.id))?.description).toBe(skills[2].description);
    } finally {
      await r.close();
    }
    expect((await checkBank(dir)).problems).toEqual([]);
  });

  it("a stored text replaced by a folder is written again by a reinstall, and a stray folder in texts/ is pruned by an uninstall", async () => {
    const { dir, entries } = await bank();
    const e = entries.find((x) => x.name === "delta")!;
    const path = join(dir, "texts", `${e.contentHash}.json`);
    await rm(path);
    await mkdir(join(path, "inside"), { recursive: true });
    await writeFile(join(path, "inside", "f"), "x");
    expect((await checkBank(dir)).problems.join("\n")).toMatch(/lost the text/);
    const stray = join(dir, "texts", `${"0".repeat(64)}.json`);
    await mkdir(stray);
    const r = await open(dir);
    try {
      // before, the rename over the folder failed (EISDIR), reported as SKILL_INVALID blaming the skill
      const report = await r.install(skills);
      expect(report.failed).toEqual([]);
      expect(report.installed).toEqual([e.id]);
      expect((await stat(path)).isFile()).toBe(true);
      expect((await r.get(e.id))?.description).toBe(skills[3].description);
      // before, the prune after the commit failed on the folder (ERR_FS_EISDIR) and the uninstall with it
      expect(await r.uninstall(entries.find((x) => x.name === "alpha")!.id)).toBe(true);
    } finally {
      await r.close();
    }
    expect(await readdir(join(dir, "texts"))).not.toContain(`${"0".repeat(64)}.json`);
    expect((await checkBank(dir)).problems).toEqual([]);
  });
});

describe(`a bank edited over and over stays near its live size (seed ${seed})`, () => {
  it("reinstalling an edited skill 12 times, then uninstalling: dead key rows are reclaimed and old texts deleted; routes and a reopen read the same library", async () => {
    const { dir } = await bank();
    const keysBytes = async () => {
      const m = JSON.parse(await readFile(join(dir, "manifest.json"), "utf8"));
      return { file: (await stat(join(dir, m.keysFile))).size, live: m.entries.reduce((a: number, e: { nKeys: number }) => a + e.nKeys, 0) * 16 * 4, entries: m.entries.length };
    };
    const r = await open(dir);
    try {
      for (let i = 0; i < 12; i++) {
        const edited = { ...skills[3], body: `${skills[3].body}\nEdit ${i}: ${"more words about release notes ".repeat(1 + (i % 4))}` };
        const report = await r.install([...skills.slice(0, 3), edited]);
        expect(report.installed).toHaveLength(1);
        const k = await keysBytes();
        // dead rows never outgrow the live ones by more than the last replaced skill's
        expect(k.file).toBeLessThanOrEqual(2 * k.live + 40 * 16 * 4);
        expect((await readdir(join(dir, "texts"))).filter((f) => f.endsWith(".json"))).toHaveLength(4);
      }
      expect(await r.uninstall("delta")).toBe(true);
      expect((await readdir(join(dir, "texts"))).filter((f) => f.endsWith(".json"))).toHaveLength(3);
      const routed = await r.route("parse the csv files", { abstain: false });
      expect(routed.skill).not.toBeNull();
      const again = await open(dir, { readOnly: true });
      try {
        expect((await again.route("parse the csv files", { abstain: false })).shortlist).toEqual(routed.shortlist);
      } finally {
        await again.close();
      }
    } finally {
      await r.close();
    }
    expect((await checkBank(dir)).problems).toEqual([]);
  });
});
