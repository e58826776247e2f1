// Readers of a bank's last committed snapshot (issue 17, "readers never blocked"): BankStore and
// Library opened without the lock see the committed state only, change nothing on disk, refuse
// writes, and a snapshot library moves to newer commits (keys, lexicon and texts as a fresh open
// reads them), running a read again when a writer pruned a text it needed meanwhile. A read, or a
// write that takes something away, waiting for the library's lock leaves at once when its signal
// aborts, and a refresh that no read waits for any more stops waiting for its swap.
import { existsSync } from "node:fs";
import { readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { BankStore, bankHeaderFor, type BankHeader } from "../../src/bank/index.js";
import { Library } from "../../src/bank/library.js";
import { GavelError } from "../../src/errors.js";
import type { ModelFingerprint } from "../../src/model/fingerprint.js";
import { Projections } from "../../src/projections/projections.js";
import { skillContentHash, type Skill } from "../../src/skills/index.js";
import { freshSeed, rng } from "../helpers/random.js";
import { tempRoot } from "../helpers/temp-dirs.js";
import { expectCode } from "../helpers/gavel-error.js";

const seed = freshSeed();
const r = rng(seed);
const DIM = 8;
const fp: ModelFingerprint = { architecture: "llama", nLayer: 5, nEmbd: 64, nVocab: 512, vocabHash: "cd".repeat(32) };
let projections: Projections;
let header: BankHeader;
const tmp = tempRoot("gavel-snapshot-test-");
const freshDir = () => tmp.fresh();

beforeAll(async () => {
  projections = await Projections.random(fp, { seed: 4, dim: DIM });
  header = bankHeaderFor(projections);
});

/** n unit rows of random keys. */
function keys(rows: number): Float32Array {
  const k = new Float32Array(rows * DIM);
  for (let i = 0; i < rows; i++) {
    let norm = 0;
    for (let j = 0; j < DIM; j++) norm += (k[i * DIM + j] = r() * 2 - 1) ** 2;
    for (let j = 0; j < DIM; j++) k[i * DIM + j] /= Math.sqrt(norm);
  }
  return k;
}
function skill(id: string, version: number): Skill {
  const description = `${id} version ${version}: reads reports and writes tables`;
  const body = `Use ${id} for reports ${version}.`;
  return { id, name: id, description, body, meta: {}, contentHash: skillContentHash(id, description, body), source: `${id}/SKILL.md`, warnings: [], disableModelInvocation: false };
}
const entryInput = (id: string, rows = 2) => ({ id, name: id, description: "d", contentHash: "ab".repeat(32), source: "t", disableModelInvocation: false, keyTokens: Array(rows).fill(1), renderTokens: rows });
/** What install records beside `rows` keys. */
const keysRecord = (rows: number) => ({ keyTokens: Array(rows).fill(1), keyPositions: Array(rows).fill(0), renderTokens: rows, renderCut: { descriptionChars: 1, bodyChars: 1 } });
/** Installs a skill as Router's install does: save, track, commit. */
async function install(lib: Library, id: string, version: number, rows = 2): Promise<void> {
  const k = keys(rows);
  await lib.save(skill(id, version), keysRecord(rows), k);
  lib.track(id, k);
  await lib.commit();
}
/** What a call rejected with (null when it resolved). */
const outcome = (p: Promise<unknown>): Promise<unknown> => p.then(() => null, (e: unknown) => e);
/** A read of `lib` held inside until `release()`. */
function heldRead(lib: Library): { held: Promise<void>; release: () => void } {
  let release!: () => void;
  const inside = new Promise<void>((r) => (release = r));
  return { held: lib.reading(() => inside), release };
}
const aborted = (verb: string, cause: unknown) => ({ name: "GavelError", code: "ABORTED", message: `${verb}: the operation was aborted`, cause });
/** Each skill's glance score for one query, by id: equal iff the two libraries hold the same keys. */
async function scores(lib: Library, q: Float32Array): Promise<Map<string, number>> {
  const res = await lib.keys.glance(q, { k: 1 });
  return new Map(Array.from(res.handles, (h, i) => [lib.idOf(h), res.g[i]]));
}
/** The BankStore cases' starting point: a bank created in `dir` whose one commit holds "a" (2 keys), and its writer, still open. */
async function writerWithCommittedA(dir: string): Promise<BankStore> {
  const w = await BankStore.open(dir, header, { create: true });
  await w.put(entryInput("a"), keys(2));
  await w.commit();
  return w;
}
/** The Library cases' starting point: a writer over a fresh bank with `ids` installed, and a snapshot opened after. */
async function libraryAndSnapshot(ids: string[]): Promise<{ dir: string; w: Library; snap: Library }> {
  const dir = freshDir();
  const w = await Library.open(dir, projections, { create: true });
  for (const id of ids) await install(w, id, 1);
  return { dir, w, snap: await Library.openSnapshot(dir, projections) };
}

describe(`BankStore.openSnapshot (seed ${seed})`, () => {
  it("reads the committed state beside a writer that holds the lock, changes no byte, and refuses writes", async () => {
    const dir = freshDir();
    const w = await writerWithCommittedA(dir);
    await w.put(entryInput("b", 3), keys(3)); // staged, not committed
    await writeFile(join(dir, "manifest.json.0123abcd.tmp"), "torn"); // an interrupted commit's leftover
    const before = await Promise.all((await readdir(dir)).map(async (f) => [f, (await stat(join(dir, f))).size] as const));
    const snap = await BankStore.openSnapshot(dir, header);
    expect(snap.readOnly).toBe(true);
    expect(snap.entries().map((e) => e.id)).toEqual(["a"]);
    expect(await snap.moved()).toBe(false);
    for (const write of [() => snap.put(entryInput("c", 1), keys(1)), () => snap.remove("a"), () => snap.commit(), () => snap.compact()]) {
      await expectCode(write(), "INVALID_ARGUMENT", /read-only/);
    }
    // nothing the writer left was touched: not the staged rows, not the temp file, not the lock
    const after = await Promise.all((await readdir(dir)).map(async (f) => [f, (await stat(join(dir, f))).size] as const));
    expect(new Map(after)).toEqual(new Map(before));
    await w.commit();
    expect(await snap.moved()).toBe(true);
    expect((await BankStore.openSnapshot(dir, header)).entries().map((e) => e.id)).toEqual(["a", "b"]);
    // a snapshot opened before a compaction still reads its keys from the file the compaction removed
    const k = await snap.readKeys("a");
    await w.remove("a");
    await w.compact();
    expect((await readdir(dir)).filter((f) => f.startsWith("keys"))).toEqual(["keys.4.bin"]);
    expect(await snap.readKeys("a")).toEqual(k);
    const late = await BankStore.openSnapshot(dir, header);
    expect(late.entries().map((e) => e.id)).toEqual(["b"]);
    expect((await late.readAllKeys()).keys).toHaveLength(3 * DIM);
    for (const s of [snap, late, w]) await s.close();
    expect((await readdir(dir)).includes("lock")).toBe(false);
  });

  it("creates nothing where there is no bank, and refuses a bank without its manifest", async () => {
    const dir = freshDir();
    await expectCode(BankStore.openSnapshot(dir, header), "FILE_NOT_FOUND");
    await expect(stat(dir)).rejects.toMatchObject({ code: "ENOENT" });
    await (await writerWithCommittedA(dir)).close();
    await rm(join(dir, "manifest.json"));
    const keysBefore = await readFile(join(dir, "keys.bin"));
    await expectCode(BankStore.openSnapshot(dir, header), "CORRUPT_FILE", /no manifest\.json/);
    expect(Buffer.compare(await readFile(join(dir, "keys.bin")), keysBefore)).toBe(0);
  });
});

describe(`Library.openSnapshot (seed ${seed})`, () => {
  it("moves to newer commits with the keys a fresh open reads: added, replaced and removed skills", async () => {
    const { dir, w, snap } = await libraryAndSnapshot(["s0", "s1", "s2"]);
    expect(snap.readOnly).toBe(true);
    await install(w, "s1", 2, 3); // replaced
    await w.remove("s0");
    await install(w, "s3", 1);
    const q = keys(4);
    expect([...(await scores(snap, q)).keys()].sort()).toEqual(["s0", "s1", "s2"]); // not moved yet
    expect(await snap.reading(async () => snap.store.entries().map((e) => e.id))).toEqual(["s2", "s1", "s3"]);
    const fresh = await Library.openSnapshot(dir, projections);
    expect(await scores(snap, q)).toEqual(await scores(fresh, q));
    expect(await scores(snap, q)).toEqual(await scores(w, q));
    expect(snap.lexicon.index.ids()).toEqual(fresh.lexicon.index.ids());
    expect(await snap.refresh()).toBe(false); // nothing newer
    for (const l of [snap, fresh, w]) await l.close();
  });

  it("runs a read again on the newer commit when a writer pruned a text it needed meanwhile", async () => {
    const { w, snap } = await libraryAndSnapshot(["s0", "s1"]);
    let calls = 0;
    const got = await snap.reading(async () => {
      calls++;
      const e = snap.find("s0");
      if (!e) return "gone";
      if (calls === 1) await w.remove("s0"); // another writer's uninstall prunes s0's text now
      return (await snap.text(e)).name;
    });
    expect(got).toBe("gone");
    expect(calls).toBe(2);
    // damage that is not a writer's change is not retried: the error comes out
    const e1 = snap.find("s1")!;
    await rm(w.texts.pathOf(e1.contentHash));
    await expect(snap.reading(() => snap.text(e1))).rejects.toSatisfy((err: unknown) => err instanceof GavelError && err.code === "CORRUPT_FILE");
    await snap.close();
    await w.close();
  });
  it("a read waiting for the snapshot's refresh, which waits for a read in flight, leaves at once on abort", async () => {
    const { w, snap } = await libraryAndSnapshot(["s0"]);
    let release!: () => void;
    const inside = new Promise<void>((r) => (release = r));
    const order: string[] = [];
    const held = snap.reading(() => inside).then(() => order.push("held"));
    await install(w, "s1", 1); // a newer commit: the next read refreshes first, behind `held`
    const controller = new AbortController();
    const reason = new Error("stop waiting");
    let ran = 0;
    const waiting = snap.reading(async () => void ran++, controller.signal).then(
      () => order.push("resolved"),
      (err: unknown) => (order.push("aborted"), err),
    );
    controller.abort(reason);
    const err = await waiting;
    expect(order).toEqual(["aborted"]); // before the read it waited behind left
    expect(err).toMatchObject({ name: "GavelError", code: "ABORTED", message: "Library.reading: the operation was aborted", cause: reason });
    release();
    await held;
    expect(ran).toBe(0);
    // the next read moves the snapshot
    expect(await snap.reading(async () => snap.store.entries().map((e) => e.id))).toEqual(["s0", "s1"]);
    await snap.close();
    await w.close();
  });

  it("a refresh that every read waiting for it left stops waiting for the swap: the library stays where it was, and the next read moves it", async () => {
    const { dir, w, snap } = await libraryAndSnapshot(["s0"]);
    const { held, release } = heldRead(snap);
    await install(w, "s1", 1); // a newer commit: the next read refreshes, its swap behind `held`
    const [a, b] = [new AbortController(), new AbortController()];
    const [reasonA, reasonB] = [new Error("read a stops"), new Error("read b stops")];
    let ran = 0;
    const readA = outcome(snap.reading(async () => void ran++, a.signal));
    const readB = outcome(snap.reading(async () => void ran++, b.signal));
    // the refresh has read the new commit and waits to swap (the lock's one waiter: both reads wait for the refresh)
    while (snap.waiting === 0) await new Promise((r) => setImmediate(r));
    a.abort(reasonA);
    expect(await readA).toMatchObject(aborted("Library.reading", reasonA));
    expect(snap.waiting).toBe(1); // read b still waits for the refresh: it goes on
    b.abort(reasonB);
    expect(snap.waiting).toBe(0); // no read waits for it now: it left the lock's queue at once
    expect(await readB).toMatchObject(aborted("Library.reading", reasonB));
    release();
    await held;
    expect(ran).toBe(0);
    expect(snap.store.entries().map((e) => e.id)).toEqual(["s0"]); // never swapped
    expect(await snap.reading(async () => snap.store.entries().map((e) => e.id))).toEqual(["s0", "s1"]);
    const fresh = await Library.openSnapshot(dir, projections);
    const q = keys(4);
    expect(await scores(snap, q)).toEqual(await scores(fresh, q));
    for (const l of [snap, fresh, w]) await l.close();
  });
});

describe(`Library writes waiting for the reads in flight (seed ${seed})`, () => {
  it("a replacing save, a tidy and a remove reject with ABORTED as their signal aborts while a read holds the library, change nothing, and run once it left", async () => {
    const dir = freshDir();
    const w = await Library.open(dir, projections, { create: true });
    for (const id of ["s0", "s1"]) await install(w, id, 1);
    const q = keys(4);
    const before = { entries: w.store.entries(), scores: await scores(w, q) };
    const { held, release } = heldRead(w);
    const v2 = skill("s0", 2);
    const calls: [string, (signal: AbortSignal) => Promise<unknown>][] = [
      ["Library.save", (signal) => w.save(v2, keysRecord(3), keys(3), signal)],
      ["Library.tidy", (signal) => w.tidy(signal)],
      ["Library.remove", (signal) => w.remove("s1", signal)],
    ];
    for (const [verb, call] of calls) {
      const controller = new AbortController();
      const reason = new Error(`stop ${verb}`);
      const p = outcome(call(controller.signal));
      expect(w.waiting).toBe(1); // behind the held read
      controller.abort(reason);
      expect(w.waiting).toBe(0);
      expect(await p).toMatchObject(aborted(verb, reason));
    }
    release();
    await held;
    expect(w.store.entries()).toEqual(before.entries);
    expect(await scores(w, q)).toEqual(before.scores);
    expect(existsSync(w.texts.pathOf(v2.contentHash))).toBe(false);
    expect(w.store.dirty).toBe(false);
    // each runs now
    await install(w, "s0", 2, 3);
    await w.remove("s1");
    await w.tidy();
    await w.close();
    const reopened = await Library.open(dir, projections, { create: false });
    expect(reopened.store.entries().map((e) => [e.id, e.contentHash])).toEqual([["s0", v2.contentHash]]);
    expect((await reopened.text(reopened.entry("s0"))).description).toBe(v2.description);
    await reopened.close();
  });
});
