// A bank commit whose manifest was renamed into place but whose folder's fsync then failed (EIO from a
// failing disk, EROFS from a remount) has landed: every reader sees the new manifest. Before, the
// store took it for a failed commit: a compaction deleted the new keys file the manifest named, the
// next writable open deleted the old one as "a keys file the manifest does not name" (every skill's
// keys lost) and `gavel check` advised that removal; the error reached the CLI as a raw EIO stack;
// and a plain commit kept its generation and staged state, so a long-lived writer committed the same
// generation twice; and a lexicon rewritten whole after a commit, whose folder sync failed, was
// appended to at the old file's end (a gap of zeros, rebuilt at the next open). The folder's fsync is
// failed in-process by wrapping `open` of node:fs/promises.
import { createHash } from "node:crypto";
import { mkdir, readFile, readdir, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { BankStore, bankHeaderFor, type BankHeader } from "../../src/bank/index.js";
import { checkBank } from "../../src/bank/check.js";
import { DirSyncError, writeFileDurable } from "../../src/util/durable-file.js";
import type { ModelFingerprint } from "../../src/model/fingerprint.js";
import { Projections } from "../../src/projections/projections.js";
import { LexiconBank, randomSkill, words, type TestSkill } from "../helpers/lexicon-bank.js";
import { freshSeed, randArray, rng } from "../helpers/random.js";
import { tempRoot } from "../helpers/temp-dirs.js";
import { caught, expectCode } from "../helpers/gavel-error.js";

/** The next `count` fsyncs of folder `dir` fail with `code`, once `skip` more have passed. */
const fsState = vi.hoisted(() => ({ dir: "", skip: 0, count: 0, code: "EIO" }));

vi.mock("node:fs/promises", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs/promises")>();
  const open = (async (...a: Parameters<typeof real.open>) => {
    const fh = await real.open(...a);
    if (a[0] === fsState.dir && (a[1] ?? "r") === "r" && fsState.count > 0 && fsState.skip-- <= 0) {
      fsState.count--;
      fh.sync = () => Promise.reject(Object.assign(new Error(`${fsState.code}: i/o error, fsync`), { code: fsState.code, syscall: "fsync" }));
    }
    return fh;
  }) as typeof real.open;
  return { ...real, open, default: { ...real, open } };
});

const seed = freshSeed();
const r = rng(seed);
const DIM = 8;
const fp: ModelFingerprint = { architecture: "llama", nLayer: 5, nEmbd: 64, nVocab: 512, vocabHash: "ab".repeat(32) };
let header: BankHeader;
const tmp = tempRoot("gavel-dir-sync-");

beforeAll(async () => {
  header = bankHeaderFor(await Projections.random(fp, { seed: 3, dim: DIM }));
});

/** The next fsync of folder `dir` (once `skip` have passed) fails with `code`. */
function failNextDirSync(dir: string, code = "EIO", skip = 0): void {
  Object.assign(fsState, { dir, skip, count: 1, code });
}

const entry = (id: string, nKeys: number) => ({ id, name: id, description: `does ${id}`, contentHash: `${id}`.padEnd(16, "0"), source: "t", disableModelInvocation: false, keyTokens: Array.from({ length: nKeys }, (_, i) => i), renderTokens: nKeys });
/** Stages skill `s` with `keys` as Library.save does (text, key rows, lexicon). */
async function stage(bank: LexiconBank, s: TestSkill, keys: Float32Array): Promise<void> {
  await bank.texts.put(s.contentHash, s);
  await bank.store.put({ id: s.id, name: s.name, description: s.description, contentHash: s.contentHash, source: "t", disableModelInvocation: false, keyTokens: Array.from({ length: keys.length / DIM }, (_, i) => i), renderTokens: 1 }, keys);
  bank.lexicon.put(s, s);
}

/** A routable skill of text `body` (random words for its name and description). */
function textSkill(id: string, body: string): TestSkill {
  const name = words(r, 1), description = words(r, 3);
  const contentHash = createHash("sha256").update(JSON.stringify([name, description, body])).digest("hex");
  return { id, name, description, body, contentHash, disableModelInvocation: false };
}

const manifestOf = async (dir: string) => JSON.parse(await readFile(join(dir, "manifest.json"), "utf8"));

describe(`writeFileDurable (seed ${seed})`, () => {
  it("tells a failed folder sync after the rename (the new file in place) from a write that never landed", async () => {
    const dir = tmp.fresh();
    await mkdir(dir);
    const path = join(dir, "f.json");
    await writeFileDurable(path, "old");
    failNextDirSync(dir);
    const err = await caught(writeFileDurable(path, "new"));
    expect(err).toBeInstanceOf(DirSyncError);
    expect((err as DirSyncError).code).toBe("EIO");
    expect((err as DirSyncError).path).toBe(path);
    expect(await readFile(path, "utf8")).toBe("new");
    expect(await readdir(dir)).toEqual(["f.json"]);
  });
});

