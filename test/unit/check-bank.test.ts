// `gavel check` (src/bank/check.ts, src/cli/commands/check.ts): a read-only integrity check. Banks
// are built in temp dirs (store + texts + lexicon, as Library writes them, without a model), then
// damaged one way at a time; each damage must be reported (exit 1) and nothing may be written. Also:
// per-skill key checksums refuse a damaged block on read, and texts are verified against their hash.
import { createHash } from "node:crypto";
import { cp, mkdtemp, readFile, readdir, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { BankStore, bankHeaderFor, type BankHeader } from "../../src/bank/index.js";
import { checkBank } from "../../src/bank/check.js";
import { sealedManifestText } from "../../src/bank/manifest.js";
import { TextStore } from "../../src/bank/texts.js";
import { check } from "../../src/cli/commands/check.js";
import { GavelError } from "../../src/errors.js";
import type { ModelFingerprint } from "../../src/model/fingerprint.js";
import { Projections } from "../../src/projections/projections.js";
import { LexiconBank, randomSkill, type TestSkill } from "../helpers/lexicon-bank.js";
import { freshSeed, randArray, rng } from "../helpers/random.js";
import { expectCode } from "../helpers/gavel-error.js";

const seed = freshSeed();
const r = rng(seed);
const DIM = 8;
const fp: ModelFingerprint = { architecture: "llama", nLayer: 5, nEmbd: 64, nVocab: 512, vocabHash: "ab".repeat(32) };
let header: BankHeader;
let root: string;
let good: string;
let skills: TestSkill[];
let n = 0;

/** A copy of the clean bank to damage. */
async function copyBank(): Promise<string> {
  const dir = join(root, `bank-${n++}`);
  await cp(good, dir, { recursive: true });
  return dir;
}

/** Every file's bytes and mtime under `dir` (to prove check writes nothing). */
async function snapshot(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const name of (await readdir(dir, { recursive: true })) as string[]) {
    const p = join(dir, name);
    const s = await stat(p);
    out.set(name, s.isFile() ? `${createHash("sha256").update(await readFile(p)).digest("hex")} ${s.mtimeMs} ${s.size}` : "dir");
  }
  return out;
}

async function checked(dir: string) {
  const before = await snapshot(dir);
  const report = await checkBank(dir);
  expect(await snapshot(dir), "check wrote nothing").toEqual(before);
  return report;
}

