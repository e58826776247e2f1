/**
 * The int8-prefiltered exact glance (native/src/kernels/i8_glance.h, glanceExact8):
 * - g, the detail columns and their m and argmax equal the exact glance's bit for bit, on fresh random
 *   banks (dims 64-768, f32 and f16 keys, clustered keys making near-ties, duplicate keys, skills
 *   without keys, zero query rows, rows of weight 0), on every instruction set the CPU has;
 * - the stage-1 bound holds: L ≤ m ≤ U against a float64 max-sim and against the f32 glance's m, and
 *   it is not vacuous (the prefilter skips most pairs on spread-out keys);
 * - where the prefilter cannot help (k ≥ skills, full m asked through detail < 0 is not offered here)
 *   it runs the exact glance and says so.
 *
 * Inputs are fresh random draws each run; the seed is logged (replay with GAVEL_TEST_SEED).
 */
import { describe, expect, it } from "vitest";
import { KeyBank } from "../../src/bank/key-bank.js";
import { config } from "../../src/config.js";
import { loadBinding } from "../../src/native/binding.js";
import { kernelIsas, restoreKernelIsaAfterEach, setKernelIsa } from "../helpers/isa.js";
import { freshSeed, gauss, rng } from "../helpers/random.js";
import { expectCode } from "../helpers/gavel-error.js";

const SEED = freshSeed();
console.log(`glance-i8.test.ts seed: ${SEED} (replay with GAVEL_TEST_SEED=${SEED})`);

const b = loadBinding();
const ISAS = kernelIsas(b);
restoreKernelIsaAfterEach();

interface Case {
  queries: Float32Array;
  weights: Float32Array;
  bank: Float32Array;
  offsets: Int32Array;
  dim: number;
  nSkills: number;
}

function normalize(v: Float32Array, at: number, dim: number): void {
  let ss = 0;
  for (let d = 0; d < dim; d++) ss += v[at + d] ** 2;
  if (ss === 0) return;
  const inv = 1 / Math.sqrt(ss);
  for (let d = 0; d < dim; d++) v[at + d] *= inv;
}

/**
 * A random bank and task. clustered: every key and row near one shared direction (their scores
 * bunch up: near-ties everywhere); every 5th key repeats its predecessor; every 7th skill has no
 * keys; row 1 is all zeros; every 4th row has weight 0.
 */
function makeCase(r: () => number, nSkills: number, maxKeys: number, dim: number, nq: number, clustered: boolean): Case {
  const center = new Float32Array(dim).map(() => gauss(r));
  const pull = clustered ? 4 : 0;
  const offsets = new Int32Array(nSkills + 1);
  for (let s = 0; s < nSkills; s++) offsets[s + 1] = offsets[s] + (s % 7 === 6 ? 0 : 1 + Math.floor(r() * maxKeys));
  const rows = offsets[nSkills];
  const bank = new Float32Array(rows * dim);
  for (let j = 0; j < rows; j++) {
    if (j % 5 === 4) {
      bank.copyWithin(j * dim, (j - 1) * dim, j * dim);
      continue;
    }
    for (let d = 0; d < dim; d++) bank[j * dim + d] = gauss(r) + pull * center[d];
    normalize(bank, j * dim, dim);
  }
  const queries = new Float32Array(nq * dim);
  for (let i = 0; i < nq; i++) {
    if (i === 1) continue;  // a zero row
    for (let d = 0; d < dim; d++) queries[i * dim + d] = gauss(r) + pull * center[d];
    normalize(queries, i * dim, dim);
  }
  const weights = new Float32Array(nq).map((_, i) => (i % 4 === 3 ? 0 : 0.2 + r()));
  return { queries, weights, bank, offsets, dim, nSkills };
}

function f16(bank: Float32Array): Uint16Array {
  const half = new Uint16Array(bank.length);
  b.roundToHalf(bank.slice(), half);
  return half;
}

const bits = (a: Float32Array): Uint32Array => new Uint32Array(a.buffer, a.byteOffset, a.length);

/** float64 max-sim of every row and skill (keys as given: f32 values, or the f16 keys' values). */
function maxSim64(c: Case, keys: Float32Array): Float64Array {
  const nq = c.queries.length / c.dim;
  const out = new Float64Array(nq * c.nSkills);
  for (let i = 0; i < nq; i++)
    for (let s = 0; s < c.nSkills; s++) {
      let best = c.offsets[s + 1] > c.offsets[s] ? -Infinity : -1;
      for (let j = c.offsets[s]; j < c.offsets[s + 1]; j++) {
        let dot = 0;
        for (let d = 0; d < c.dim; d++) dot += c.queries[i * c.dim + d] * keys[j * c.dim + d];
        best = Math.max(best, dot);
      }
      out[i * c.nSkills + s] = best;
    }
  return out;
}

const SHAPES: { nSkills: number; maxKeys: number; dim: number; nq: number; k: number; clustered: boolean }[] = [
  { nSkills: 120, maxKeys: 12, dim: 64, nq: 40, k: 5, clustered: false },
  { nSkills: 90, maxKeys: 40, dim: 130, nq: 29, k: 9, clustered: true },
  { nSkills: 60, maxKeys: 20, dim: 256, nq: 25, k: 3, clustered: true },
  { nSkills: 40, maxKeys: 8, dim: 768, nq: 14, k: 10, clustered: false },
];

