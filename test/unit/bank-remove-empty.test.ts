// removeBankIfEmpty, what a failed first `gavel install` does to the bank it created: it removes a
// bank holding no skill, under the bank's lock, and keeps one another writer holds (two first
// installs raced: the loser removed the winner's folder, lock and keys included, while the winner
// wrote, and the winner reported success over a bank without keys.bin), one whose manifest names a
// skill, and one whose manifest cannot be read.
import { existsSync } from "node:fs";
import { readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { BankStore, bankHeaderFor, type BankHeader } from "../../src/bank/index.js";
import { removeBankIfEmpty } from "../../src/bank/opening.js";
import type { ModelFingerprint } from "../../src/model/fingerprint.js";
import { Projections } from "../../src/projections/projections.js";
import { tempRoot } from "../helpers/temp-dirs.js";

const DIM = 8;
const fp: ModelFingerprint = { architecture: "llama", nLayer: 5, nEmbd: 64, nVocab: 512, vocabHash: "cd".repeat(32) };
let header: BankHeader;
const tmp = tempRoot("gavel-remove-empty-");
const freshDir = () => tmp.fresh();
const entry = (id: string) => ({ id, name: id, description: "d", contentHash: "ab".repeat(32), source: "t", disableModelInvocation: false, keyTokens: [1, 1], renderTokens: 2 });
const unitKeys = () => Float32Array.from({ length: 2 * DIM }, (_, i) => (i % DIM === 0 ? 1 : 0));

beforeAll(async () => {
  header = bankHeaderFor(await Projections.random(fp, { seed: 4, dim: DIM }));
});

describe("removeBankIfEmpty", () => {
  it("keeps a bank another writer holds, even with nothing committed yet", async () => {
    const dir = freshDir();
    const w = await BankStore.open(dir, header, { create: true });
    try {
      const before = (await readdir(dir)).sort();
      expect(before).toContain("lock");
      expect(await removeBankIfEmpty(dir)).toBe(false);
      expect((await readdir(dir)).sort()).toEqual(before);
      // the writer goes on and commits into the bank it holds
      await w.put(entry("a"), unitKeys());
      await w.commit();
    } finally {
      await w.close();
    }
    const again = await BankStore.openSnapshot(dir, header);
    expect(again.entries().map((e) => e.id)).toEqual(["a"]);
  });

  it("removes a bank holding no skill once nobody holds it", async () => {
    const dir = freshDir();
    const w = await BankStore.open(dir, header, { create: true });
    await w.close();
    expect(existsSync(join(dir, "manifest.json"))).toBe(true);
    expect(await removeBankIfEmpty(dir)).toBe(true);
    expect(existsSync(dir)).toBe(false);
  });

  it("keeps a bank whose manifest names a skill, and one whose manifest cannot be read", async () => {
    const dir = freshDir();
    const w = await BankStore.open(dir, header, { create: true });
    await w.put(entry("a"), unitKeys());
    await w.commit();
    await w.close();
    const files = (await readdir(dir)).sort();
    expect(await removeBankIfEmpty(dir)).toBe(false);
    expect((await readdir(dir)).sort()).toEqual(files);
    const broken = freshDir();
    const b = await BankStore.open(broken, header, { create: true });
    await b.close();
    await writeFile(join(broken, "manifest.json"), "{ not json");
    expect(await removeBankIfEmpty(broken)).toBe(false);
    expect(existsSync(join(broken, "manifest.json"))).toBe(true);
  });
});
