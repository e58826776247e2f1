// Layer selection (appendix B): the eigen solver, the matrix entropy on states of known spectrum, the
// scan on stories260K, the layer-choice file, and `gavel layer` as a user runs it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GavelError } from "../../src/errors.js";
import { Model } from "../../src/model/Model.js";
import { loadSkills, type Skill } from "../../src/skills/index.js";
import { jacobiEigen, symmetricEigen } from "../../lab/train/eigen.js";
import { matrixEntropy, topNormRow } from "../../lab/train/entropy.js";
import { defaultLayerChoicePath, layerChoiceOf, pickLayer, readLayerChoice, sampleIndices, scanLayers, writeLayerChoice } from "../../lab/train/layer.js";
import { modelFingerprint } from "../../src/model/fingerprint.js";
import { repoRoot, sharedDir, storiesPath, needsShared, SHARED } from "../helpers/paths.js";
import { freshSeed, gauss, rng } from "../helpers/random.js";
import { run as runCommand } from "../helpers/run.js";
import { expectCode } from "../helpers/gavel-error.js";

const NO_SHARED = needsShared("stories260K for the layer scan and SWE-Skills-Bench's skills for gavel layer", SHARED.stories, SHARED.benchSkills);

const benchSkills = join(sharedDir, "data", "swe-skills-bench", "skills.jsonl");

/** k orthonormal vectors of length n (rows of a k × n array), by Gram–Schmidt on Gaussian vectors. */
function orthonormal(r: () => number, k: number, n: number): Float64Array[] {
  const out: Float64Array[] = [];
  while (out.length < k) {
    const v = Float64Array.from({ length: n }, () => gauss(r));
    // Twice, for orthogonality to rounding precision.
    for (let pass = 0; pass < 2; pass++) {
      for (const u of out) {
        let d = 0;
        for (let i = 0; i < n; i++) d += u[i] * v[i];
        for (let i = 0; i < n; i++) v[i] -= d * u[i];
      }
    }
    const norm = Math.hypot(...v);
    if (norm < 1e-8) continue;
    for (let i = 0; i < n; i++) v[i] /= norm;
    out.push(v);
  }
  return out;
}

/** Z = U diag(σ) Vᵀ, rows × cols, with random orthonormal U (rows × k) and V (cols × k). */
function withSpectrum(r: () => number, rows: number, cols: number, sigma: number[]): Float64Array {
  const u = orthonormal(r, sigma.length, rows); // u[j] = column j of U
  const v = orthonormal(r, sigma.length, cols);
  const z = new Float64Array(rows * cols);
  for (let j = 0; j < sigma.length; j++) {
    for (let i = 0; i < rows; i++) {
      const a = sigma[j] * u[j][i];
      for (let c = 0; c < cols; c++) z[i * cols + c] += a * v[j][c];
    }
  }
  return z;
}

function entropyOf(sigma: number[]): number {
  const e = sigma.map((s) => s * s);
  const t = e.reduce((a, b) => a + b, 0);
  return -e.reduce((h, x) => (x > 0 ? h + (x / t) * Math.log(x / t) : h), 0);
}

function randomSymmetric(r: () => number, n: number): Float64Array {
  const a = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j <= i; j++) {
      const v = gauss(r);
      a[i * n + j] = v;
      a[j * n + i] = v;
    }
  }
  return a;
}