describe("glanceExact8: the exact glance through the int8 prefilter", () => {
  let seed = SEED;
  for (const isa of ISAS)
    for (const sh of SHAPES)
      for (const keyType of ["f32", "f16"] as const)
        it(`${isa}, ${sh.nSkills} skills × ≤${sh.maxKeys} keys, dim ${sh.dim}, ${sh.nq} rows, k ${sh.k}${sh.clustered ? ", clustered" : ""}, ${keyType} keys: bit for bit`, async () => {
          const r = rng(seed++);
          setKernelIsa(isa);
          const c = makeCase(r, sh.nSkills, sh.maxKeys, sh.dim, sh.nq, sh.clustered);
          const bank = keyType === "f16" ? f16(c.bank) : c.bank;
          const detail = 12;
          const ex = await b.glanceExact8(c.queries, bank, c.offsets, c.dim, c.weights, sh.k, detail, true);
          const i8 = await b.glanceExact8(c.queries, bank, c.offsets, c.dim, c.weights, sh.k, detail);
          expect(i8.stats.exactFallback).toBe(false);
          // the int8 product: VNNI on AVX-512 where the CPU has it (else vpmaddubsw), vpmaddubsw on AVX2,
          // the plain loops at generic on x86-64; on arm64 (one level, generic) NEON, with sdot where
          // the CPU has it
          const generic = process.arch === "arm64" ? ["neon", "neon-dotprod"] : ["scalar"];
          expect(isa === "avx512" ? ["avx512-vnni", "avx2"] : isa === "avx2" ? ["avx2"] : generic).toContain(i8.stats.isa);
          expect(Array.from(bits(i8.g))).toEqual(Array.from(bits(ex.g)));
          expect(Array.from(i8.columns)).toEqual(Array.from(ex.columns));
          expect(Array.from(bits(i8.m))).toEqual(Array.from(bits(ex.m)));
          expect(Array.from(i8.argmax)).toEqual(Array.from(ex.argmax));
          if (keyType === "f32") {  // and the public flat glance's g
            const flat = await b.glance(c.queries, c.bank, c.offsets, c.dim, c.weights, sh.k);
            expect(Array.from(bits(i8.g))).toEqual(Array.from(bits(flat.g)));
          }
          // rows of weight 0 take no part; every other (row, skill) pair is counted
          const active = c.weights.filter((w) => w > 0).length;
          expect(i8.stats.pairs).toBe(active * c.nSkills);
          expect(i8.stats.recomputed).toBeLessThanOrEqual(i8.stats.pairs);
          expect(i8.stats.recomputed).toBeGreaterThanOrEqual(active * sh.k);
        });
});

describe("glanceI8Bounds: the stage-1 bound", () => {
  let seed = SEED + 1000;
  for (const isa of ISAS)
    for (const sh of SHAPES)
      it(`${isa}, dim ${sh.dim}${sh.clustered ? ", clustered" : ""}: L ≤ m ≤ U (float64 and the f32 glance), both key types`, async () => {
        const r = rng(seed++);
        setKernelIsa(isa);
        const c = makeCase(r, sh.nSkills, sh.maxKeys, sh.dim, sh.nq, sh.clustered);
        const half = f16(c.bank);
        const halfValues = new Float32Array(half.length);
        b.halfToFloat(half, halfValues);
        for (const [bank, values] of [[c.bank, c.bank], [half, halfValues]] as const) {
          const { lower, upper } = await b.glanceI8Bounds(c.queries, bank, c.offsets, c.dim);
          const m64 = maxSim64(c, values);
          const m32 = (await b.glance(c.queries, values, c.offsets, c.dim, new Float32Array(c.queries.length / c.dim).fill(1), 1)).m;
          let bad = 0, widest = 0;
          for (let x = 0; x < m64.length; x++) {
            if (!(lower[x] <= m64[x] && m64[x] <= upper[x])) bad++;
            if (!(lower[x] <= m32[x] && m32[x] <= upper[x])) bad++;
            widest = Math.max(widest, upper[x] - lower[x]);
          }
          expect(bad).toBe(0);
          // unit vectors in int8: the half-width is a few hundredths (AVX2's queries have 7 bits)
          expect(widest).toBeLessThan(isa === "avx2" ? 0.12 : 0.08);
          // the zero row: m = 0 exactly, and so are its bounds; skills without keys: -1
          for (let s = 0; s < c.nSkills; s++) {
            const x = 1 * c.nSkills + s;
            const want = c.offsets[s + 1] > c.offsets[s] ? 0 : -1;
            expect(lower[x] === want && upper[x] === want).toBe(true);
          }
        }
      });

  it("is tight enough to skip most pairs on spread-out keys (random unit keys, 600 skills)", async () => {
    const r = rng(SEED + 7);
    setKernelIsa(null);
    const c = makeCase(r, 600, 16, 128, 30, false);
    const out = await b.glanceExact8(c.queries, c.bank, c.offsets, c.dim, c.weights, 10, 5);
    expect(out.stats.exactFallback).toBe(false);
    expect(out.stats.recomputed / out.stats.pairs).toBeLessThan(0.5);
  });
});

