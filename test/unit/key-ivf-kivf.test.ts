/**
 * The key IVF glance (src/bank/key-ivf.ts, native/src/kivf):
 * - probing every list it equals the exact glance bit for bit (g and handles), on fresh random
 *   banks (f32 and f16, skills without keys, k from 1 to past the skill count, zero weights), through
 *   removals and additions the index follows by itself, on every instruction set the CPU has;
 * - every key sits in the list of the best fine centroid among its 4 best coarse groups' (a plain
 *   float64 reference of the rule; near-ties skipped), after the training and after a sync;
 * - the two-level probe (a row scores the coarse groups, then only its best groups' fine centroids)
 *   equals a plain float64 reference of the same rule on fresh random banks (rows whose probe or
 *   top-k boundary is a near-tie weighted 0), and over every group picks the flat probe's lists
 *   (g bit for bit), on every instruction set;
 * - the spread probe (nprobe the rows' mean, shared out by weight) equals a plain float64 reference
 *   of its rule (near-tie rows weighted 0, the shares recomputed), gives the even probe's g bit for bit
 *   under uniform weights and the exact glance's probing every list, and the bound and codes change
 *   no bit of it, on every instruction set;
 * - the list bound (prune) changes no bit: with every list probed it is the exact glance, at a
 *   partial nprobe the unpruned result, and on a clustered bank it skips pairs;
 * - the int8 list codes (i8, with and without the list bound) change no bit: with every list probed
 *   it is the exact glance, at a partial nprobe the plain key IVF's result, through removals,
 *   additions and compaction, on every instruction set (scalar, AVX2's maddubs, AVX-512 VNNI); on a
 *   clustered bank the bound sends only a share of the coded pairs to float32;
 * - at the default nprobe, on a clustered bank (keys near a vocabulary of token directions, as
 *   shallow-layer keys are), its top 20 agree with the exact glance's while it scores a small share
 *   of the (row, key) pairs;
 * - its memory is a few bytes a key, well under the bank's;
 * - the index file: a saved index reopens to the same codes and results, skills the bank gained or
 *   lost since are followed; a missing, corrupt (checksum, magic, truncation) or stale (dim) file
 *   is rebuilt, with the reason as a typed outcome;
 * - bad arguments are INVALID_ARGUMENT.
 *
 * Inputs are fresh random draws each run; the seed is logged (replay with GAVEL_TEST_SEED).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { KeyBank } from "../../src/bank/key-bank.js";
import { defaultNprobe, KeyIvf } from "../../src/bank/key-ivf.js";
import { openKeyIvf, type KeyIvfSkill } from "../../src/bank/key-ivf-file.js";
import { decayWeights } from "../../src/kernels/kernels.js";
import { loadBinding } from "../../src/native/binding.js";
import { kernelIsas, restoreKernelIsaAfterEach, setKernelIsa } from "../helpers/isa.js";
import { freshSeed, nearKeys, rng, unitKeys } from "../helpers/random.js";
import { ODD_FILES, putOddFile } from "../helpers/odd-files.js";
import { tempDirs } from "../helpers/temp-dirs.js";
import { expectCode } from "../helpers/gavel-error.js";

const SEED = freshSeed();
console.log(`key-ivf-kivf.test.ts seed: ${SEED} (replay with GAVEL_TEST_SEED=${SEED})`);

/** v rounded to the nearest float16 (ties to even), as an f16 bank holds it; |v| < 65,504. */
function toHalf(v: number): number {
  if (v === 0) return v;
  const a = Math.abs(v);
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e--;
  if (2 ** (e + 1) <= a) e++;
  const q = 2 ** (Math.max(e, -14) - 10);
  const m = a / q, f = Math.floor(m);
  const rm = m - f > 0.5 || (m - f === 0.5 && f % 2 === 1) ? f + 1 : f;
  return Math.sign(v) * rm * q;
}

function topN(g: Float32Array, n: number): number[] {
  return Array.from(g.keys())
    .sort((a, b) => g[b] - g[a] || a - b)
    .slice(0, n);
}

/** Row ai of a against row bi of b (dim wide), summed in float64. */
function dot(a: Float32Array, ai: number, b: Float32Array, bi: number, dim: number): number {
  let s = 0;
  for (let d = 0; d < dim; d++) s += a[ai * dim + d] * b[bi * dim + d];
  return s;
}

/**
 * The plain reference of row i's top k over the probed lists: each skill's best key among them (a
 * skill without keys at −1, one with no probed key left out), best first (ties to the lower column);
 * `tie` when the k-th and the next are within eps (the native float32 order may differ there).
 */