function checkDecomposition(a: Float64Array, n: number, values: Float64Array, vectors: Float64Array, tol: number): void {
  let scale = 0;
  for (const x of a) scale = Math.max(scale, Math.abs(x));
  for (let j = 0; j < n; j++) {
    // ‖A v − λ v‖ small, ‖v‖ = 1
    let res = 0;
    let norm = 0;
    for (let i = 0; i < n; i++) {
      let av = 0;
      for (let k = 0; k < n; k++) av += a[i * n + k] * vectors[k * n + j];
      res = Math.max(res, Math.abs(av - values[j] * vectors[i * n + j]));
      norm += vectors[i * n + j] ** 2;
    }
    expect(res).toBeLessThan(tol * scale * n);
    expect(Math.abs(norm - 1)).toBeLessThan(1e-10);
  }
  // Orthogonality of the eigenvectors.
  for (let p = 0; p < Math.min(n, 8); p++) {
    for (let q = p + 1; q < n; q++) {
      let d = 0;
      for (let i = 0; i < n; i++) d += vectors[i * n + p] * vectors[i * n + q];
      expect(Math.abs(d)).toBeLessThan(1e-10);
    }
  }
  // trace = Σλ, ‖A‖_F² = Σλ²
  let tr = 0;
  let fro = 0;
  for (let i = 0; i < n; i++) tr += a[i * n + i];
  for (const x of a) fro += x * x;
  expect(Math.abs(values.reduce((s, x) => s + x, 0) - tr)).toBeLessThan(1e-10 * Math.max(1, Math.abs(tr)) * n);
  expect(Math.abs(values.reduce((s, x) => s + x * x, 0) - fro)).toBeLessThan(1e-10 * fro);
  for (let j = 1; j < n; j++) expect(values[j]).toBeGreaterThanOrEqual(values[j - 1]);
}

describe("symmetric eigen solver", () => {
  const seed = freshSeed();

  it("diagonal and tiny matrices", () => {
    const d = [3, -1, 7, 0, 2.5];
    const a = new Float64Array(25);
    d.forEach((x, i) => (a[i * 5 + i] = x));
    expect(Array.from(symmetricEigen(a, 5).values)).toEqual([-1, 0, 2.5, 3, 7]);
    expect(Array.from(symmetricEigen([4], 1).values)).toEqual([4]);
    expect(symmetricEigen([], 0).values.length).toBe(0);
    const two = symmetricEigen([2, 1, 1, 2], 2, { vectors: true });
    expect(two.values[0]).toBeCloseTo(1, 14);
    expect(two.values[1]).toBeCloseTo(3, 14);
    // A matrix that is already tridiagonal, and one with repeated eigenvalues (identity + rank-1).
    const t = [2, -1, 0, 0, -1, 2, -1, 0, 0, -1, 2, -1, 0, 0, -1, 2];
    const expected = [1, 2, 3, 4].map((k) => 2 - 2 * Math.cos((k * Math.PI) / 5));
    symmetricEigen(t, 4).values.forEach((v, i) => expect(v).toBeCloseTo(expected[i], 13));
    const rep = new Float64Array(36);
    for (let i = 0; i < 6; i++) for (let j = 0; j < 6; j++) rep[i * 6 + j] = (i === j ? 1 : 0) + 1;
    const rv = symmetricEigen(rep, 6, { vectors: true });
    rv.values.slice(0, 5).forEach((v) => expect(v).toBeCloseTo(1, 12));
    expect(rv.values[5]).toBeCloseTo(7, 12);
    checkDecomposition(rep, 6, rv.values, rv.vectors!, 1e-13);
  });

  it(`random symmetric matrices: A v = λ v, trace and Frobenius identities, Jacobi agrees (seed ${seed})`, () => {
    const r = rng(seed);
    for (const n of [3, 7, 20, 64, 150]) {
      const a = randomSymmetric(r, n);
      const { values, vectors } = symmetricEigen(a, n, { vectors: true });
      checkDecomposition(a, n, values, vectors!, 1e-13);
      const valuesOnly = symmetricEigen(a, n).values;
      for (let i = 0; i < n; i++) expect(Math.abs(valuesOnly[i] - values[i])).toBeLessThan(1e-12 * n);
      if (n <= 64) {
        const j = jacobiEigen(a, n, { vectors: true });
        checkDecomposition(a, n, j.values, j.vectors!, 1e-13);
        for (let i = 0; i < n; i++) expect(Math.abs(j.values[i] - values[i])).toBeLessThan(1e-11 * n);
      }
    }
  });

  it(`a PSD Gram matrix of low rank keeps its zero eigenvalues near zero (seed ${seed})`, () => {
    const r = rng(seed + 1);
    const z = withSpectrum(r, 40, 10, [5, 3, 1]); // rank 3
    const g = new Float64Array(40 * 40);
    for (let i = 0; i < 40; i++) for (let k = 0; k < 40; k++) for (let c = 0; c < 10; c++) g[i * 40 + k] += z[i * 10 + c] * z[k * 10 + c];
    const v = symmetricEigen(g, 40).values;
    expect(v[39]).toBeCloseTo(25, 10);
    expect(v[38]).toBeCloseTo(9, 10);
    expect(v[37]).toBeCloseTo(1, 10);
    for (let i = 0; i < 37; i++) expect(Math.abs(v[i])).toBeLessThan(1e-12);
  });

  it("rejects bad input", () => {
    expect(() => symmetricEigen([1, 2, 3], 2)).toThrow(GavelError);
    expect(() => symmetricEigen([1, NaN, NaN, 1], 2)).toThrow(/not finite/);
  });
});

