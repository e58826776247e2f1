// A skill's warnings changed after its install (issue 17: the breadth probes' `hub:` flag is written
// once the install's skills are stored): the entry keeps its keys and its place in the bank, so the
// lexicon, which follows the bank's order, stays in step, committed or not (a kill before the flag's
// commit, or between the lexicon's half of it and the manifest, leaves a bank that opens without a
// rebuild). Re-staging the entry (keys put again) moved it to the end and left the lexicon out of order.
import { cp, rm } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { Library } from "../../src/bank/library.js";
import type { ModelFingerprint } from "../../src/model/fingerprint.js";
import { Projections } from "../../src/projections/projections.js";
import { skillContentHash, type Skill } from "../../src/skills/index.js";
import { canonical } from "../helpers/lexicon.js";
import { freshSeed, rng } from "../helpers/random.js";
import { tempRoot } from "../helpers/temp-dirs.js";
import { expectCode } from "../helpers/gavel-error.js";

const seed = freshSeed();
const r = rng(seed);
const DIM = 8;
const fp: ModelFingerprint = { architecture: "llama", nLayer: 5, nEmbd: 64, nVocab: 512, vocabHash: "ef".repeat(32) };
const HUB = "hub: top match of 40% of 32 generic probe tasks";
let projections: Projections;
const tmp = tempRoot("gavel-warnings-test-");
const freshDir = () => tmp.fresh();

beforeAll(async () => {
  projections = await Projections.random(fp, { seed: 5, dim: DIM });
});

function keys(rows: number): Float32Array {
  const k = new Float32Array(rows * DIM);
  for (let i = 0; i < k.length; i++) k[i] = r() * 2 - 1;
  return k;
}
function skill(id: string, warnings: string[] = []): Skill {
  const description = `${id}: reads reports and writes tables`;
  const body = `Use ${id} for ${id} reports and query logs.`;
  return { id, name: id, description, body, meta: {}, contentHash: skillContentHash(id, description, body), source: `${id}/SKILL.md`, warnings, disableModelInvocation: false };
}

/** A copy of the bank as a SIGKILL now would leave it (no lock), opened: its lexicon must not need a rebuild. */
async function openKilled(dir: string, what: string): Promise<Library> {
  const to = freshDir();
  await cp(dir, to, { recursive: true });
  await rm(join(to, "lock"), { force: true });
  const lib = await Library.open(to, projections, { create: false });
  expect(lib.lexicon.rebuilt, what).toBeUndefined();
  // and it is what a rebuild from the texts makes
  await cp(to, `${to}-fresh`, { recursive: true });
  await rm(join(`${to}-fresh`, "lock"));
  await rm(join(`${to}-fresh`, "lexicon.bin"));
  const fresh = await Library.open(`${to}-fresh`, projections, { create: false });
  expect(canonical(fresh.lexicon.index), what).toEqual(canonical(lib.lexicon.index));
  await fresh.close();
  return lib;
}