function referenceTop(
  queries: Float32Array, i: number, probed: Set<number>, codes: ReturnType<KeyIvf["exportCodes"]>,
  keysOf: Map<number, Float32Array>, dim: number, k: number, eps: number,
): { top: { col: number; v: number }[]; tie: boolean } {
  const offers: { col: number; v: number }[] = [];
  for (let col = 0; col < codes.handles.length; col++) {
    const keys = keysOf.get(codes.handles[col])!;
    const n = keys.length / dim;
    if (n === 0) {
      offers.push({ col, v: -1 });
      continue;
    }
    let m = -Infinity;
    for (let j = 0; j < n; j++) if (probed.has(codes.codes[codes.offsets[col] + j])) m = Math.max(m, dot(queries, i, keys, j, dim));
    if (m > -Infinity) offers.push({ col, v: m });
  }
  offers.sort((a, b) => b.v - a.v || a.col - b.col);
  const kk = Math.min(k, codes.handles.length);
  return { top: offers.slice(0, kk), tie: offers.length > kk && offers[kk - 1].v - offers[kk].v < eps };
}

/** A bank of 80-159 skills of 0-12 keys near 12 random topics (dim 16, 33 or 64), each skill's keys kept. */
function topicBank(r: () => number): { dim: number; topics: Float32Array; bank: KeyBank; keysOf: Map<number, Float32Array> } {
  const dim = [16, 33, 64][Math.floor(r() * 3)];
  const topics = unitKeys(r, 12, dim);
  const bank = new KeyBank(dim);
  const keysOf = new Map<number, Float32Array>();
  for (let s = 0; s < 80 + Math.floor(r() * 80); s++) {
    const keys = nearKeys(r, topics, dim, r() < 0.05 ? 0 : 1 + Math.floor(r() * 12), 0.4 + r());
    keysOf.set(bank.add(keys), keys);
  }
  return { dim, topics, bank, keysOf };
}

const skillOf = (h: number): KeyIvfSkill => ({ id: `skill-${h}`, contentHash: `hash-${h}` });
const handleOf = (s: KeyIvfSkill): number | undefined => (s.contentHash === `hash-${s.id.slice(6)}` ? Number(s.id.slice(6)) : undefined);