describe(`a bank commit whose folder sync fails after the rename (seed ${seed})`, () => {
  it("a compaction keeps the keys file its manifest names, the store moves on, and the next open loses nothing", async () => {
    const dir = tmp.fresh();
    const bank = await LexiconBank.open(dir, header);
    const skills = ["a", "b", "c"].map((id) => randomSkill(r, id, true));
    const keys = [randArray(r, 3 * DIM), randArray(r, 4 * DIM), randArray(r, 2 * DIM)];
    await stage(bank, skills[0], keys[0]);
    await stage(bank, skills[1], keys[1]);
    await bank.commit();
    await bank.remove("a");
    const before = bank.store.generation;
    failNextDirSync(dir);
    const err = await expectCode(bank.store.compact(), "CORRUPT_FILE", /generation \d+ is committed.*EIO.*gavel check/);
    expect(err.message).toContain(dir);
    // the manifest on disk names the new file, and the store is at that commit
    const m = await manifestOf(dir);
    expect(m.generation).toBe(before + 1);
    expect(bank.store.generation).toBe(before + 1);
    expect(bank.store.dirty).toBe(false);
    expect((await readdir(dir)).filter((n) => /^keys/.test(n)).sort()).toEqual([m.keysFile, "keys.bin"].sort());
    expect(await bank.store.readKeys("b")).toEqual(keys[1]);
    // the old file is a leftover only the next open removes; check says so, and finds no problem
    const rep = await checkBank(dir);
    expect(rep.problems).toEqual([]);
    expect(rep.repairs).toContainEqual(expect.stringMatching(/^keys\.bin: a keys file the manifest does not name/));
    // the writer goes on at the next generation
    await stage(bank, skills[2], keys[2]);
    await bank.commit();
    expect((await manifestOf(dir)).generation).toBe(before + 2);
    await bank.close();
    const again = await LexiconBank.open(dir, header);
    expect(again.store.entries().map((e) => e.id)).toEqual(["b", "c"]);
    expect(await again.store.readKeys("b")).toEqual(keys[1]);
    expect(await again.store.readKeys("c")).toEqual(keys[2]);
    expect(again.lexicon.rebuilt).toBeUndefined();
    await again.close();
    expect((await readdir(dir)).filter((n) => /^keys/.test(n))).toEqual([m.keysFile]);
    const after = await checkBank(dir);
    expect(after.ok).toBe(true);
    expect(after.repairs.join("\n")).not.toMatch(/keys/);
  });

  it("a plain commit (an uninstall) has landed: the store advances, nothing stays staged, no generation is committed twice", async () => {
    const dir = tmp.fresh();
    const bank = await LexiconBank.open(dir, header);
    const [s1, s2, s3] = [randomSkill(r, "s1", true), randomSkill(r, "s2", true), randomSkill(r, "s3", true)];
    await bank.save(s1);
    await bank.save(s2);
    await bank.commit();
    const before = bank.store.generation;
    await bank.remove("s1");
    failNextDirSync(dir);
    await expectCode(bank.commit(), "CORRUPT_FILE", /generation \d+ is committed/);
    expect(bank.store.generation).toBe(before + 1);
    expect(bank.store.dirty).toBe(false);
    expect((await manifestOf(dir)).generation).toBe(before + 1);
    await bank.save(s3);
    await bank.commit();
    expect((await manifestOf(dir)).generation).toBe(before + 2);
    await bank.close();
    // reopened as a library opens it: the lexicon holds the COMMIT of the manifest's generation (kept, not rebuilt)
    const again = await LexiconBank.open(dir, header);
    expect(again.store.entries().map((e) => e.id)).toEqual(["s2", "s3"]);
    expect(again.lexicon.rebuilt).toBeUndefined();
    await again.close();
    expect((await checkBank(dir)).problems).toEqual([]);
  });

  it("a lexicon rewritten whole after a commit, whose folder sync fails, is the file the next commit appends to", async () => {
    const dir = tmp.fresh();
    // compactBytes 0: every commit that leaves dead records rewrites the lexicon whole once the manifest landed
    const bank = await LexiconBank.open(dir, header, { compactBytes: 0 });
    // the skill removed holds most of the lexicon's bytes, so its removal leaves them dead (and the file
    // is rewritten); the one added next holds more, so its commit is appended (no rewrite then)
    const [s1, s2, s3] = [textSkill("s1", words(r, 400)), textSkill("s2", "short"), textSkill("s3", words(r, 1600))];
    await bank.save(s1);
    await bank.save(s2);
    await bank.commit();
    await bank.remove("s1");
    // the manifest's folder sync passes; the lexicon's rewrite after it fails its own
    failNextDirSync(dir, "EIO", 1);
    await bank.commit();
    expect(fsState.count, "the rewrite's folder sync failed").toBe(0);
    await bank.save(s3);
    await bank.commit();
    await bank.close();
    // before, the next commit appended at the end of the file as it was before the rewrite: a gap of
    // zeros, and the next open rebuilt the lexicon from texts/ as damaged
    const again = await LexiconBank.open(dir, header);
    expect(again.lexicon.rebuilt).toBeUndefined();
    expect(again.lexicon.index.size).toBe(2);
    await again.close();
    expect((await checkBank(dir)).problems).toEqual([]);
  });

  it("is typed by the fsync's errno: a read-only remount PERMISSION_DENIED, a full disk NO_SPACE, each saying the commit landed", async () => {
    const dir = tmp.fresh();
    const store = await BankStore.open(dir, header, { create: true });
    for (const [code, want] of [["EROFS", "PERMISSION_DENIED"], ["ENOSPC", "NO_SPACE"]] as const) {
      await store.put(entry(code, 1), randArray(r, DIM));
      const before = store.generation;
      failNextDirSync(dir, code);
      await expectCode(store.commit(), want, new RegExp(`generation ${before + 1} is committed.*${code}`));
      expect(store.generation).toBe(before + 1);
    }
    await store.close();
  });
});

