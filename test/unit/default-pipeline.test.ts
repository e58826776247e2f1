// The pieces the default route gained: BM25's k1 and b read at query time (equal, bit for bit, to an
// index built with them), the verdict's union pool (against a plain sort-based reference on fresh
// random candidates), and the constants that travel in the projections file (round trip, defaults
// for older files, typed refusals).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { GgufWriter, readGgufHeader } from "../../src/gguf/index.js";
import { Bm25Index } from "../../src/lexical/bm25.js";
import { LiveBm25Index } from "../../src/lexical/live-index.js";
import { TENSOR_WQ, TENSOR_WS } from "../../src/projections/file.js";
import { Projections } from "../../src/projections/projections.js";
import { firstStageShortlist } from "../../src/route/index.js";
import { freshSeed, rng } from "../helpers/random.js";
import { expectCode } from "../helpers/gavel-error.js";

const seed = freshSeed();
console.log(`default-pipeline.test.ts seed: ${seed} (replay with GAVEL_TEST_SEED=${seed})`);
const model = { architecture: "llama", nLayer: 2, nEmbd: 4, nVocab: 10, vocabHash: "0".repeat(64) };
const dir = mkdtempSync(join(tmpdir(), "gavel-default-pipeline-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const WORDS = ["docker", "image", "build", "cache", "layer", "pdf", "table", "csv", "extract", "git", "commit", "bisect", "sql", "index", "query", "plan"];
function randomDocs(r: () => number, n: number) {
  const text = (k: number) => Array.from({ length: k }, () => WORDS[Math.floor(r() * WORDS.length)]).join(" ");
  return Array.from({ length: n }, (_, i) => ({ id: `s${i}`, name: text(2), description: text(1 + Math.floor(r() * 8)), body: text(Math.floor(r() * 60)) }));
}

describe("BM25's constants read at query time", () => {
  it("equal an index built with them, bit for bit, for both indexes", () => {
    const r = rng(seed);
    const docs = randomDocs(r, 60);
    const queries = Array.from({ length: 8 }, () => randomDocs(r, 1)[0].body || "docker");
    const live = new LiveBm25Index();
    for (const d of docs) live.add(d);
    const stock = new Bm25Index(docs);
    for (const params of [{ k1: 3, b: 1 }, { k1: 0.5, b: 0 }, { k1: 2 }]) {
      const built = new Bm25Index(docs, params);
      for (const q of queries) {
        const want = built.scores(q);
        expect(stock.scores(q, params)).toEqual(want);
        expect(live.scores(q, params)).toEqual(want);
      }
    }
    // without params, the index's own constants (Lucene's), unchanged
    expect(stock.scores(queries[0])).toEqual(live.scores(queries[0]));
    expect(() => stock.scores("docker", { b: 2 })).toThrow(/b must be in \[0, 1\]/);
  });
});

/** The union pool by sorting everything: the Δ-set of F, each expert's best k, best F first, capped. */
function referencePool(cands: { g: number; B: number }[], delta: number, max: number, beta: number, kg: number, kb: number): number[] {
  const F = cands.map((c) => (beta === 0 ? c.g : c.g + beta * c.B));
  const best = Math.max(...F);
  const take = new Set<number>();
  F.forEach((f, i) => f >= best - delta && take.add(i));
  const byG = cands.map((_, i) => i).sort((a, b) => cands[b].g - cands[a].g || a - b);
  const byB = cands.map((_, i) => i).filter((i) => Number.isFinite(cands[i].B)).sort((a, b) => cands[b].B - cands[a].B || a - b);
  byG.slice(0, kg).forEach((i) => take.add(i));
  byB.slice(0, kb).forEach((i) => take.add(i));
  return [...take].sort((a, b) => F[b] - F[a] || a - b).slice(0, max);
}

describe("the verdict's union pool", () => {
  it("matches a plain reference on fresh random candidates", () => {
    const r = rng(seed ^ 0x5bd1e995);
    for (let trial = 0; trial < 300; trial++) {
      const n = 1 + Math.floor(r() * 60);
      // ties on purpose: g on a coarse grid, some B missing (−∞: outside the routable library)
      const cands = Array.from({ length: n }, () => ({ g: Math.round(r() * 20) / 20, B: r() < 0.1 ? -Infinity : -r() * 10 }));
      const delta = r() < 0.3 ? 0 : r() * 0.2;
      const max = 1 + Math.floor(r() * 20);
      const beta = r() < 0.3 ? 0 : r();
      const kg = Math.floor(r() * 6);
      const kb = Math.floor(r() * 6);
      const got = firstStageShortlist(cands, delta, max, beta, (c) => c.B, { glance: kg, lexical: kb }).map((c) => cands.indexOf(c));
      expect(got, `trial ${trial}`).toEqual(referencePool(cands, delta, max, beta, kg, kb));
    }
  });

  it("is the Δ-shortlist alone when both k are 0", () => {
    const cands = [{ g: 0.5, B: -1 }, { g: 0.49, B: -0.1 }, { g: 0.1, B: -9 }];
    expect(firstStageShortlist(cands, 0.05, 20, 0, (c) => c.B)).toEqual(firstStageShortlist(cands, 0.05, 20, 0, (c) => c.B, { glance: 0, lexical: 0 }));
    expect(firstStageShortlist(cands, 0, 20, 0, (c) => c.B, { lexical: 1 }).map((c) => c.g)).toEqual([0.5, 0.49]);
  });
});

describe("the constants in the projections file", () => {
  const base = () => new Projections({ wq: Float32Array.from({ length: 8 }, (_, i) => i / 8), ws: new Float32Array(8), dim: 2, layer: 1, model });

  it("round-trip, and read as Lucene's BM25 with no union pool from a file without them", async () => {
    const p = base().withCalibration({ lexicalK1: 3, lexicalB: 1, shortlistGlance: 2, shortlistLexical: 5, beta: 0.1, lexicalTemperature: 53.8, glanceRowWeights: "idf", glanceVoteShare: 0.01, skillBudget: 512, keyBudget: 1536 });
    const path = join(dir, "p.gguf");
    await p.save(path);
    const q = await Projections.load(path);
    expect([q.lexicalK1, q.lexicalB, q.shortlistGlance, q.shortlistLexical, q.beta, q.lexicalTemperature, q.glanceRowWeights, q.glanceVoteShare, q.skillBudget, q.keyBudget]).toEqual([3, 1, 2, 5, 0.1, 53.8, "idf", 0.01, 512, 1536]);
    expect([base().glanceRowWeights, base().glanceVoteShare, base().skillBudget, base().keyBudget]).toEqual(["uniform", 0, 0, 0]);
    expect(q.hash).toBe(p.hash);
    // an older file: the same tensors and keys but the four new ones, written without them
    const header = await readGgufHeader(path);
    const w = new GgufWriter();
    for (const [k, v] of header.metadata) if (!/lexical_k1|lexical_b$|shortlist_glance|shortlist_lexical|glance_row_weights|glance_vote_share|skill_budget|key_budget/.test(k)) w.set(k, v);
    w.addTensor(TENSOR_WQ, [model.nEmbd, 2], p.wq);
    w.addTensor(TENSOR_WS, [model.nEmbd, 2], p.ws);
    const old = join(dir, "old.gguf");
    await w.write(old);
    const o = await Projections.load(old);
    expect([o.lexicalK1, o.lexicalB, o.shortlistGlance, o.shortlistLexical, o.glanceRowWeights, o.glanceVoteShare, o.skillBudget, o.keyBudget]).toEqual([1.2, 0.75, 0, 0, "uniform", 0, 0, 0]);
  });

  it("refuse a file whose row weights are neither uniform nor idf as CORRUPT_FILE", async () => {
    const path = join(dir, "rw.gguf");
    await base().save(path);
    const header = await readGgufHeader(path);
    const w = new GgufWriter();
    for (const [k, v] of header.metadata) w.set(k, k === "gavel.glance_row_weights" ? { type: v.type, value: "tf-idf" } as typeof v : v);
    w.addTensor(TENSOR_WQ, [model.nEmbd, 2], base().wq);
    w.addTensor(TENSOR_WS, [model.nEmbd, 2], base().ws);
    const bad = join(dir, "rw-bad.gguf");
    await w.write(bad);
    await expect(Projections.load(bad)).rejects.toMatchObject({ code: "CORRUPT_FILE", message: expect.stringContaining("gavel.glance_row_weights") });
  });

  it("refuse a file whose stored key budget is above the largest as CORRUPT_FILE", async () => {
    const path = join(dir, "kb.gguf");
    await base().save(path);
    const header = await readGgufHeader(path);
    const w = new GgufWriter();
    for (const [k, v] of header.metadata) w.set(k, k === "gavel.key_budget" ? { type: v.type, value: 2 ** 20 + 1 } as typeof v : v);
    w.addTensor(TENSOR_WQ, [model.nEmbd, 2], base().wq);
    w.addTensor(TENSOR_WS, [model.nEmbd, 2], base().ws);
    const bad = join(dir, "kb-bad.gguf");
    await w.write(bad);
    await expectCode(Projections.load(bad), "CORRUPT_FILE");
  });

  it("refuses values outside their range with a typed error", () => {
    for (const bad of [{ lexicalK1: -1 }, { lexicalB: 1.5 }, { shortlistGlance: 1.5 }, { shortlistLexical: -2 }, { lexicalK1: Number.NaN }, { glanceRowWeights: "bm25" as "idf" }, { glanceVoteShare: -0.01 }, { glanceVoteShare: 1.01 }, { glanceVoteShare: Number.NaN }, { skillBudget: -1 }, { keyBudget: 0.5 }, { keyBudget: 2 ** 20 + 1 }]) {
      expect(() => base().withCalibration(bad), JSON.stringify(bad)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    }
  });
});

describe("gavel info on a projections file", () => {
  it("prints every constant and the provenance without loading a model", async () => {
    const { info, isProjectionsFile } = await import("../../src/cli/commands/info.js");
    const { DEFAULT_PROJECTIONS, DEFAULT_MODEL } = await import("../../src/defaults.js");
    expect(await isProjectionsFile(DEFAULT_PROJECTIONS)).toBe(true);
    expect(await isProjectionsFile(DEFAULT_MODEL)).toBe(false);
    const lines: string[] = [];
    const log = console.log;
    console.log = (s: string) => void lines.push(s);
    try {
      expect(await info.run([DEFAULT_PROJECTIONS])).toBe(0);
    } finally {
      console.log = log;
    }
    const shown = JSON.parse(lines.join("\n"));
    const p = await Projections.load(DEFAULT_PROJECTIONS);
    for (const k of ["layer", "dim", "alpha", "gamma", "delta", "beta", "lexicalTemperature", "lexicalK1", "lexicalB", "shortlistGlance", "shortlistLexical", "maxShortlist", "glanceRowWeights", "glanceVoteShare", "skillBudget", "keyBudget"] as const) {
      expect(shown[k], k).toBe(p[k]);
    }
    expect(shown.abstention).toEqual(p.abstention);
    expect(shown.model).toEqual(p.model);
    expect(shown.createdAt).toBe(p.createdAt);
  });
});