describe("matrixEntropy", () => {
  const seed = freshSeed();

  it(`states of a known spectrum give S1 = −Σ p log p, p = σ²/Σσ² (seed ${seed})`, () => {
    const r = rng(seed);
    // Both Gram sides: rows < cols (Z Zᵀ) and rows > cols (Zᵀ Z); float64 and float32 states.
    for (const [rows, cols] of [
      [12, 40],
      [60, 16],
      [30, 30],
    ]) {
      const sigma = [9, 4, 2.5, 1, 0.5, 0.1];
      const z = withSpectrum(r, rows, cols, sigma);
      expect(Math.abs(matrixEntropy(z, rows, cols, { dropTopNorm: false }) - entropyOf(sigma))).toBeLessThan(1e-9);
      // float32 rounding of the states moves the spectrum by ~1e-7 relative.
      expect(Math.abs(matrixEntropy(Float32Array.from(z), rows, cols, { dropTopNorm: false }) - entropyOf(sigma))).toBeLessThan(1e-5);
    }
  });

  it(`rank 1 gives 0, k isotropic directions give log k (seed ${seed})`, () => {
    const r = rng(seed + 1);
    const rank1 = withSpectrum(r, 20, 32, [3.7]);
    expect(Math.abs(matrixEntropy(rank1, 20, 32, { dropTopNorm: false }))).toBeLessThan(1e-9);
    expect(Math.abs(matrixEntropy(rank1, 20, 32))).toBeLessThan(1e-9); // still rank 1 after the drop
    for (const k of [2, 5, 16]) {
      const iso = withSpectrum(r, 24, 48, new Array(k).fill(1.3));
      expect(Math.abs(matrixEntropy(iso, 24, 48, { dropTopNorm: false }) - Math.log(k))).toBeLessThan(1e-9);
    }
    // Orthogonal rows of equal norm: exactly log rows; with the drop, log(rows − 1).
    const eye = new Float64Array(8 * 10);
    for (let i = 0; i < 8; i++) eye[i * 10 + i] = 2;
    expect(matrixEntropy(eye, 8, 10, { dropTopNorm: false })).toBeCloseTo(Math.log(8), 12);
    expect(matrixEntropy(eye, 8, 10)).toBeCloseTo(Math.log(7), 12);
  });

  it(`the top-norm drop removes exactly the largest-norm row (seed ${seed})`, () => {
    const r = rng(seed + 2);
    const rows = 10;
    const cols = 16;
    // Nine rows of equal norm on nine orthogonal directions, and a "sink" 100× their norm on a tenth.
    const basis = orthonormal(r, rows, cols);
    const sinkAt = 1 + Math.floor(r() * (rows - 1));
    const z = new Float64Array(rows * cols);
    for (let i = 0; i < rows; i++) for (let c = 0; c < cols; c++) z[i * cols + c] = (i === sinkAt ? 100 : 1) * basis[i][c];
    expect(topNormRow(z, rows, cols)).toBe(sinkAt);
    // With the sink the spectrum is one spike (entropy near 0); without it, nine equal directions.
    const withSink = matrixEntropy(z, rows, cols, { dropTopNorm: false });
    expect(withSink).toBeLessThan(0.02);
    expect(Math.abs(matrixEntropy(z, rows, cols) - Math.log(9))).toBeLessThan(1e-9);
    // Dropping any other row would leave the spike: the result is specific to the top-norm row.
    const without = new Float64Array((rows - 1) * cols);
    for (let i = 0, o = 0; i < rows; i++) if (i !== sinkAt) without.set(z.subarray(i * cols, (i + 1) * cols), cols * o++);
    expect(matrixEntropy(without, rows - 1, cols, { dropTopNorm: false })).toBeCloseTo(matrixEntropy(z, rows, cols), 12);
  });

  it("edge cases and bad input", () => {
    expect(matrixEntropy(new Float64Array([1, 2, 3]), 1, 3)).toBeNaN(); // nothing left after the drop
    expect(matrixEntropy(new Float64Array([1, 2, 3]), 1, 3, { dropTopNorm: false })).toBeCloseTo(0, 15);
    expect(matrixEntropy(new Float64Array(6), 2, 3, { dropTopNorm: false })).toBeNaN(); // all zero
    expect(() => matrixEntropy(new Float64Array(5), 2, 3)).toThrow(/expected 2×3/);
    expect(() => matrixEntropy(new Float64Array([1, Infinity]), 1, 2)).toThrow(/not finite/);
  });
});

