// Issue 35, security: an installed skill is read back from the bank's snapshot, and its source file
// only with a bounded, regular-file-only read. A SKILL.md (or a JSONL library) replaced after install
// by a FIFO, a link to /dev/zero, a directory or a huge file reads as `missing` at once (it wedged
// MCP's load_skill and serve's get-skill, and /dev/zero grew the process to 4.4 GB); the front
// matter (allowed-tools) is the installed one, never the edited file's.
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, symlink, truncate, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BankStore, bankHeaderFor, type BankHeader } from "../../src/bank/index.js";
import { TextStore } from "../../src/bank/texts.js";
import { Projections } from "../../src/projections/projections.js";
import { getSkill } from "../../src/route/skill-record.js";
import { parseSkillMarkdown, type Skill } from "../../src/skills/index.js";
import { jsonlLines } from "../../src/util/jsonl.js";
import type { ModelFingerprint } from "../../src/model/fingerprint.js";
import { expectCode } from "../helpers/gavel-error.js";

const DIM = 8;
const fp: ModelFingerprint = { architecture: "llama", nLayer: 5, nEmbd: 64, nVocab: 512, vocabHash: "cd".repeat(32) };
let header: BankHeader;
let root: string;
let n = 0;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "gavel-sec-reads-"));
  header = bankHeaderFor(await Projections.random(fp, { seed: 5, dim: DIM }));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const md = (tools: string, body = "Run the safe thing.\n") =>
  `---\nname: safe-skill\ndescription: Does the safe thing.\nallowed-tools: ${tools}\nlicense: MIT\n---\n\n${body}`;

/** A committed bank on disk holding `skill` (as install stores it: entry with front matter, text). */
async function bankWith(skill: Skill, options: { legacy?: boolean } = {}): Promise<string> {
  const dir = join(root, `bank-${n++}`);
  const store = await BankStore.open(dir, header, { create: true });
  try {
    await new TextStore(dir).put(skill.contentHash, skill);
    const keys = new Float32Array(DIM).fill(0.5);
    await store.put(
      {
        id: skill.id,
        name: skill.name,
        description: skill.description,
        contentHash: skill.contentHash,
        source: skill.source,
        disableModelInvocation: false,
        keyTokens: [1],
        renderTokens: 4,
        ...(options.legacy ? {} : { meta: skill.meta }),
      },
      keys,
    );
    await store.commit();
  } finally {
    await store.close();
  }
  return dir;
}

/** A project with .claude/skills/safe-skill/SKILL.md installed into a bank; the file's path and the bank's. */
async function installedProject(options: { legacy?: boolean } = {}): Promise<{ file: string; bank: string }> {
  const project = join(root, `project-${n++}`);
  const folder = join(project, ".claude", "skills", "safe-skill");
  await mkdir(folder, { recursive: true });
  const file = join(folder, "SKILL.md");
  await writeFile(file, md("Read"));
  const skill = parseSkillMarkdown(md("Read"), file, { folderName: "safe-skill" });
  return { file, bank: await bankWith(skill, options) };
}

/** getSkill over the bank's committed state (what MCP's load_skill and serve's get-skill answer). */
const load = (bank: string) => getSkill({ bankDir: bank }, "safe-skill");

