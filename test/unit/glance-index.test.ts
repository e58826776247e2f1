/**
 * The glance index (src/bank/glance-index.ts, native/src/index):
 * - at full exactness the pruned glance equals the exact whole-bank glance bit for bit (g, m,
 *   argmax, handles), on fresh random banks (f32 and f16, skills without keys, after removals and
 *   additions the index follows), on every instruction set the CPU has;
 * - the training sample = a TypeScript partial Fisher–Yates over mulberry32; spherical k-means = a
 *   float64 TypeScript reference (the same centroids, bit for bit, where no assignment is near a tie);
 *   assignment = the best centroid up to float32 rounding on arbitrary data;
 * - an index followed through adds and removes = a fresh one over the same centroids (codes and
 *   candidates at several knob settings);
 * - the index file: loaded when sound; a missing, corrupt (checksum, magic, truncation, row counts
 *   or similarity sums out of range) or stale (dim, row counts off the bank's keys) file rebuilt,
 *   with the reason as a typed outcome;
 * - at the default knob a planted target is the pruned glance's top skill, as the exact glance's;
 * - bad knobs and another bank's dim are INVALID_ARGUMENT.
 *
 * Inputs are fresh random draws each run; the seed is logged (replay with GAVEL_TEST_SEED).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { GavelError } from "../../src/errors.js";
import { loadBinding } from "../../src/native/binding.js";
import { KeyBank } from "../../src/bank/key-bank.js";
import { FULL_EXACTNESS, GlanceIndex, _ivf, glancePruned, openGlanceIndex, saveGlanceIndex, type IndexedSkill } from "../../src/bank/glance-index.js";
import { MAGIC, parseIndexFile, type ParsedIndex } from "../../src/bank/glance-index-parse.js";
import { readFramedFile, writeFramedFile } from "../../src/util/framed-file.js";
import { decayWeights } from "../../src/kernels/kernels.js";
import { Rng } from "../../src/util/prng.js";
import { kernelIsas, restoreKernelIsaAfterEach, setKernelIsa } from "../helpers/isa.js";
import { freshSeed, nearKeys, rng, unitKeys } from "../helpers/random.js";
import { ODD_FILES, putOddFile } from "../helpers/odd-files.js";
import { tempDirs } from "../helpers/temp-dirs.js";
import { expectCode } from "../helpers/gavel-error.js";

const SEED = freshSeed();
console.log(`glance-index.test.ts seed: ${SEED} (replay with GAVEL_TEST_SEED=${SEED})`);

function randomBank(r: () => number, dim: number, n: number, keyType: "f32" | "f16"): KeyBank {
  const bank = new KeyBank(dim, { keyType });
  const topics = unitKeys(r, 6, dim);
  for (let s = 0; s < n; s++) {
    const rows = r() < 0.1 ? 0 : 1 + Math.floor(r() * 12);
    bank.add(nearKeys(r, topics, dim, Array.from({ length: rows }, () => Math.floor(r() * 6)), 0.6));
  }
  return bank;
}

function dot(a: Float32Array, i: number, b: Float32Array, j: number, dim: number): number {
  let s = 0;
  for (let d = 0; d < dim; d++) s += a[i * dim + d] * b[j * dim + d];
  return s;
}

/** The float64 reference of spherical k-means (ivf_core.h): init x's first c rows, Lloyd steps. */
function referenceKMeans(x: Float32Array, dim: number, c: number, iters: number): { centroids: Float32Array; codes: Int32Array; margin: number } {
  const n = x.length / dim;
  const cent = x.slice(0, c * dim);
  const codes = new Int32Array(n);
  let margin = Infinity; // the smallest gap between a row's best and second-best centroid, over every step
  const assign = () => {
    for (let r = 0; r < n; r++) {
      let best = 0, bs = -Infinity, second = -Infinity;
      for (let j = 0; j < c; j++) {
        const s = dot(x, r, cent, j, dim);
        if (s > bs) [second, bs, best] = [bs, s, j];
        else if (s > second) second = s;
      }
      codes[r] = best;
      if (c > 1) margin = Math.min(margin, bs - second);
    }
  };
  for (let it = 0; it < iters; it++) {
    assign();
    const sum = new Float64Array(c * dim);
    const count = new Int32Array(c);
    for (let r = 0; r < n; r++) {
      for (let d = 0; d < dim; d++) sum[codes[r] * dim + d] += x[r * dim + d];
      count[codes[r]]++;
    }
    for (let j = 0; j < c; j++) {
      if (count[j] === 0) continue;
      let ss = 0;
      for (let d = 0; d < dim; d++) ss += sum[j * dim + d] ** 2;
      if (!(ss > 0)) continue;
      const inv = 1 / Math.sqrt(ss);
      for (let d = 0; d < dim; d++) cent[j * dim + d] = sum[j * dim + d] * inv;
    }
  }
  assign();
  return { centroids: cent, codes, margin };
}