describe(`Library.setWarnings (seed ${seed})`, () => {
  it("flags a skill in place after its install: same keys, same place, the lexicon in step at every moment", async () => {
    const dir = freshDir();
    const lib = await Library.open(dir, projections, { create: true });
    const ids = ["a", "b", "c"];
    const stored = new Map<string, Float32Array>();
    // an install: each skill stored (one with a loader's warning), then one commit
    for (const id of ids) {
      const k = keys(2 + Math.floor(r() * 3));
      await lib.save(skill(id, id === "b" ? ["b/SKILL.md: a loader warning"] : []), { keyTokens: Array(k.length / DIM).fill(1), keyPositions: Array(k.length / DIM).fill(0), renderTokens: 9, renderCut: { descriptionChars: 1, bodyChars: 1 } }, k);
      lib.track(id, k);
      stored.set(id, k);
    }
    await lib.commit();
    const before = lib.store.stats();
    const entriesBefore = lib.store.entries();

    // the probes flag the first skill (not the last: a skill moved to the end would show the bug)
    expect(await lib.setWarnings("a", [HUB])).toBe(true);
    expect(await lib.setWarnings("b", [...lib.entry("b").warnings!, HUB])).toBe(true);
    expect(await lib.setWarnings("no-such-skill", [HUB])).toBe(false);
    expect(lib.store.dirty).toBe(true);
    expect(lib.store.entries().map((e) => e.id)).toEqual(ids);
    expect(lib.store.stats()).toEqual(before); // no row written
    for (const [i, e] of lib.store.entries().entries()) {
      const { warnings: _w, ...rest } = e;
      const { warnings: _v, ...was } = entriesBefore[i];
      expect(rest).toEqual(was);
    }
    expect(lib.entry("a").warnings).toEqual([HUB]);
    expect(lib.entry("b").warnings).toEqual(["b/SKILL.md: a loader warning", HUB]);
    expect(Object.isFrozen(lib.entry("a")) && Object.isFrozen(lib.entry("a").warnings)).toBe(true);
    await expectCode(lib.setWarnings("a", [42 as unknown as string]), "INVALID_ARGUMENT");

    // killed before the flag's commit: the install's state, no flag
    let k1 = await openKilled(dir, `seed ${seed}, killed before the flag's commit`);
    expect(k1.entry("a").warnings).toBeUndefined();
    await k1.close();
    // killed between the lexicon's half of the commit and the manifest
    await lib.texts.syncDir();
    await lib.lexicon.prepare(lib.store.generation + 1);
    k1 = await openKilled(dir, `seed ${seed}, killed inside the flag's commit`);
    expect(k1.entry("a").warnings).toBeUndefined();
    await k1.close();

    await lib.commit();
    const k2 = await openKilled(dir, `seed ${seed}, after the flag's commit`);
    expect(k2.store.entries().map((e) => e.id)).toEqual(ids);
    expect(k2.entry("a").warnings).toEqual([HUB]);
    expect(k2.store.stats().deadKeys).toBe(0);
    for (const [id, k] of stored) expect(await k2.store.readKeys(id), id).toEqual(k);
    await k2.close();

    // a reinstall-style change afterwards still lands in step; an empty list drops the field
    expect(await lib.setWarnings("a", [])).toBe(true);
    await lib.commit();
    await lib.close();
    const re = await Library.open(dir, projections, { create: false });
    expect(re.lexicon.rebuilt).toBeUndefined();
    expect("warnings" in re.entry("a")).toBe(false);
    expect(re.entry("b").warnings).toEqual(["b/SKILL.md: a loader warning", HUB]);
    await re.close();
  });

  it("is refused on a snapshot, and a snapshot moves to the flag's commit keeping the skill's keys", async () => {
    const dir = freshDir();
    const lib = await Library.open(dir, projections, { create: true });
    for (const id of ["a", "b"]) {
      const k = keys(2);
      await lib.save(skill(id), { keyTokens: [1, 1], keyPositions: [0, 0], renderTokens: 4, renderCut: { descriptionChars: 1, bodyChars: 1 } }, k);
      lib.track(id, k);
    }
    await lib.commit();
    const snap = await Library.openSnapshot(dir, projections);
    await expectCode(snap.setWarnings("a", [HUB]), "INVALID_ARGUMENT", /read-only/);
    const q = keys(1);
    const g0 = await snap.keys.glance(q, { k: 1 });
    await lib.setWarnings("a", [HUB]);
    await lib.commit();
    expect(await snap.refresh()).toBe(true);
    expect(snap.entry("a").warnings).toEqual([HUB]);
    expect(snap.lexicon.rebuilt).toBeUndefined();
    expect(snap.store.entries().map((e) => e.id)).toEqual(["a", "b"]);
    const g1 = await snap.keys.glance(q, { k: 1 });
    expect(Array.from(g1.g)).toEqual(Array.from(g0.g));
    await snap.close();
    await lib.close();
  });
});