describe("a skill's source replaced after install is read bounded, never blocking", () => {
  const swaps: [string, (p: string) => Promise<unknown> | unknown][] = [
    ["a FIFO", (p) => execFileSync("mkfifo", [p])],
    ["a link to /dev/zero", (p) => symlink("/dev/zero", p)],
    ["a directory", (p) => mkdir(p)],
    ["a link to a file that is not a skill", async (p) => (await writeFile(`${p}.notes`, "root:x:0:0\n"), symlink(`${p}.notes`, p))],
    // sparse: 8 GiB of holes costs no disk, and an unbounded read would try to hold it all
    ["a huge file", async (p) => (await writeFile(p, md("Read")), truncate(p, 8 * 1024 ** 3))],
  ];
  for (const [what, swap] of swaps) {
    it(`SKILL.md as ${what}: the installed skill, its source missing, at once`, async () => {
      const { file, bank } = await installedProject();
      await unlink(file);
      await swap(file);
      // no clock: a read that blocks (the FIFO, /dev/zero) ends in the test's timeout
      const r = await load(bank);
      // and no path: a host told to read it would read whatever is there now
      expect(r).toMatchObject({ name: "safe-skill", body: "Run the safe thing.", sourceStatus: "missing", allowedTools: ["Read"], path: null, dir: null });
      // a second and a fourth call answer too: nothing is left blocked behind the first
      for (let i = 0; i < 3; i++) expect((await load(bank)).sourceStatus).toBe("missing");
    });
  }

  it("a JSONL library replaced by a FIFO or a link to /dev/zero: the row's skill, its source missing", async () => {
    for (const swap of [(p: string) => execFileSync("mkfifo", [p]), (p: string) => symlink("/dev/zero", p)]) {
      const lib = join(root, `lib-${n++}.jsonl`);
      const row = { id: "safe-skill", name: "safe-skill", description: "Does the safe thing.", body: "Run it.", "allowed-tools": "Read" };
      await writeFile(lib, JSON.stringify(row) + "\n");
      const skill = parseSkillMarkdown(md("Read", "Run it.\n"), "x/SKILL.md", { folderName: "safe-skill" });
      const bank = await bankWith({ ...skill, source: `${lib}:1` });
      expect((await load(bank)).sourceStatus).toBe("current");
      await unlink(lib);
      await swap(lib);
      const r = await load(bank);
      expect(r).toMatchObject({ body: "Run it.", sourceStatus: "missing", path: null });
    }
  });

  it("jsonlLines refuses a FIFO and a device before reading, and a line past its cap (a gzip bomb)", async () => {
    const fifo = join(root, `f-${n++}.jsonl`);
    execFileSync("mkfifo", [fifo]);
    const drain = async (p: string, maxLineBytes?: number) => {
      for await (const _ of jsonlLines(p, { maxLineBytes })) void _;
    };
    await expectCode(drain(fifo), "FILE_NOT_FOUND", /FIFO/);
    await expectCode(drain("/dev/zero"), "FILE_NOT_FOUND", /device/);
    // 64 MiB of zeros without a newline, 64 KiB gzipped: refused at the cap, never held whole
    const bomb = join(root, `bomb-${n++}.jsonl.gz`);
    await writeFile(bomb, gzipSync(Buffer.alloc(64 * 1024 * 1024)));
    await expectCode(drain(bomb, 1 << 20), "CORRUPT_FILE", /line 1 is longer than 1048576 bytes/);
    // lines split across chunks, CRLF and a last line without a newline still read as before
    const ok = join(root, `ok-${n++}.jsonl`);
    const long = JSON.stringify({ a: "x".repeat(200_000) });
    await writeFile(ok, `${long}\r\n\n[1]\n${long}`);
    const lines: { text: string; line: number }[] = [];
    for await (const l of jsonlLines(ok)) lines.push(l);
    expect(lines).toEqual([{ text: long, line: 1 }, { text: "[1]", line: 3 }, { text: long, line: 4 }]);
  });
});

describe("the front matter reported is the installed snapshot's", () => {
  it("an edit of allowed-tools on disk never shows beside the installed body", async () => {
    const { file, bank } = await installedProject();
    // the same name, description and body (so the content hash is unchanged), wider tools
    await writeFile(file, md("Bash(*) Write Edit"));
    const r = await load(bank);
    expect(r.sourceStatus).toBe("current");
    expect(r.allowedTools).toEqual(["Read"]);
    expect(r.metadata).toMatchObject({ "allowed-tools": "Read", license: "MIT" });
    await writeFile(file, md("Bash(*)", "Now do something else.\n"));
    expect(await load(bank)).toMatchObject({ sourceStatus: "changed", allowedTools: ["Read"], body: "Run the safe thing." });
  });

  it("an entry of an older bank, which recorded no front matter, reports none rather than the file's", async () => {
    const { file, bank } = await installedProject({ legacy: true });
    await writeFile(file, md("Bash(*) Write Edit"));
    const r = await load(bank);
    expect(r.allowedTools).toBeNull();
    expect(r.metadata).toEqual({ name: "safe-skill", description: "Does the safe thing." });
  });

  it("setMeta records the front matter of an unchanged skill; it survives a reopen", async () => {
    const { bank } = await installedProject({ legacy: true });
    const store = await BankStore.open(bank, header);
    try {
      expect(await store.setMeta("safe-skill", { "allowed-tools": "Read Grep" })).toBe(true);
      expect(await store.setMeta("nope", {})).toBe(false);
      await store.commit();
    } finally {
      await store.close();
    }
    expect((await load(bank)).allowedTools).toEqual(["Read", "Grep"]);
  });
});

describe("an install records the front matter and refreshes it when only it changed", () => {
  it("Library.save records meta; refreshMeta replaces an edited one and leaves an equal one alone", async () => {
    const { Library } = await import("../../src/bank/library.js");
    const projections = await Projections.random(fp, { seed: 5, dim: DIM });
    const dir = join(root, `lib-bank-${n++}`);
    const file = join(root, `lib-src-${n++}`, "safe-skill", "SKILL.md");
    const skill = parseSkillMarkdown(md("Read"), file, { folderName: "safe-skill" });
    const lib = await Library.open(dir, projections, { create: true });
    try {
      await lib.save(skill, { keyTokens: [1], keyPositions: [0], renderTokens: 4, renderCut: { descriptionChars: 5, bodyChars: 5 } }, new Float32Array(DIM).fill(0.5));
      await lib.commit();
      expect((await load(dir)).allowedTools).toEqual(["Read"]);
      // the same content, the same front matter: nothing to do
      expect(await lib.refreshMeta(skill)).toBe(false);
      // the same content (hash), wider tools on disk: the install's refresh records them
      const edited = parseSkillMarkdown(md("Read Grep"), file, { folderName: "safe-skill" });
      expect(edited.contentHash).toBe(skill.contentHash);
      expect(await lib.refreshMeta(edited)).toBe(true);
      await lib.commit();
    } finally {
      await lib.close();
    }
    expect((await load(dir)).allowedTools).toEqual(["Read", "Grep"]);
  });
});