describe("pick rule and sampling", () => {
  it("picks the interior minimum, never layer 0 or the last", () => {
    expect(pickLayer([0.1, 3, 1.2, 2, 0.05])).toBe(2);
    expect(pickLayer([3, 4, 1.8, 1.8, 3])).toBe(2); // ties: the shallower
    expect(pickLayer([3, NaN, 2, 2.5, 3])).toBe(2);
    expect(pickLayer([2, 1])).toBe(1); // no interior: every layer is a candidate
    expect(() => pickLayer([])).toThrow(GavelError);
  });

  it("samples are seeded, distinct and sorted", () => {
    const a = sampleIndices(100, 30, 7);
    expect(a).toEqual(sampleIndices(100, 30, 7));
    expect(a).not.toEqual(sampleIndices(100, 30, 8));
    expect(new Set(a).size).toBe(30);
    expect([...a].sort((x, y) => x - y)).toEqual(a);
    expect(sampleIndices(5, 30, 1)).toEqual([0, 1, 2, 3, 4]);
  });

  it("default output path sits next to the projections, else the bank", () => {
    expect(defaultLayerChoicePath({ projections: "/x/y/p.gguf", bank: "/b/bank" })).toBe("/x/y/gavel-layer.json");
    expect(defaultLayerChoicePath({ bank: ".gavel/bank/" })).toBe(".gavel/gavel-layer.json");
    expect(defaultLayerChoicePath()).toBe("gavel-layer.json");
  });
});