const skillOf = (h: number): IndexedSkill => ({ id: `skill-${h}`, contentHash: `hash-${h}` });
const handleOf = (s: IndexedSkill): number | undefined => (s.contentHash === `hash-${s.id.slice(6)}` ? Number(s.id.slice(6)) : undefined);

describe("glance index", () => {
  restoreKernelIsaAfterEach();
  const tempDir = tempDirs("gavel-index-");

  it("at full exactness equals the exact glance bit for bit, through removals and additions, on every ISA", async () => {
    const r = rng(SEED);
    for (const isa of kernelIsas(loadBinding())) {
      setKernelIsa(isa);
      for (const keyType of ["f32", "f16"] as const) {
        const dim = [8, 33, 64][Math.floor(r() * 3)];
        const bank = randomBank(r, dim, 40 + Math.floor(r() * 80), keyType);
        const index = await GlanceIndex.build(bank, { centroids: 1 + Math.floor(r() * 16), seed: Math.floor(r() * 1000) });
        for (let round = 0; round < 3; round++) {
          const nq = 1 + Math.floor(r() * 40);
          const queries = unitKeys(r, nq, dim);
          const weights = decayWeights(nq, nq - 1 + Math.floor(r() * 50));
          for (const k of [undefined, 1, 7]) {
            const exact = await bank.glance(queries, { weights, k });
            const pruned = await glancePruned(bank, index, queries, { weights, k, ...FULL_EXACTNESS });
            expect(pruned.handles).toEqual(exact.handles);
            expect(pruned.g).toEqual(exact.g);
            expect(pruned.m).toEqual(exact.m);
            expect(pruned.argmax).toEqual(exact.argmax);
            expect(pruned.search.survivors).toBe(bank.size);
          }
          // the bank changes; the next pruned glance follows it by itself
          const held = Array.from(bank.handles());
          for (let i = 0; i < 5 && held.length > 0; i++) bank.remove(held.splice(Math.floor(r() * held.length), 1)[0]);
          const topics = unitKeys(r, 3, dim);
          for (let i = 0; i < 7; i++) bank.add(nearKeys(r, topics, dim, [0, 1, 2].slice(0, Math.floor(r() * 4)), 0.5));
        }
        bank.dispose();
      }
    }
  });

  it("glances only the skills the bank still holds when one goes while the search runs", async () => {
    const r = rng(SEED + 7);
    const dim = 16;
    const bank = randomBank(r, dim, 150, "f32");
    const index = await GlanceIndex.build(bank, { centroids: 8 });
    const queries = unitKeys(r, 12, dim);
    const gone = bank.handles()[Math.floor(r() * bank.size)];
    const pending = glancePruned(bank, index, queries, { ...FULL_EXACTNESS, k: 10 });
    bank.remove(gone); // after the search took its snapshot, before the exact glance
    const pruned = await pending;
    const exact = await bank.glance(queries, { k: 10 });
    expect(pruned.search.handles).toContain(gone);
    expect(pruned.handles).toEqual(exact.handles);
    expect(pruned.g).toEqual(exact.g);
    bank.dispose();
  });

  // The native index takes one lock per job, and its synchronous reads take it on the JavaScript
  // thread: stats() called while a training ran froze the event loop until it ended. statsAsync and
  // exportAsync read once no job is in flight, so the loop turns meanwhile.
  it("statsAsync and exportAsync called during a training leave the event loop free and read the new centroids", async () => {
    const r = rng(SEED + 11);
    const dim = 32;
    const bank = new KeyBank(dim);
    // enough keys that a training takes many turns of the event loop, even on a fast machine
    for (let s = 0; s < 200; s++) bank.add(unitKeys(r, 300, dim));
    const index = await GlanceIndex.build(bank, { centroids: 16, seed: 1 });
    let training = true;
    const trained = index.train(bank, { centroids: 32, seed: 2, iters: 20 }).finally(() => (training = false));
    const stats = index.statsAsync();
    const exported = index.exportAsync();
    // the loop turns while the training runs on its worker thread
    expect(await new Promise((resolve) => setImmediate(() => resolve(training)))).toBe(true);
    await trained;
    const s = await stats;
    expect(s.centroids).toBe(32);
    expect(s).toEqual(index.stats());
    expect(index.needsRetrain(s)).toBe(index.needsRetrain());
    const { codes, stats: s2 } = await exported;
    expect(s2).toEqual(s);
    expect(codes.centroids).toEqual(index.exportCodes().centroids);
    bank.dispose();
  }, 300_000);

  it("samples its training rows as a partial Fisher–Yates over mulberry32", () => {
    const r = rng(SEED + 1);
    for (let t = 0; t < 20; t++) {
      const n = 1 + Math.floor(r() * 5000), count = Math.floor(r() * (n + 10)), seed = Math.floor(r() * 2 ** 32);
      const idx = Array.from({ length: n }, (_, i) => i);
      const g = new Rng(seed);
      const m = Math.min(count, n);
      for (let i = 0; i < m; i++) {
        const j = i + Math.floor(g.next() * (n - i));
        [idx[i], idx[j]] = [idx[j], idx[i]];
      }
      expect(Array.from(_ivf.sampleRows(n, count, seed))).toEqual(idx.slice(0, m));
    }
  });

  it("trains the float64 reference's centroids on separated clusters, and assigns to the best centroid on any data", async () => {
    const r = rng(SEED + 2);
    for (let t = 0; t < 6; t++) {
      const dim = 16 + Math.floor(r() * 60), c = 2 + Math.floor(r() * 12), perCluster = 5 + Math.floor(r() * 30);
      const centers = unitKeys(r, c, dim);
      // rows 0 … c−1 one per cluster (the initial centroids), the rest in a random cluster order
      const which = [...Array.from({ length: c }, (_, i) => i), ...Array.from({ length: c * perCluster }, () => Math.floor(r() * c))];
      const x = nearKeys(r, centers, dim, which, 0.15 / Math.sqrt(dim));
      const iters = Math.floor(r() * 6);
      const ref = referenceKMeans(x, dim, c, iters);
      const got = await _ivf.kmeans(x, dim, c, iters);
      expect(ref.margin).toBeGreaterThan(1e-3); // no tie float32 could break otherwise
      expect(got.codes).toEqual(ref.codes);
      expect(got.centroids).toEqual(ref.centroids);
    }
    for (let t = 0; t < 6; t++) {
      const dim = 4 + Math.floor(r() * 100), n = 20 + Math.floor(r() * 400), c = 1 + Math.floor(r() * 20);
      const x = unitKeys(r, n, dim);
      const got = await _ivf.kmeans(x, dim, c, Math.floor(r() * 4));
      for (let i = 0; i < n; i++) {
        let best = -Infinity;
        for (let j = 0; j < c; j++) best = Math.max(best, dot(x, i, got.centroids, j, dim));
        expect(got.scores[i]).toBeCloseTo(dot(x, i, got.centroids, got.codes[i], dim), 5);
        expect(got.scores[i]).toBeGreaterThanOrEqual(best - 1e-5);
      }
    }
  });

  it("followed through adds and removes, equals a fresh index over the same centroids", async () => {
    const r = rng(SEED + 3);
    const dim = 24;
    const bank = randomBank(r, dim, 120, "f32");
    const followed = await GlanceIndex.build(bank, { centroids: 12 });
    const topics = unitKeys(r, 4, dim);
    for (let step = 0; step < 60; step++) {
      const held = bank.handles();
      if (r() < 0.4 && held.length > 0) bank.remove(held[Math.floor(r() * held.length)]);
      else bank.add(nearKeys(r, topics, dim, Array.from({ length: Math.floor(r() * 9) }, () => Math.floor(r() * 4)), 0.4));
      if (r() < 0.3) await followed.sync(bank);
    }
    await followed.sync(bank);
    const e = followed.exportCodes();
    const s = followed.stats();
    const fresh = GlanceIndex._fromCentroids(dim, e.centroids, s.trainedRows, s.trainMeanSim);
    await fresh.sync(bank);
    const f = fresh.exportCodes();
    expect(f.handles).toEqual(e.handles);
    expect(f.offsets).toEqual(e.offsets);
    expect(f.codes).toEqual(e.codes);
    expect(fresh.stats().skills).toBe(bank.size);
    for (let t = 0; t < 8; t++) {
      const queries = unitKeys(r, 1 + Math.floor(r() * 20), dim);
      const knob = { nprobe: 1 + Math.floor(r() * 4), maxCandidates: Math.floor(r() * 40) };
      const a = await followed.candidates(bank, queries, knob);
      const b = await fresh.candidates(bank, queries, knob);
      expect(a.handles).toEqual(b.handles);
      expect(a.stage1).toBe(b.stage1);
      if (knob.maxCandidates > 0) expect(a.survivors).toBeLessThanOrEqual(knob.maxCandidates);
    }
    bank.dispose();
  });

  it("loads a sound file and rebuilds a missing, corrupt or stale one, saying why", async () => {
    const r = rng(SEED + 4);
    const dir = tempDir();
    const path = join(dir, "glance.index");
    const dim = 16;
    const bank = randomBank(r, dim, 60, "f32");
    const first = await openGlanceIndex(path, bank, handleOf, skillOf, { centroids: 8 });
    expect(first.outcome).toMatchObject({ kind: "rebuilt", reason: "missing" });
    const again = await openGlanceIndex(path, bank, handleOf, skillOf, { centroids: 8 });
    expect(again.outcome).toEqual({ kind: "loaded", kept: bank.size, assigned: 0, dropped: 0 });
    expect(again.index.exportCodes()).toEqual(first.index.exportCodes());
    const queries = unitKeys(r, 10, dim);
    expect((await again.index.candidates(bank, queries, { nprobe: 2, maxCandidates: 9 })).handles).toEqual(
      (await first.index.candidates(bank, queries, { nprobe: 2, maxCandidates: 9 })).handles,
    );
    // a skill gone and one added since the file was written: loaded, the new one assigned
    bank.remove(bank.handles()[0]);
    bank.add(unitKeys(r, 3, dim));
    const moved = await openGlanceIndex(path, bank, handleOf, skillOf, { centroids: 8 });
    expect(moved.outcome).toEqual({ kind: "loaded", kept: bank.size - 1, assigned: 1, dropped: 1 });
    const sound = readFileSync(path);
    const flipped = Buffer.from(sound);
    flipped[Math.floor(flipped.length / 2)] ^= 0x10;
    writeFileSync(path, flipped);
    expect((await openGlanceIndex(path, bank, handleOf, skillOf)).outcome).toMatchObject({ kind: "rebuilt", reason: "corrupt", detail: "checksum mismatch" });
    writeFileSync(path, sound.subarray(0, 40));
    expect((await openGlanceIndex(path, bank, handleOf, skillOf)).outcome).toMatchObject({ kind: "rebuilt", reason: "corrupt" });
    writeFileSync(path, Buffer.concat([Buffer.from("NOTINDEX"), sound.subarray(8)]));
    expect((await openGlanceIndex(path, bank, handleOf, skillOf)).outcome).toMatchObject({ kind: "rebuilt", reason: "corrupt", detail: "not a glance index file (magic)" });
    // another dim: stale
    const other = randomBank(r, dim + 1, 10, "f32");
    const otherIndex = await GlanceIndex.build(other);
    await saveGlanceIndex(path, otherIndex, skillOf);
    expect((await openGlanceIndex(path, bank, handleOf, skillOf)).outcome).toMatchObject({ kind: "rebuilt", reason: "stale" });
    // and what the rebuild wrote loads
    expect((await openGlanceIndex(path, bank, handleOf, skillOf)).outcome).toMatchObject({ kind: "loaded" });
    // not a regular file in its place: rebuilt over, never a blocking or unbounded read (a FIFO
    // hung the open; a link to /dev/zero read until memory ran out); a directory is left unsaved
    for (const [what, make] of ODD_FILES) {
      putOddFile(path, make);
      expect((await openGlanceIndex(path, bank, handleOf, skillOf)).outcome, what).toMatchObject({ kind: "rebuilt", reason: "corrupt" });
      if (what !== "a directory") expect((await openGlanceIndex(path, bank, handleOf, skillOf)).outcome, what).toMatchObject({ kind: "loaded" });
    }
    bank.dispose();
    other.dispose();
  });

  it("rebuilds a sealed file whose row counts are negative, below a skill's codes or off the bank's keys, or whose similarity sums are not finite", async () => {
    const r = rng(SEED + 6);
    const path = join(tempDir(), "glance.index");
    const dim = 16;
    const bank = randomBank(r, dim, 40, "f32");
    bank.add(unitKeys(r, 3, dim)); // a skill with keys, so one exists to tamper with
    await openGlanceIndex(path, bank, handleOf, skillOf, { centroids: 8 });
    const sound = readFileSync(path);
    /** The sound file with one skill's row count or similarity sum changed, sealed again (checksum and all). */
    const tampered = async (change: (f: ParsedIndex, i: number) => void) => {
      const framed = readFramedFile(sound, MAGIC, "glance index") as { header: Record<string, unknown> };
      const f = parseIndexFile(sound) as ParsedIndex;
      const i = [...f.rows].findIndex((n) => n > 0);
      change(f, i);
      await writeFramedFile(path, MAGIC, framed.header, [f.centroids, f.offsets, f.codes, f.rows, f.sims]);
    };
    // before: a negative count reached the native put, which threw INVALID_ARGUMENT out of the open
    const cases: [string, (f: ParsedIndex, i: number) => void, "corrupt" | "stale"][] = [
      ["a negative row count", (f, i) => void (f.rows[i] = -1 - Math.floor(r() * 1000)), "corrupt"],
      ["fewer rows than codes", (f, i) => void (f.rows[i] = f.offsets[i + 1] - f.offsets[i] - 1), "corrupt"],
      ["a row count off the bank's", (f, i) => void (f.rows[i] += 1 + Math.floor(r() * 5)), "stale"],
      ["a similarity sum not finite", (f, i) => void (f.sims[i] = [NaN, Infinity, -Infinity][Math.floor(r() * 3)]), "corrupt"],
    ];
    for (const [what, change, reason] of cases) {
      await tampered(change);
      expect((await openGlanceIndex(path, bank, handleOf, skillOf)).outcome, what).toMatchObject({ kind: "rebuilt", reason });
      expect((await openGlanceIndex(path, bank, handleOf, skillOf)).outcome, `${what}, rebuilt`).toMatchObject({ kind: "loaded" });
    }
    bank.dispose();
  });

  it("at the default knob ranks a planted target first, as the exact glance does", async () => {
    const r = rng(SEED + 5);
    const dim = 64;
    const bank = new KeyBank(dim);
    const topics = unitKeys(r, 50, dim);
    for (let s = 0; s < 3000; s++) {
      const t = Math.floor(r() * 50);
      bank.add(nearKeys(r, topics, dim, Array.from({ length: 4 + Math.floor(r() * 8) }, () => t), 0.25));
    }
    const target = unitKeys(r, 8, dim);
    const handle = bank.add(target);
    const index = await GlanceIndex.build(bank, { seed: SEED % 1000 });
    const rows = Array.from({ length: 30 }, (_, i) => i % 8);
    const queries = nearKeys(r, target, dim, rows, 0.08);
    const exact = await bank.glance(queries);
    const pruned = await glancePruned(bank, index, queries);
    const top = (res: { g: Float32Array; handles: Int32Array }) => res.handles[res.g.indexOf(Math.max(...res.g))];
    expect(top(exact)).toBe(handle);
    expect(top(pruned)).toBe(handle);
    expect(pruned.search.survivors).toBeLessThan(bank.size);
    bank.dispose();
  });

  it("refuses bad knobs and another bank's dim", async () => {
    const r = rng(SEED + 6);
    const bank = randomBank(r, 8, 20, "f32");
    const index = await GlanceIndex.build(bank);
    const q = unitKeys(r, 2, 8);
    for (const knob of [{ nprobe: 0 }, { nprobe: 1.5 }, { maxCandidates: -1 }]) {
      await expectCode(glancePruned(bank, index, q, knob), "INVALID_ARGUMENT");
    }
    const other = new KeyBank(9);
    await expect(index.sync(other)).rejects.toBeInstanceOf(GavelError);
    await expectCode(GlanceIndex.build(new KeyBank(8)), "INVALID_ARGUMENT");
    bank.dispose();
    other.dispose();
  });
});
