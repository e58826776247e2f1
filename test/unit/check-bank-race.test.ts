// `gavel check` beside a writer: it checks the last committed state, so an uninstall or a compaction
// that commits while it reads (and whose tidy step deletes the texts and the keys file the manifest
// it read named) is no problem of the bank. Before, check read the manifest once and reported each
// file the writer removed meanwhile as missing (exit 1). The writer runs in this process, at the
// moment check opens a file of the bank: `open` of node:fs/promises is wrapped to run it there.
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { bankHeaderFor, type BankHeader } from "../../src/bank/index.js";
import { checkBank } from "../../src/bank/check.js";
import type { ModelFingerprint } from "../../src/model/fingerprint.js";
import { Projections } from "../../src/projections/projections.js";
import { LexiconBank, randomSkill, type TestSkill } from "../helpers/lexicon-bank.js";
import { freshSeed, randArray, rng } from "../helpers/random.js";
import { tempRoot } from "../helpers/temp-dirs.js";

/** Run once, just before the first open of a path `hook.when` accepts. */
const hook = vi.hoisted(() => ({ when: null as ((path: string) => boolean) | null, run: async () => {} }));

vi.mock("node:fs/promises", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs/promises")>();
  const open = (async (...a: Parameters<typeof real.open>) => {
    const when = hook.when;
    if (when && when(String(a[0]))) {
      hook.when = null;
      await hook.run();
    }
    return real.open(...a);
  }) as typeof real.open;
  return { ...real, open, default: { ...real, open } };
});

const seed = freshSeed();
const r = rng(seed);
const DIM = 8;
const fp: ModelFingerprint = { architecture: "llama", nLayer: 5, nEmbd: 64, nVocab: 512, vocabHash: "ab".repeat(32) };
let header: BankHeader;
const tmp = tempRoot("gavel-check-race-");

beforeAll(async () => {
  header = bankHeaderFor(await Projections.random(fp, { seed: 3, dim: DIM }));
});

/** A bank of `n` skills (s0 …), committed, and still open for writing. */
async function bankOf(n: number): Promise<{ dir: string; bank: LexiconBank; skills: TestSkill[] }> {
  const dir = tmp.fresh();
  const bank = await LexiconBank.open(dir, header);
  const skills = Array.from({ length: n }, (_, i) => randomSkill(r, `s${i}`, true));
  for (const s of skills) {
    await bank.texts.put(s.contentHash, s);
    await bank.store.put({ id: s.id, name: s.name, description: s.description, contentHash: s.contentHash, source: "t", disableModelInvocation: false, keyTokens: [1, 2], renderTokens: 2 }, randArray(r, 2 * DIM));
    bank.lexicon.put(s, s);
  }
  await bank.commit();
  return { dir, bank, skills };
}

/** Uninstalls `ids` as Library.remove does: commit, then the tidy step (compaction when due, texts pruned). */
async function uninstall(bank: LexiconBank, ids: string[], compact: boolean): Promise<void> {
  for (const id of ids) await bank.remove(id);
  await bank.commit();
  if (compact) await bank.store.compact();
  await bank.texts.prune(new Set(bank.store.entries().map((e) => e.contentHash)));
}

describe(`gavel check beside a writer (seed ${seed})`, () => {
  it("an uninstall that commits and prunes its text while check reads is no problem", async () => {
    const { dir, bank, skills } = await bankOf(4);
    const gone = skills[3];
    // check opens the keys file before the texts: the uninstall lands between the manifest and the texts
    hook.run = () => uninstall(bank, [gone.id], false);
    hook.when = (p) => p === join(dir, "keys.bin");
    const rep = await checkBank(dir);
    expect(hook.when, "the writer ran during the check").toBeNull();
    expect(await readdir(join(dir, "texts"))).not.toContain(`${gone.contentHash}.json`);
    expect(rep.problems).toEqual([]);
    expect(rep.ok).toBe(true);
    expect(rep.skills).toBe(3);
    await bank.close();
  });

  it("a compaction that removes the keys file the manifest named while check reads is no problem", async () => {
    const { dir, bank, skills } = await bankOf(4);
    // the writer removes most skills and compacts just before check opens the keys file its manifest named
    hook.run = () => uninstall(bank, skills.slice(0, 3).map((s) => s.id), true);
    hook.when = (p) => p === join(dir, "keys.bin");
    const rep = await checkBank(dir);
    expect(hook.when, "the writer ran during the check").toBeNull();
    expect(await readdir(dir)).not.toContain("keys.bin");
    expect(rep.problems).toEqual([]);
    expect(rep.skills).toBe(1);
    expect(rep.keysVerified).toBe(1);
    await bank.close();
  });
});