describe.skipIf(NO_SHARED)("scanLayers on stories260K", () => {
  let model: Model;
  let skills: Skill[];

  beforeAll(async () => {
    // One thread: on a busy 2-core box ggml's spinning workers ran ~10× slower with two.
    model = await Model.load(storiesPath, { contextSize: 512, sequences: 2, threads: 1 });
    skills = (await loadSkills(benchSkills)).skills;
  });
  afterAll(async () => {
    await model?.dispose();
  });

  it("one finite entropy per layer, a pick in [1, 3], deterministic by seed", async () => {
    const seen: number[] = [];
    const scan = await scanLayers(model, skills, { sample: 30, maxTokens: 256, seed: 1, onProgress: (p) => seen.push(p.done) });
    expect(scan.curve).toHaveLength(5);
    for (const s of scan.curve) {
      expect(Number.isFinite(s)).toBe(true);
      expect(s).toBeGreaterThan(0);
      expect(s).toBeLessThanOrEqual(Math.log(64) + 1e-9); // at most log min(tokens, n_embd)
    }
    expect(scan.layer).toBeGreaterThanOrEqual(1);
    expect(scan.layer).toBeLessThanOrEqual(3);
    expect(scan.perSkill).toHaveLength(30);
    expect(scan.ids).toHaveLength(30);
    expect(seen).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    for (const n of scan.tokens) {
      expect(n).toBeGreaterThan(2);
      expect(n).toBeLessThanOrEqual(256);
    }
    // The median is a median: between the quartiles.
    for (let l = 0; l < 5; l++) {
      expect(scan.q25[l]).toBeLessThanOrEqual(scan.curve[l]);
      expect(scan.curve[l]).toBeLessThanOrEqual(scan.q75[l]);
    }
    // Same seed, same sample, same numbers (states are deterministic on one machine).
    const again = await scanLayers(model, skills, { sample: 30, maxTokens: 256, seed: 1 });
    expect(again.ids).toEqual(scan.ids);
    for (let l = 0; l < 5; l++) expect(again.curve[l]).toBeCloseTo(scan.curve[l], 6);
    console.log(`stories260K median S1 by layer: ${Array.from(scan.curve, (x) => x.toFixed(3)).join(" ")}; pick ${scan.layer}`);
  });

  it("each skill's entropy is the entropy of its keyed-span states at that layer", async () => {
    const { RenderEncoder } = await import("../../src/render/encode.js");
    const s = skills[3];
    const scan = await scanLayers(model, [s], { maxTokens: 64 });
    const enc = new RenderEncoder(model, 1 << 20).encodeSkill(s);
    const end = Math.min(enc.keyEnd, enc.keyStart + 64);
    const d = model.info.nEmbd;
    for (const l of [0, 2, 4]) {
      const states = await model.hiddenStates(enc.tokens.subarray(0, end), l);
      const z = states.subarray(enc.keyStart * d, end * d);
      expect(scan.perSkill[0][l]).toBeCloseTo(matrixEntropy(z, end - enc.keyStart, d), 9);
    }
  });

  it("aborts", async () => {
    const c = new AbortController();
    const p = scanLayers(model, skills, { sample: 40, signal: c.signal, onProgress: (pr) => pr.done === 2 && c.abort() });
    await expectCode(p, "ABORTED");
  });

  it("the layer choice round-trips and is bound to the model", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gavel-layer-"));
    const scan = await scanLayers(model, skills, { sample: 5, maxTokens: 64 });
    const choice = await layerChoiceOf(model, scan);
    const path = join(dir, "sub", "gavel-layer.json");
    await writeLayerChoice(path, choice);
    const back = await readLayerChoice(path, model);
    expect(back).toEqual(choice);
    expect(back.layer).toBe(scan.layer);
    const fp = await modelFingerprint(model);
    await expectCode(readLayerChoice(path, { ...fp, nLayer: 36, vocabHash: "0".repeat(64) }), "PROJECTIONS_MISMATCH", /5 layers vs 36/);
    await expectCode(readLayerChoice(join(dir, "none.json"), model), "FILE_NOT_FOUND");
    writeFileSync(join(dir, "bad.json"), JSON.stringify({ layer: 2 }));
    await expectCode(readLayerChoice(join(dir, "bad.json"), model), "CORRUPT_FILE");
  });
});

describe.skipIf(NO_SHARED)("gavel layer (CLI)", () => {
  it("prints the curve and the pick, and writes the choice file", async () => {
    const cli = join(repoRoot, "dist", "cli", "gavel.js");
    const dir = mkdtempSync(join(tmpdir(), "gavel-layer-cli-"));
    const out = join(dir, "layer.json");
    const env = { ...process.env, GAVEL_MODEL: "", GAVEL_PROJECTIONS: "", GAVEL_BANK: "" };
    const run = (...args: string[]) => runCommand(process.execPath, [cli, "layer", benchSkills, "--model", storiesPath, "--sample", "20", "--max-tokens", "128", "--threads", "1", ...args], { env, timeoutMs: 300_000 });
    const r = await run("--out", out);
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(/20\/20/); // progress
    expect(r.out).toMatch(/^layer\s+median S1/m);
    expect(r.out).toMatch(/ℓ\* = [1-3] of 5 layers/);
    expect(r.out).toMatch(/S1 by layer: [▁▂▃▄▅▆▇█]{5}/);
    const file = JSON.parse(readFileSync(out, "utf8"));
    expect(file).toMatchObject({ layer: expect.any(Number), skills: 20, tokensPerSkill: 128, model: { architecture: "llama", nLayer: 5, nEmbd: 64 } });
    expect(file.curve).toHaveLength(5);
    expect(file.curve.every((x: unknown) => typeof x === "number" && Number.isFinite(x))).toBe(true);
    const j = await run("--json", "--projections", join(dir, "p.gguf"));
    expect(j.code, j.err).toBe(0);
    const parsed = JSON.parse(j.out);
    expect(parsed.layer).toBe(file.layer);
    expect(parsed.curve).toEqual(file.curve);
    expect(parsed.out).toBe(join(dir, "gavel-layer.json"));
    expect(JSON.parse(readFileSync(join(dir, "gavel-layer.json"), "utf8")).layer).toBe(file.layer);
  }, 300_000);
});