describe("glanceExact8 where the prefilter cannot help", () => {
  it("k ≥ the skill count: the exact glance runs, same result", async () => {
    const r = rng(SEED + 11);
    const c = makeCase(r, 8, 5, 64, 6, false);
    const ex = await b.glanceExact8(c.queries, c.bank, c.offsets, c.dim, c.weights, 8, 8, true);
    const i8 = await b.glanceExact8(c.queries, c.bank, c.offsets, c.dim, c.weights, 8, 8);
    expect(i8.stats.exactFallback).toBe(true);
    expect(Array.from(bits(i8.g))).toEqual(Array.from(bits(ex.g)));
    expect(Array.from(bits(i8.m))).toEqual(Array.from(bits(ex.m)));
  });

  it("NaN in the keys: INVALID_ARGUMENT, as the exact glance", async () => {
    const r = rng(SEED + 12);
    const c = makeCase(r, 20, 5, 64, 6, false);
    c.bank[70] = Number.NaN;
    await expectCode(b.glanceExact8(c.queries, c.bank, c.offsets, c.dim, c.weights, 3, 2), "INVALID_ARGUMENT");
  });
});

describe("KeyBank.glance with GAVEL_GLANCE_EXACT8=on: the same result as off, bit for bit", () => {
  for (const keyType of ["f32", "f16"] as const)
    it(`${keyType} keys: whole bank (detail 0 and 7), a handle subset, after removals and additions`, async () => {
      const r = rng(SEED + 21 + (keyType === "f16" ? 1 : 0));
      const c = makeCase(r, 150, 20, 96, 33, true);
      const bank = new KeyBank(c.dim, { keyType });
      try {
        for (let s = 0; s < c.nSkills; s++) bank.add(c.bank.slice(c.offsets[s] * c.dim, c.offsets[s + 1] * c.dim));
        const run = async (setting: "on" | "off", options: Parameters<KeyBank["glance"]>[1]) => {
          b.configure({ glanceDevice: "cpu", glanceExact8: setting });
          try {
            return await bank.glance(c.queries, { weights: c.weights, ...options });
          } finally {
            b.configure({ glanceDevice: config().glanceDevice, glanceExact8: config().glanceExact8 });
          }
        };
        const same = async (options: Parameters<KeyBank["glance"]>[1]) => {
          const off = await run("off", options), on = await run("on", options);
          expect(Array.from(bits(on.g))).toEqual(Array.from(bits(off.g)));
          expect(Array.from(on.handles)).toEqual(Array.from(off.handles));
          expect(Array.from(on.columns ?? [])).toEqual(Array.from(off.columns ?? []));
          expect(Array.from(bits(on.m))).toEqual(Array.from(bits(off.m)));
          expect(Array.from(on.argmax)).toEqual(Array.from(off.argmax));
        };
        await same({ detail: 0 });
        await same({ detail: 7, k: 4 });
        const handles = bank.handles();
        await same({ detail: 5, handles: handles.filter((_, i) => i % 3 !== 0) });
        for (let i = 0; i < handles.length; i += 4) bank.remove(handles[i]);
        for (let s = 0; s < 10; s++) bank.add(c.bank.slice(c.offsets[s] * c.dim, c.offsets[s + 1] * c.dim));
        await same({ detail: 3 });
        await same({});  // every column's m asked: the exact glance in both
      } finally {
        bank.dispose();
      }
    });
  // Fewer skills than cores: each thread's share of the skills to quantise is cut by the threads that
  // run (a bank of 5 on a machine of 6 or more cores once quantised none and read null blocks).
  it("a bank of fewer skills than the machine's cores, k below the skill count", async () => {
    const r = rng(SEED + 31);
    const c = makeCase(r, 5, 12, 64, 9, false);
    const bank = new KeyBank(c.dim, { keyType: "f32" });
    try {
      for (let s = 0; s < c.nSkills; s++) if (c.offsets[s + 1] > c.offsets[s]) bank.add(c.bank.slice(c.offsets[s] * c.dim, c.offsets[s + 1] * c.dim));
      const run = async (setting: "on" | "off") => {
        b.configure({ glanceDevice: "cpu", glanceExact8: setting });
        try {
          return await bank.glance(c.queries, { weights: c.weights, detail: 2, k: 2 });
        } finally {
          b.configure({ glanceDevice: config().glanceDevice, glanceExact8: config().glanceExact8 });
        }
      };
      const off = await run("off"), on = await run("on");
      expect(Array.from(bits(on.g))).toEqual(Array.from(bits(off.g)));
      expect(Array.from(on.handles)).toEqual(Array.from(off.handles));
      expect(Array.from(bits(on.m))).toEqual(Array.from(bits(off.m)));
    } finally {
      bank.dispose();
    }
  });
});