describe(`a writable open whose manifest names a keys file that is gone (seed ${seed})`, () => {
  it("keeps the keys files the manifest does not name, and check does not advise removing them", async () => {
    const dir = tmp.fresh();
    const store = await BankStore.open(dir, header, { create: true });
    await store.put(entry("a", 3), randArray(r, 3 * DIM));
    await store.put(entry("b", 2), randArray(r, 2 * DIM));
    await store.commit();
    await store.remove("a");
    await store.compact();
    await store.close();
    const named = (await manifestOf(dir)).keysFile as string;
    expect(named).not.toBe("keys.bin");
    // the named file lost, an older one beside it (what the compaction bug left)
    await rename(join(dir, named), join(dir, "keys.bin"));
    await expectCode(BankStore.open(dir, header), "CORRUPT_FILE", /is missing/);
    expect(await readdir(dir)).toContain("keys.bin");
    const rep = await checkBank(dir);
    expect(rep.problems.filter((p) => !/lost the text/.test(p))).toEqual([expect.stringContaining(named)]);
    expect(rep.repairs.join("\n")).not.toMatch(/keys\.bin/);
    expect(rep.unverified).toEqual([expect.stringMatching(/^keys\.bin: .*kept while .* is missing or damaged/)]);
  });

  // Before, a named file that opened was enough: a short one (opened all the same, so its damaged
  // skills can be reinstalled) or one whose blocks fail their checksums had the older file removed by
  // the open, and check listed that removal as a repair while reporting the named file damaged.
  for (const [damage, hurt] of [
    ["short", (b: Buffer) => b.subarray(0, b.length - 4 * DIM)],
    ["failing a checksum", (b: Buffer) => (b.writeFloatLE(b.readFloatLE(0) + 1, 0), b)],
  ] as const) {
    it(`keeps an older keys file while the named one is ${damage}, and check lists it as kept, not as a repair`, async () => {
      const dir = tmp.fresh();
      const store = await BankStore.open(dir, header, { create: true });
      await store.put(entry("a", 3), randArray(r, 3 * DIM));
      await store.put(entry("b", 2), randArray(r, 2 * DIM));
      await store.commit();
      await store.remove("a");
      await store.compact();
      await store.close();
      const named = (await manifestOf(dir)).keysFile as string;
      expect(named).not.toBe("keys.bin");
      const whole = await readFile(join(dir, named));
      await writeFile(join(dir, "keys.bin"), whole);
      await writeFile(join(dir, named), hurt(Buffer.from(whole)));
      const rep = await checkBank(dir);
      // (the store writes no texts: each entry's is reported lost)
      const keyProblems = rep.problems.filter((p) => !/lost the text/.test(p));
      expect(keyProblems.length).toBeGreaterThan(0);
      for (const p of keyProblems) expect(p).toContain(named);
      expect(rep.repairs.join("\n")).not.toMatch(/keys\.bin/);
      expect(rep.unverified).toEqual([expect.stringMatching(/^keys\.bin: .*kept while .* is missing or damaged/)]);
      const again = await BankStore.open(dir, header);
      await again.close();
      expect((await readFile(join(dir, "keys.bin"))).equals(whole)).toBe(true);
      // the named file made whole again: the next open removes the older one, as check says
      await writeFile(join(dir, named), whole);
      expect((await checkBank(dir)).repairs).toContainEqual(expect.stringMatching(/^keys\.bin: a keys file the manifest does not name/));
      await (await BankStore.open(dir, header)).close();
      expect((await readdir(dir)).filter((n) => /^keys/.test(n))).toEqual([named]);
    });
  }
});