const manifestOf = async (dir: string) => JSON.parse(await readFile(join(dir, "manifest.json"), "utf8"));

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "gavel-check-"));
  header = bankHeaderFor(await Projections.random(fp, { seed: 3, dim: DIM }));
  good = join(root, "good");
  const bank = await LexiconBank.open(good, header);
  skills = Array.from({ length: 8 }, (_, i) => randomSkill(r, `s${i}`, i !== 5));
  for (const s of skills) {
    await bank.texts.put(s.contentHash, s);
    await bank.store.put({ id: s.id, name: s.name, description: s.description, contentHash: s.contentHash, source: "t", disableModelInvocation: s.disableModelInvocation, keyTokens: [1, 2, 3], renderTokens: 3 }, randArray(r, 3 * DIM));
    bank.lexicon.put(s, s);
  }
  await bank.commit();
  await bank.close();
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe(`gavel check (seed ${seed})`, () => {
  it("finds a clean bank clean, verifying every key block, text and lexicon record", async () => {
    const rep = await checked(good);
    expect(rep.problems).toEqual([]);
    expect(rep.ok).toBe(true);
    expect(rep.keysVerified).toBe(8);
    expect(rep.keysUnverified).toBe(0);
    expect(rep.textsVerified).toBe(8);
    expect(rep.lexiconSkills).toBe(7);
    expect((await manifestOf(good)).entries.every((e: { keysSha256?: string }) => /^[0-9a-f]{64}$/.test(e.keysSha256 ?? ""))).toBe(true);
  });

  it("reports a flipped bit in a key block by skill, and the store refuses to read it", async () => {
    const dir = await copyBank();
    const m = await manifestOf(dir);
    const e = m.entries[3];
    const keys = await readFile(join(dir, "keys.bin"));
    keys[(e.offset * DIM + 5) * 4 + 1] ^= 0x10;
    await writeFile(join(dir, "keys.bin"), keys);
    const rep = await checked(dir);
    expect(rep.ok).toBe(false);
    expect(rep.problems).toHaveLength(1);
    expect(rep.problems[0]).toMatch(/skill "s3".*checksum/);
    const store = await BankStore.open(dir, header);
    try {
      await expectCode(store.readAllKeys(), "CORRUPT_FILE", /keys\.bin.*"s3"/);
      await expectCode(store.readKeys("s3"), "CORRUPT_FILE");
      expect((await store.readKeys("s2")).length).toBe(3 * DIM);
    } finally {
      await store.close();
    }
  });

  it("reads a bank without checksums (an earlier version's) and reports its keys as unverified, not corrupt", async () => {
    const dir = await copyBank();
    const m = await manifestOf(dir);
    for (const e of m.entries) delete e.keysSha256;
    await writeFile(join(dir, "manifest.json"), sealedManifestText(m));
    const rep = await checked(dir);
    expect(rep.ok).toBe(true);
    expect(rep.keysUnverified).toBe(8);
    expect(rep.unverified.join("\n")).toMatch(/8 skill\(s\) have no key checksum/);
    const store = await BankStore.open(dir, header);
    expect((await store.readAllKeys()).entries).toHaveLength(8);
    await store.close();
  });

  it("reports a malformed checksum, a truncated keys file and a missing keys file", async () => {
    const a = await copyBank();
    const m = await manifestOf(a);
    m.entries[0].keysSha256 = "xyz";
    await writeFile(join(a, "manifest.json"), sealedManifestText(m));
    expect((await checked(a)).problems[0]).toMatch(/keysSha256 is not a sha256/);
    const b = await copyBank();
    const keys = await readFile(join(b, "keys.bin"));
    await writeFile(join(b, "keys.bin"), keys.subarray(0, keys.length - 10));
    const rb = await checked(b);
    expect(rb.ok).toBe(false);
    expect(rb.problems.join("\n")).toMatch(/holds \d+ bytes but the manifest references/);
    expect(rb.problems.join("\n")).toMatch(/"s7".*past the end/);
    const c = await copyBank();
    await rm(join(c, "keys.bin"));
    expect((await checked(c)).problems.join("\n")).toMatch(/keys\.bin.*references 24 key rows/);
  });

  it("refuses a text whose content is not the one its hash names, or that does not parse, as CORRUPT_FILE naming the file", async () => {
    const dir = await copyBank();
    const texts = new TextStore(dir);
    const [s0, s1, s2, s3] = skills;
    // other valid JSON: another skill's text under s0's hash
    await writeFile(texts.pathOf(s0.contentHash), JSON.stringify({ name: s1.name, description: s1.description, body: s1.body }));
    await writeFile(texts.pathOf(s1.contentHash), "{\"name\": \"x\", ");
    await writeFile(texts.pathOf(s2.contentHash), "null");
    await rm(texts.pathOf(s3.contentHash));
    for (const [s, why] of [[s0, /does not match the hash/], [s1, /not valid JSON/], [s2, /not a JSON object/], [s3, /is missing/]] as const) {
      const err = await texts.get(s.contentHash).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(GavelError);
      expect((err as GavelError).code).toBe("CORRUPT_FILE");
      expect((err as GavelError).message).toContain(texts.pathOf(s.contentHash));
      expect((err as GavelError).message).toMatch(why);
    }
    expect((await texts.get(skills[4].contentHash)).body).toBe(skills[4].body);
    const rep = await checked(dir);
    expect(rep.ok).toBe(false);
    expect(rep.problems.filter((p) => /^skill "s[0-3]"/.test(p))).toHaveLength(4);
    expect(rep.textsVerified).toBe(4);
  });

  it("reports a lexicon whose committed terms are not the text's, and lists a lexicon to rebuild as a repair", async () => {
    const dir = join(root, `bank-${n++}`);
    const bank = await LexiconBank.open(dir, header);
    const [s0, s1] = skills;
    for (const s of [s0, s1]) {
      await bank.texts.put(s.contentHash, s);
      await bank.store.put({ id: s.id, name: s.name, description: s.description, contentHash: s.contentHash, source: "t", disableModelInvocation: false, keyTokens: [1], renderTokens: 1 }, randArray(r, DIM));
    }
    bank.lexicon.put(s0, s0);
    bank.lexicon.put(s1, { name: "forged", description: "words that are not in the text", body: "" });
    await bank.commit();
    await bank.close();
    const rep = await checked(dir);
    expect(rep.ok).toBe(false);
    expect(rep.problems).toEqual([expect.stringMatching(/lexicon\.bin: the terms of skill "s1" are not those of its text/)]);
    const other = await copyBank();
    const lex = await readFile(join(other, "lexicon.bin"));
    lex[lex.length - 30] ^= 0xff;
    await writeFile(join(other, "lexicon.bin"), lex);
    const ro = await checked(other);
    expect(ro.ok).toBe(true);
    expect(ro.repairs.join("\n")).toMatch(/lexicon\.bin will be rebuilt/);
    await rm(join(other, "lexicon.bin"));
    expect((await checked(other)).repairs.join("\n")).toMatch(/it is missing/);
  });

  it("lists an interrupted commit's leftovers as repairs, and changes none of them", async () => {
    const dir = await copyBank();
    await writeFile(join(dir, "keys.bin"), Buffer.alloc(DIM * 4 * 2, 1), { flag: "a" });
    await writeFile(join(dir, "manifest.json.0123abcd.tmp"), "{");
    await writeFile(join(dir, "keys.7.bin"), "x");
    await writeFile(join(dir, "texts", `${"0".repeat(64)}.json`), "{}");
    const rep = await checked(dir);
    expect(rep.ok).toBe(true);
    expect(rep.repairs).toHaveLength(4);
  });

  it("reports a manifest that does not parse or is missing, and says FILE_NOT_FOUND (creating nothing) where there is no bank", async () => {
    const dir = await copyBank();
    await writeFile(join(dir, "manifest.json"), "{\"format\": \"gavel-bank\"");
    expect((await checked(dir)).problems[0]).toMatch(/not valid JSON/);
    await rm(join(dir, "manifest.json"));
    expect((await checked(dir)).problems[0]).toMatch(/no manifest\.json/);
    const none = join(root, "no-such-bank");
    await expectCode(checkBank(none), "FILE_NOT_FOUND");
    await expect(stat(none)).rejects.toThrow();
  });

  it("the CLI prints the report and exits 0 when clean, 1 with the problems", async () => {
    const log = vi.spyOn(console, "log").mockImplementation(() => undefined);
    try {
      expect(await check.run(["-b", good])).toBe(0);
      expect(String(log.mock.calls.at(-1)![0])).toMatch(/\nok$/);
      const dir = await copyBank();
      await rm(join(dir, "texts", `${skills[6].contentHash}.json`));
      expect(await check.run(["--bank", dir, "--json"])).toBe(1);
      const json = JSON.parse(String(log.mock.calls.at(-1)![0]));
      expect(json.ok).toBe(false);
      expect(json.problems).toEqual([expect.stringMatching(/skill "s6".*lost the text/)]);
    } finally {
      log.mockRestore();
    }
  });
});
