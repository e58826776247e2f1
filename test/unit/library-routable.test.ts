// Library.routable() is cached while the bank's entries and the keys held in memory are unchanged (a
// live context asks for it on every token). After every kind of change it must equal a fresh walk of
// the entries: the tracked skills, in bank order, without those that disable model invocation. So is
// Library.label() (each held skill's id and name, which a route reads for every glance column): after
// every change it must equal the entries' own, names changing with new versions.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Library } from "../../src/bank/library.js";
import type { ModelFingerprint } from "../../src/model/fingerprint.js";
import { Projections } from "../../src/projections/projections.js";
import { skillContentHash, type Skill } from "../../src/skills/index.js";
import { freshSeed, rng } from "../helpers/random.js";

const DIM = 8;
const fp: ModelFingerprint = { architecture: "llama", nLayer: 5, nEmbd: 64, nVocab: 512, vocabHash: "cd".repeat(32) };
let projections: Projections;
let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "gavel-routable-test-"));
  projections = await Projections.random(fp, { seed: 7, dim: DIM });
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

function skill(id: string, version: number, disabled: boolean): Skill {
  const description = `${id} v${version}: reads reports`;
  const body = `Use ${id} for reports (${version}).`;
  return { id, name: `${id}-n${version % 7}`, description, body, meta: {}, contentHash: skillContentHash(id, description, body), source: `${id}/SKILL.md`, warnings: [], disableModelInvocation: disabled };
}

describe("Library.routable()", () => {
  it("equals a fresh walk of the entries after every change (save, replace, track, untrack, warnings, remove), and hands out copies", async () => {
    const seed = freshSeed();
    const r = rng(seed);
    const lib = await Library.open(join(root, "bank"), projections, { create: true });
    const tracked = new Set<string>();
    const disabled = new Map<string, boolean>();
    const keys = () => {
      const k = new Float32Array((1 + Math.floor(r() * 3)) * DIM);
      for (let i = 0; i < k.length; i++) k[i] = r() * 2 - 1;
      return k;
    };
    const save = async (id: string, track = r() < 0.8) => {
      const k = keys();
      const off = r() < 0.25;
      await lib.save(skill(id, Math.floor(r() * 1e6), off), { keyTokens: Array(k.length / DIM).fill(1), keyPositions: Array(k.length / DIM).fill(0), renderTokens: 9, renderCut: { descriptionChars: 1, bodyChars: 1 } }, k);
      disabled.set(id, off);
      tracked.delete(id); // a save takes the replaced version's keys away
      if (track) {
        lib.track(id, k);
        tracked.add(id);
      }
    };
    const expected = () => lib.store.entries().filter((e) => tracked.has(e.id) && !disabled.get(e.id)).map((e) => e.id);
    const check = (what: string) => {
      const first = lib.routable();
      expect(Array.from(first, (h) => lib.idOf(h)), `seed ${seed}: ${what}`).toEqual(expected());
      first.fill(-1); // a caller's writes must not reach the next answer
      expect(Array.from(lib.routable(), (h) => lib.idOf(h)), `seed ${seed}: ${what}, asked again`).toEqual(expected());
      // every held skill's label, routable or not, as the entries say now (asked twice: once cached)
      for (let pass = 0; pass < 2; pass++) {
        for (const h of lib.keys.handles()) {
          const id = lib.idOf(h);
          if (!lib.store.has(id)) continue; // held keys of a skill removed from the store alone: no name
          expect(lib.label(h), `seed ${seed}: ${what}, label of ${id}, pass ${pass}`).toEqual({ id, name: lib.store.get(id)!.name });
        }
      }
    };
    const ids = Array.from({ length: 12 }, (_, i) => `s${i}`);
    for (const id of ids) await save(id);
    check("installed");
    // a new version saved but not yet tracked (an install between its save and its track)
    const first = lib.store.entries().find((e) => tracked.has(e.id))!.id;
    await save(first, false);
    check(`${first} re-staged, keys not yet tracked`);
    // the store changed under the library (its keys still held): only the entries' version says so
    const second = lib.store.entries().find((e) => tracked.has(e.id))!.id;
    await lib.store.remove(second);
    check(`${second} removed from the store alone`);
    // the store renamed a skill under the library, its keys still held (same handle): only the
    // entries' version tells the labels
    const third = lib.store.entries().find((e) => tracked.has(e.id))!;
    await lib.store.put({ ...third, name: `${third.id}-renamed` }, await lib.store.readKeys(third));
    check(`${third.id} renamed in the store alone`);
    for (let step = 0; step < 40; step++) {
      const id = ids[Math.floor(r() * ids.length)];
      const op = Math.floor(r() * 5);
      if (op === 0) await save(id); // a new version of a skill (re-staged, moved to the end)
      else if (op === 1 && lib.store.has(id)) {
        lib.track(id, keys());
        tracked.add(id);
      } else if (op === 2) {
        lib.untrack(id);
        tracked.delete(id);
      } else if (op === 3) await lib.setWarnings(id, [`flag ${step}`]);
      else if (lib.store.has(id)) {
        await lib.remove(id);
        tracked.delete(id);
      }
      check(`step ${step}, op ${op} on ${id}`);
    }
    await lib.close();
  });
});