describe("key IVF glance", () => {
  restoreKernelIsaAfterEach();
  const tempDir = tempDirs("gavel-kivf-");

  it("probing every list equals the exact glance bit for bit, through removals and additions, on every ISA", async () => {
    const r = rng(SEED);
    for (const isa of kernelIsas(loadBinding())) {
      setKernelIsa(isa);
      for (const keyType of ["f32", "f16"] as const) {
        const dim = [8, 33, 64, 256, 600][Math.floor(r() * 5)];
        const topics = unitKeys(r, 8, dim);
        const bank = new KeyBank(dim, { keyType });
        const addSkills = (n: number) => {
          for (let s = 0; s < n; s++) {
            const rows = r() < 0.1 ? 0 : 1 + Math.floor(r() * 20);
            bank.add(nearKeys(r, topics, dim, rows, 0.3 + r()));
          }
        };
        addSkills(30 + Math.floor(r() * 90));
        // flat or two-level (groups > 1) k-means and assignment
        const groups = r() < 0.5 ? 1 : 2 + Math.floor(r() * 5);
        const index = await KeyIvf.build(bank, { centroids: 1 + Math.floor(r() * 24), seed: Math.floor(r() * 1000), iters: Math.floor(r() * 4), groups });
        const centroids = index.stats().centroids;
        for (let round = 0; round < 3; round++) {
          const nq = 1 + Math.floor(r() * 60);
          const queries = nearKeys(r, topics, dim, nq, 0.5);
          const weights = decayWeights(nq, nq - 1 + Math.floor(r() * 50));
          if (nq > 2) weights[1] = 0;
          // 129: with the int8 codes a wide vote seeds from three lists a row (kCodeSeedPerK)
          for (const k of [undefined, 1, 7, 129, bank.size + 3]) {
            const exact = await bank.glance(queries, { weights, k });
            for (const nprobe of ["all", centroids] as const) {
              const ivf = await index.glance(bank, queries, { weights, k, nprobe });
              expect(ivf.handles).toEqual(exact.handles);
              expect(ivf.g).toEqual(exact.g);
              expect(ivf.scored).toBe(nq * bank.keys);
              // the list bound skips lists, never changes a bit
              const pruned = await index.glance(bank, queries, { weights, k, nprobe, prune: true });
              expect(pruned.handles).toEqual(exact.handles);
              expect(pruned.g).toEqual(exact.g);
              expect(pruned.scored).toBeLessThanOrEqual(nq * bank.keys);
              // the int8 codes and bound skip pairs, never change a bit
              for (const prune of [false, true]) {
                const coded = await index.glance(bank, queries, { weights, k, nprobe, prune, i8: true });
                expect(coded.handles).toEqual(exact.handles);
                expect(coded.g).toEqual(exact.g);
              }
            }
            // at a partial nprobe: the plain key IVF's result
            const part = Math.max(1, Math.floor(centroids / 3));
            const plain = await index.glance(bank, queries, { weights, k, nprobe: part });
            const coded = await index.glance(bank, queries, { weights, k, nprobe: part, i8: true });
            expect(coded.handles).toEqual(plain.handles);
            expect(coded.g).toEqual(plain.g);
          }
          // the bank changes; the next glance follows it
          const handles = Array.from(bank.handles());
          for (let i = 0; i < 1 + Math.floor(r() * 10) && handles.length > 1; i++) {
            const at = Math.floor(r() * handles.length);
            bank.remove(handles[at]);
            handles.splice(at, 1);
          }
          addSkills(1 + Math.floor(r() * 20));
        }
        // most of the bank removed at once (the index compacts its lists), then glanced again
        const left = Array.from(bank.handles());
        for (let i = 0; i < left.length; i++) if (i % 4 !== 0) bank.remove(left[i]);
        addSkills(3);
        const queries = nearKeys(r, topics, dim, 20, 0.5);
        const exact = await bank.glance(queries);
        expect((await index.glance(bank, queries, { nprobe: "all" })).g).toEqual(exact.g);
        expect((await index.glance(bank, queries, { nprobe: "all", prune: true })).g).toEqual(exact.g);
        expect((await index.glance(bank, queries, { nprobe: "all", i8: true })).g).toEqual(exact.g);
        // installs alone (the index appends their columns)
        addSkills(5);
        const more = await index.glance(bank, queries, { nprobe: "all" });
        expect(more.handles).toEqual(bank.handles());
        expect(more.g).toEqual((await bank.glance(queries)).g);
        expect((await index.glance(bank, queries, { nprobe: "all", i8: true, prune: true })).g).toEqual(more.g);
        await index.sync(bank);
        expect(index.stats().skills).toBe(bank.size);
        expect(index.stats().rows).toBe(bank.keys);
        bank.dispose();
      }
    }
  });

  it("assigns every key to the best fine centroid of its 4 best coarse groups, as a plain reference does, on every ISA", async () => {
    const r = rng(SEED ^ 0x5a55);
    const EPS = 1e-5;
    let checked = 0, total = 0;
    for (const isa of kernelIsas(loadBinding())) {
      setKernelIsa(isa);
      const dim = [16, 40, 64][Math.floor(r() * 3)];
      const topics = unitKeys(r, 20, dim);
      const bank = new KeyBank(dim, { keyType: r() < 0.5 ? "f16" : "f32" });
      const keysOf = new Map<number, Float32Array>();
      const add = (): void => {
        const keys = nearKeys(r, topics, dim, r() < 0.05 ? 0 : 1 + Math.floor(r() * 40), 0.3 + r());
        // what the bank holds (f16 banks round each key)
        const h = bank.add(keys);
        keysOf.set(h, bank.keyType === "f16" ? Float32Array.from(keys, toHalf) : keys);
      };
      for (let s = 0; s < 150 + Math.floor(r() * 150); s++) add();
      const index = await KeyIvf.build(bank, { centroids: 40 + Math.floor(r() * 60), groups: 5 + Math.floor(r() * 6), seed: Math.floor(r() * 1000) });
      for (let s = 0; s < 30; s++) add(); // assigned by a sync, not the training
      await index.sync(bank);
      const codes = index.exportCodes();
      const G = codes.groupStart.length - 1;
      expect(G).toBeGreaterThan(4);
      for (let col = 0; col < codes.handles.length; col++) {
        const keys = keysOf.get(codes.handles[col])!;
        for (let j = 0; j < keys.length / dim; j++) {
          total++;
          const gs = Array.from({ length: G }, (_, g) => ({ g, v: dot(keys, j, codes.coarse, g, dim) })).sort((a, b) => b.v - a.v || a.g - b.g);
          if (gs[3].v - gs[4].v < EPS) continue; // a near-tie at the groups' boundary
          const cand: { c: number; v: number }[] = [];
          for (const { g } of gs.slice(0, 4)) for (let c = codes.groupStart[g]; c < codes.groupStart[g + 1]; c++) cand.push({ c, v: dot(keys, j, codes.centroids, c, dim) });
          cand.sort((a, b) => b.v - a.v || a.c - b.c);
          if (cand.length > 1 && cand[0].v - cand[1].v < EPS) continue; // a near-tie for the best
          checked++;
          expect(codes.codes[codes.offsets[col] + j]).toBe(cand[0].c);
        }
      }
      bank.dispose();
    }
    expect(checked).toBeGreaterThan(0.9 * total);
  });

  it("the two-level probe equals a plain reference of its rule, and over every group the flat probe, on every ISA", async () => {
    const r = rng(SEED ^ 0x2e7e);
    const EPS = 1e-4;
    let checkedRows = 0, totalRows = 0;
    for (const isa of kernelIsas(loadBinding())) {
      setKernelIsa(isa);
      const { dim, topics, bank, keysOf } = topicBank(r);
      const index = await KeyIvf.build(bank, { centroids: 24 + Math.floor(r() * 40), groups: 3 + Math.floor(r() * 6), seed: Math.floor(r() * 1000) });
      const codes = index.exportCodes();
      const C = index.stats().centroids, G = codes.groupStart.length - 1;
      expect(G).toBeGreaterThan(1);
      for (let round = 0; round < 4; round++) {
        const nq = 5 + Math.floor(r() * 40);
        const queries = nearKeys(r, topics, dim, nq, 0.6);
        const k = [1, 3, 7][Math.floor(r() * 3)];
        const nprobe = 1 + Math.floor(r() * Math.min(12, C - 1));
        const probeGroups = round === 0 ? G : 1 + Math.floor(r() * G); // round 0: the flat probe's rule
        // over every group: the flat probe's lists, so its g bit for bit
        const weights = decayWeights(nq);
        const flat = await index.glance(bank, queries, { weights, k, nprobe });
        expect(flat.probeGroups).toBe(0);
        const every = await index.glance(bank, queries, { weights, k, nprobe, probeGroups: G + Math.floor(r() * 3) });
        expect(every.probeGroups).toBe(G);
        expect(every.g).toEqual(flat.g);
        // the list bound at a partial nprobe: the flat probe's g, bit for bit
        expect((await index.glance(bank, queries, { weights, k, nprobe, prune: true })).g).toEqual(flat.g);
        // the plain reference of the rule at t groups; near-tie rows weighted 0
        const first = await index.glance(bank, queries, { weights, k, nprobe, probeGroups });
        const t = first.probeGroups;
        expect(t).toBeGreaterThanOrEqual(1);
        expect(t).toBe(Math.min(probeGroups, G));
        const w = new Float32Array(weights);
        const credit = new Float64Array(bank.size);
        for (let i = 0; i < nq; i++) {
          let ambiguous = false;
          const gs = Array.from({ length: G }, (_, g) => ({ g, v: dot(queries, i, codes.coarse, g, dim) })).sort((a, b) => b.v - a.v || a.g - b.g);
          if (t < G && gs[t - 1].v - gs[t].v < EPS) ambiguous = true;
          const cand: { c: number; v: number }[] = [];
          for (const { g } of gs.slice(0, t)) for (let c = codes.groupStart[g]; c < codes.groupStart[g + 1]; c++) cand.push({ c, v: dot(queries, i, codes.centroids, c, dim) });
          cand.sort((a, b) => b.v - a.v || a.c - b.c);
          const take = Math.min(nprobe, cand.length);
          if (take < cand.length && cand[take - 1].v - cand[take].v < EPS) ambiguous = true;
          const probed = new Set(cand.slice(0, take).map((x) => x.c));
          const { top, tie } = referenceTop(queries, i, probed, codes, keysOf, dim, k, EPS);
          if (tie) ambiguous = true;
          totalRows++;
          if (ambiguous) {
            w[i] = 0;
            continue;
          }
          checkedRows++;
          for (const o of top) credit[o.col] += w[i] * o.v;
        }
        let W = 0;
        for (const x of w) W += x;
        if (W === 0) continue;
        const res = await index.glance(bank, queries, { weights: w, k, nprobe, probeGroups });
        expect(res.handles).toEqual(codes.handles);
        for (let s = 0; s < bank.size; s++) expect(Math.abs(res.g[s] - credit[s] / W)).toBeLessThan(1e-5);
      }
      bank.dispose();
    }
    // the near-tie escape may weight only a few rows 0
    expect(checkedRows).toBeGreaterThan(0.6 * totalRows);
  });

  it("the spread probe (lists shared out by weight) equals a plain reference of its rule; the bound and the codes change no bit; on every ISA", async () => {
    const r = rng(SEED ^ 0x5b7e);
    const EPS = 1e-4;
    // the rule (native/src/kivf/kivf_core.h, ProbeCounts): row i probes ⌊nprobe·nq·wᵢ/Σw + ½⌋,
    // clamped to [⌈nprobe/4⌉, 4·nprobe] and to the centroids
    const counts = (w: Float32Array, nprobe: number, C: number): number[] => {
      let W = 0;
      for (const x of w) W += x;
      const lo = Math.min(C, Math.ceil(nprobe / 4)), hi = Math.min(C, 4 * nprobe);
      return Array.from(w, (x) => Math.min(hi, Math.max(lo, Math.floor((nprobe * w.length * x) / W + 0.5))));
    };
    let checkedRows = 0, totalRows = 0, differ = 0, uneven = 0;
    for (const isa of kernelIsas(loadBinding())) {
      setKernelIsa(isa);
      const { dim, topics, bank, keysOf } = topicBank(r);
      const index = await KeyIvf.build(bank, { centroids: 24 + Math.floor(r() * 40), seed: Math.floor(r() * 1000) });
      const codes = index.exportCodes();
      const C = index.stats().centroids;
      for (let round = 0; round < 4; round++) {
        const nq = 5 + Math.floor(r() * 40);
        const queries = nearKeys(r, topics, dim, nq, 0.6);
        const k = [1, 3, 7][Math.floor(r() * 3)];
        const nprobe = 2 + Math.floor(r() * Math.min(10, C - 2));
        // uneven weights: a few heavy rows, some light, some 0
        const w = Float32Array.from({ length: nq }, () => (r() < 0.1 ? 0 : r() < 0.2 ? 3 + 5 * r() : 0.05 + r()));
        w[0] = 1;
        // the plain reference; a row whose probe or top-k boundary is a near-tie is weighted 0, which
        // moves the other rows' shares, so until no weighted row is a near-tie
        let credit = new Float64Array(bank.size);
        for (let pass = 0; ; pass++) {
          expect(pass).toBeLessThan(20);
          const n = counts(w, nprobe, C);
          credit = new Float64Array(bank.size);
          let changed = false;
          for (let i = 0; i < nq; i++) {
            if (w[i] === 0) continue;
            const cand = Array.from({ length: C }, (_, c) => ({ c, v: dot(queries, i, codes.centroids, c, dim) })).sort((a, b) => b.v - a.v || a.c - b.c);
            let ambiguous = n[i] < C && cand[n[i] - 1].v - cand[n[i]].v < EPS;
            const probed = new Set(cand.slice(0, n[i]).map((x) => x.c));
            const { top, tie } = referenceTop(queries, i, probed, codes, keysOf, dim, k, EPS);
            if (tie) ambiguous = true;
            if (ambiguous) {
              w[i] = 0;
              changed = true;
              continue;
            }
            for (const o of top) credit[o.col] += w[i] * o.v;
          }
          if (!changed) {
            if (n.some((x) => x !== nprobe)) uneven++;
            break;
          }
        }
        let W = 0;
        for (const x of w) W += x;
        for (const x of w) {
          totalRows++;
          if (x > 0) checkedRows++;
        }
        const spread = await index.glance(bank, queries, { weights: w, k, nprobe, probeSpread: "weight" });
        expect(spread.handles).toEqual(codes.handles);
        for (let s = 0; s < bank.size; s++) expect(Math.abs(spread.g[s] - credit[s] / W)).toBeLessThan(1e-5);
        const even = await index.glance(bank, queries, { weights: w, k, nprobe });
        if (even.g.some((x, s) => x !== spread.g[s])) differ++;
        // the list bound and the int8 codes under the spread probe: its g, bit for bit
        for (const prune of [false, true]) expect((await index.glance(bank, queries, { weights: w, k, nprobe, probeSpread: "weight", prune, i8: true })).g).toEqual(spread.g);
        expect((await index.glance(bank, queries, { weights: w, k, nprobe, probeSpread: "weight", prune: true })).g).toEqual(spread.g);
        // uniform weights share nprobe evenly: the even probe's g, bit for bit
        const flat = new Float32Array(nq).fill(1 / nq);
        expect((await index.glance(bank, queries, { weights: flat, k, nprobe, probeSpread: "weight" })).g).toEqual((await index.glance(bank, queries, { weights: flat, k, nprobe })).g);
        // every list: the exact glance, bit for bit
        expect((await index.glance(bank, queries, { weights: w, k, nprobe: "all", probeSpread: "weight", i8: true, prune: true })).g).toEqual((await bank.glance(queries, { weights: w, k })).g);
      }
      bank.dispose();
    }
    // the rule was exercised: uneven shares, and results that differ from the even probe's
    expect(uneven).toBeGreaterThan(0);
    expect(differ).toBeGreaterThan(0);
    expect(checkedRows).toBeGreaterThan(0.5 * totalRows);
  });

  it("lists whose int8 codes cannot be used (products that could overflow) are scanned in float32, seeds included: the same bits, on every ISA", async () => {
    const r = rng(SEED ^ 0xb16);
    for (const isa of kernelIsas(loadBinding())) {
      setKernelIsa(isa);
      const dim = [16, 33, 64][Math.floor(r() * 3)];
      const topics = unitKeys(r, 6, dim);
      const bank = new KeyBank(dim);
      // every third skill holds keys of norm ~1e36: a list holding one cannot be scored in int8
      let huge = 0;
      for (let s = 0; s < 60 + Math.floor(r() * 40); s++) {
        const rows = 1 + Math.floor(r() * 12);
        const keys = nearKeys(r, topics, dim, rows, 0.2);
        const big = s % 3 === 0;
        if (big) {
          for (let i = 0; i < keys.length; i++) keys[i] *= 1e36;
          huge += rows;
        }
        bank.add(keys);
      }
      const index = await KeyIvf.build(bank, { centroids: 4 + Math.floor(r() * 12), seed: Math.floor(r() * 1000) });
      const centroids = index.stats().centroids;
      const nq = 1 + Math.floor(r() * 40);
      const queries = nearKeys(r, topics, dim, nq, 0.4);
      const weights = decayWeights(nq);
      for (const k of [1, 7, 129]) {
        const exact = await bank.glance(queries, { weights, k });
        for (const prune of [false, true]) {
          const coded = await index.glance(bank, queries, { weights, k, nprobe: "all", prune, i8: true });
          expect(coded.handles).toEqual(exact.handles);
          expect(coded.g).toEqual(exact.g);
          // the huge keys' lists went to float32 whole (without the bound, every one of their pairs)
          if (!prune) expect(coded.scored).toBeGreaterThanOrEqual(nq * huge);
        }
        const part = Math.max(1, Math.floor(centroids / 3));
        const plain = await index.glance(bank, queries, { weights, k, nprobe: part });
        const coded = await index.glance(bank, queries, { weights, k, nprobe: part, prune: true, i8: true });
        expect(coded.g).toEqual(plain.g);
      }
      bank.dispose();
    }
  });

  it("at the default nprobe agrees with the exact glance on a clustered bank, scoring a small share of the keys", async () => {
    const r = rng(SEED ^ 0x5eed);
    const dim = 64;
    const vocab = unitKeys(r, 512, dim); // token directions
    const bank = new KeyBank(dim);
    const nSkills = 800;
    for (let s = 0; s < nSkills; s++) bank.add(nearKeys(r, vocab, dim, 8 + Math.floor(r() * 24), 0.05));
    const index = await KeyIvf.build(bank, { centroids: 512 });
    const st = index.stats();
    expect(st.rows).toBe(bank.keys);
    // about 8 bytes a key plus the centroids, against 4·dim bytes a key in the bank
    expect(st.bytes).toBeLessThan(0.25 * bank.bytes);
    let agree = 0, sameTop = 0, share = 0, prunedShare = 0, codedShare = 0;
    const tasks = 8;
    for (let t = 0; t < tasks; t++) {
      const nq = 100 + Math.floor(r() * 100);
      const queries = nearKeys(r, vocab, dim, nq, 0.08);
      const weights = decayWeights(nq);
      const exact = await bank.glance(queries, { weights });
      const ivf = await index.glance(bank, queries, { weights });
      expect(ivf.handles).toEqual(exact.handles);
      const a = topN(exact.g, 20), b = new Set(topN(ivf.g, 20));
      agree += a.filter((s) => b.has(s)).length / 20;
      sameTop += a[0] === topN(ivf.g, 1)[0] ? 1 : 0;
      share += ivf.scored / (nq * bank.keys);
      // the list bound over every list: the exact glance bit for bit, scoring fewer pairs
      const bounded = await index.glance(bank, queries, { weights, nprobe: "all", prune: true });
      expect(bounded.g).toEqual(exact.g);
      prunedShare += bounded.scored / (nq * bank.keys);
      // the int8 codes at the default nprobe: the plain key IVF's g, fewer pairs in float32
      const coded = await index.glance(bank, queries, { weights, i8: true });
      expect(coded.g).toEqual(ivf.g);
      expect(coded.coded).toBeGreaterThan(0);
      codedShare += coded.scored / ivf.scored;
    }
    console.log(`clustered bank: float32 pairs with the int8 codes, against the plain key IVF ${(codedShare / tasks).toFixed(3)}`);
    expect(codedShare / tasks).toBeLessThan(0.8);
    console.log(`clustered bank: pairs scored by the list bound over every list ${(prunedShare / tasks).toFixed(3)}`);
    expect(prunedShare / tasks).toBeLessThan(0.9);
    expect(agree / tasks).toBeGreaterThanOrEqual(0.95);
    expect(sameTop).toBeGreaterThanOrEqual(tasks - 1);
    expect(share / tasks).toBeLessThan(0.15);
    bank.dispose();
  });

  it("saves and reopens through its file, following the bank's changes; rebuilds a missing, corrupt or stale file", async () => {
    const r = rng(SEED ^ 0xf11e);
    const dir = tempDir();
    const path = join(dir, "key-ivf.bin");
    const dim = 32;
    const vocab = unitKeys(r, 64, dim);
    const bank = new KeyBank(dim, { keyType: r() < 0.5 ? "f16" : "f32" });
    for (let s = 0; s < 120; s++) bank.add(nearKeys(r, vocab, dim, r() < 0.05 ? 0 : 1 + Math.floor(r() * 16), 0.1));
    const first = await openKeyIvf(path, bank, handleOf, skillOf, { centroids: 40, groups: r() < 0.5 ? 1 : 6 });
    expect(first.outcome).toMatchObject({ kind: "rebuilt", reason: "missing" });
    const queries = nearKeys(r, vocab, dim, 30, 0.2);
    const before = await first.index.glance(bank, queries, { nprobe: 3 });
    // reopened unchanged: the same codes, the same results at a partial nprobe
    const again = await openKeyIvf(path, bank, handleOf, skillOf);
    expect(again.outcome).toEqual({ kind: "loaded", kept: bank.size, assigned: 0, dropped: 0 });
    expect(again.index.exportCodes()).toEqual(first.index.exportCodes());
    const after = await again.index.glance(bank, queries, { nprobe: 3 });
    expect(after.g).toEqual(before.g);
    // the lists' radii, measured anew after the load, still bound them: pruning changes no bit
    expect((await again.index.glance(bank, queries, { nprobe: 3, prune: true })).g).toEqual(before.g);
    expect((await again.index.glance(bank, queries, { nprobe: 3, i8: true })).g).toEqual(before.g);
    expect((await again.index.glance(bank, queries, { nprobe: "all", prune: true })).g).toEqual((await bank.glance(queries)).g);
    // the bank changes; the file is followed and rewritten
    const handles = Array.from(bank.handles());
    bank.remove(handles[3]);
    bank.remove(handles[50]);
    for (let s = 0; s < 5; s++) bank.add(nearKeys(r, vocab, dim, 4, 0.1));
    const moved = await openKeyIvf(path, bank, handleOf, skillOf);
    expect(moved.outcome).toEqual({ kind: "loaded", kept: 118, assigned: 5, dropped: 2 });
    const exact = await bank.glance(queries);
    expect((await moved.index.glance(bank, queries, { nprobe: "all" })).g).toEqual(exact.g);
    const reread = await openKeyIvf(path, bank, handleOf, skillOf);
    expect(reread.outcome).toEqual({ kind: "loaded", kept: bank.size, assigned: 0, dropped: 0 });
    // damaged files are rebuilt
    const good = readFileSync(path);
    const flipped = Buffer.from(good);
    flipped[good.length >> 1] ^= 0x40;
    writeFileSync(path, flipped);
    expect((await openKeyIvf(path, bank, handleOf, skillOf)).outcome).toMatchObject({ kind: "rebuilt", reason: "corrupt", detail: "checksum mismatch" });
    writeFileSync(path, good.subarray(0, good.length - 9));
    expect((await openKeyIvf(path, bank, handleOf, skillOf)).outcome).toMatchObject({ kind: "rebuilt", reason: "corrupt" });
    const magic = Buffer.from(good);
    magic.write("XXXXXXXX", 0, "latin1");
    writeFileSync(path, magic);
    expect((await openKeyIvf(path, bank, handleOf, skillOf)).outcome).toMatchObject({ kind: "rebuilt", reason: "corrupt", detail: "not a key IVF file (magic)" });
    const other = new KeyBank(dim + 1);
    other.add(unitKeys(r, 3, dim + 1));
    expect((await openKeyIvf(path, other, handleOf, skillOf)).outcome).toMatchObject({ kind: "rebuilt", reason: "stale" });
    // the rebuilt file (for the other bank) is loaded back for it
    expect((await openKeyIvf(path, other, handleOf, skillOf)).outcome).toMatchObject({ kind: "loaded", kept: 1 });
    // not a regular file in its place: rebuilt over, never a blocking or unbounded read (a FIFO
    // hung even a read-only route; a link to /dev/zero read until memory ran out)
    for (const [what, make] of ODD_FILES) {
      putOddFile(path, make);
      expect((await openKeyIvf(path, other, handleOf, skillOf)).outcome, what).toMatchObject({ kind: "rebuilt", reason: "corrupt" });
      if (what !== "a directory") expect((await openKeyIvf(path, other, handleOf, skillOf)).outcome, what).toMatchObject({ kind: "loaded", kept: 1 });
    }
    bank.dispose();
    other.dispose();
  });

  it("defaults: centroids for the keys indexed, lists probed (capped at 1,024), and when an install would retrain finer", async () => {
    const r = rng(SEED ^ 0xdef);
    // the plain rule (native/src/kivf/kivf_core.cpp, DefaultCentroids): the power of two nearest
    // 8·√keys, within [16, 65,536] and at most keys / 8 (at least 1)
    const reference = (rows: number) => (rows <= 8 ? 1 : Math.max(1, Math.min(Math.min(65536, Math.max(16, 2 ** Math.round(Math.log2(8 * Math.sqrt(rows))))), Math.floor(rows / 8))));
    expect([16, 40, 8192, 16384, 32768, 65536].map(defaultNprobe)).toEqual([1, 3, 512, 1024, 1024, 1024]);
    for (let t = 0; t < 6; t++) {
      const dim = 8;
      const bank = new KeyBank(dim);
      const skills = 20 + Math.floor(r() * 400);
      for (let s = 0; s < skills; s++) bank.add(unitKeys(r, 1 + Math.floor(r() * 30), dim));
      const rows = bank.keys;
      const def = reference(rows);
      const centroids = Math.max(1, Math.floor(def / [1, 2, 3][t % 3]));
      const index = await KeyIvf.build(bank, { centroids });
      const st = index.stats();
      expect(st.rows).toBe(rows);
      expect(st.defaultCentroids).toBe(def);
      expect(index.coarserThanDefault()).toBe(def >= 1.5 * st.centroids);
      // a training at the defaults makes them, and is not coarser than itself
      const fresh = await KeyIvf.build(bank);
      expect(fresh.stats().centroids).toBe(def);
      expect(fresh.coarserThanDefault()).toBe(false);
      bank.dispose();
    }
  });

  it("refuses bad arguments", async () => {
    const r = rng(SEED ^ 0xbad);
    const bank = new KeyBank(16);
    for (let s = 0; s < 10; s++) bank.add(unitKeys(r, 4, 16));
    const index = await KeyIvf.build(bank, { centroids: 4 });
    const other = new KeyBank(8);
    other.add(unitKeys(r, 2, 8));
    await expectCode(index.glance(other, unitKeys(r, 2, 8)), "INVALID_ARGUMENT");
    await expectCode(index.glance(bank, unitKeys(r, 2, 16), { nprobe: 0 }), "INVALID_ARGUMENT");
    await expectCode(index.glance(bank, unitKeys(r, 2, 16), { k: 0 }), "INVALID_ARGUMENT");
    await expectCode(index.glance(bank, unitKeys(r, 2, 16), { probeGroups: 0 }), "INVALID_ARGUMENT");
    await expectCode(index.glance(bank, unitKeys(r, 2, 16), { probeGroups: 1.5 }), "INVALID_ARGUMENT");
    await expectCode(index.glance(bank, unitKeys(r, 2, 16), { prune: 1 as unknown as boolean }), "INVALID_ARGUMENT");
    await expectCode(index.glance(bank, unitKeys(r, 2, 16), { i8: "yes" as unknown as boolean }), "INVALID_ARGUMENT");
    await expectCode(index.glance(bank, unitKeys(r, 2, 16), { probeSpread: "idf" as unknown as "even" }), "INVALID_ARGUMENT");
    await expectCode(index.glance(bank, new Float32Array(15)), "INVALID_ARGUMENT");
    await expectCode(KeyIvf.build(new KeyBank(16)), "INVALID_ARGUMENT");
    bank.dispose();
    other.dispose();
  });
});
