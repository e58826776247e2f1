// The learned re-ranking of the first stage's leaders: its model in the projections file (round trip
// exact, checks typed), and the pool, features and stage scores of src/route/rerank.ts against a plain
// reference written from the fitting script's definitions, on fresh random inputs.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Projections } from "../../src/projections/projections.js";
import { checkRerankModel, RERANK_FEATURES, type RerankFeature, type RerankModel } from "../../src/projections/rerank-model.js";
import { cheapTop, fullScores, rerankPool, verdictNeeded, type RerankCandidate } from "../../src/route/rerank.js";
import { nameBigramShare, nameTokens, nameVerbatim, share, taskText } from "../../src/lexical/name-features.js";
import type { Ranked } from "../../src/route/glance.js";
import { DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { freshSeed, gauss, rng } from "../helpers/random.js";
import { repoRoot } from "../helpers/paths.js";

const fp = { architecture: "llama", nLayer: 2, nEmbd: 4, nVocab: 10, vocabHash: "0".repeat(64) };
const base = (rerank?: RerankModel | null) => new Projections({ wq: Float32Array.from({ length: 8 }, (_, i) => i / 8), ws: new Float32Array(8), dim: 2, layer: 1, model: fp, ...(rerank !== undefined ? { rerank } : {}) });

const cheapF: RerankFeature[] = ["bm25", "bm25Rel", "bm25Rank", "lucene", "nameShare", "nameVerbatim", "nameTitle", "nameBigram", "g", "gRank"];
const fullF: RerankFeature[] = [...cheapF, "L", "LRel", "LRank", "V"];
function randomModel(r: () => number, poolGlance: number, poolLexical: number, verdictTop: number): RerankModel {
  const stage = (fs: RerankFeature[]) => ({ features: fs, weights: fs.map(() => gauss(r)), mean: fs.map(() => gauss(r)), scale: fs.map(() => 0.1 + r() * 3) });
  return checkRerankModel({ kind: "cascade", poolGlance, poolLexical, lucene: { k1: 1.2, b: 0.75 }, verdictTop, cheap: stage(cheapF), full: stage(fullF) })!;
}

describe("the re-ranker in the projections file", () => {
  it("round-trips exactly, and a file without it reads as none", async () => {
    const seed = freshSeed();
    const m = randomModel(rng(seed), 20, 20, 2);
    const dir = mkdtempSync(join(tmpdir(), "rerank-"));
    await base(m).save(join(dir, "with.gguf"));
    await base().save(join(dir, "without.gguf"));
    const back = await Projections.load(join(dir, "with.gguf"));
    expect(back.rerank, `seed ${seed}`).toEqual(m);
    // the verdict's margin travels too
    const mm = checkRerankModel({ ...m, verdictMargin: 0.75 })!;
    await base(mm).save(join(dir, "margin.gguf"));
    expect((await Projections.load(join(dir, "margin.gguf"))).rerank).toEqual(mm);
    // and the size the verdict reads from (absent: 0, every size)
    expect(m.verdictMinSkills).toBe(0);
    const mv = checkRerankModel({ ...m, minSkills: 7, verdictMinSkills: 3_000 })!;
    await base(mv).save(join(dir, "floor.gguf"));
    expect((await Projections.load(join(dir, "floor.gguf"))).rerank).toEqual(mv);
    expect((await Projections.load(join(dir, "without.gguf"))).rerank).toBeNull();
    // removed by withCalibration({ rerank: null }), kept by a calibration that does not name it
    expect(back.withCalibration({ alpha: 0.5 }).rerank).toEqual(m);
    expect(back.withCalibration({ rerank: null }).rerank).toBeNull();
  });

  it("refuses malformed models with a typed error naming the field", () => {
    const m = randomModel(rng(1), 20, 20, 2);
    const bad: [unknown, RegExp][] = [
      [{ ...m, kind: "softmax" }, /kind must be "cascade"/],
      [{ ...m, verdictTop: 0 }, /verdictTop must be an integer in \[1, 20\]/],
      [{ ...m, poolGlance: 0, poolLexical: 0 }, /pool is empty/],
      [{ ...m, poolLexical: 2.5 }, /poolLexical must be an integer/],
      [{ ...m, minSkills: -1 }, /minSkills must be an integer/],
      [{ ...m, verdictMinSkills: 2.5 }, /verdictMinSkills must be an integer/],
      [{ ...m, verdictMinSkills: -3 }, /verdictMinSkills must be an integer/],
      [{ ...m, verdictMargin: -0.5 }, /verdictMargin must be ≥ 0/],
      [{ ...m, verdictMargin: "1" }, /verdictMargin must be a finite number/],
      [{ ...m, lucene: { k1: 1, b: 2 } }, /b in \[0, 1\]/],
      [{ ...m, cheap: { ...m.cheap, features: [...m.cheap.features.slice(0, -1), "L"] } }, /cheap may not read the verdict's L/],
      [{ ...m, full: { ...m.full, features: [...m.full.features.slice(0, -1), "nope"] } }, /unknown feature "nope"/],
      [{ ...m, full: { ...m.full, weights: m.full.weights.slice(1) } }, /full\.weights must hold/],
      [{ ...m, cheap: { ...m.cheap, scale: m.cheap.scale.map(() => 0) } }, /scale must be > 0/],
      [{ ...m, cheap: { ...m.cheap, mean: m.cheap.mean.map(() => NaN) } }, /must be a finite number/],
    ];
    for (const [x, re] of bad) {
      expect(() => checkRerankModel(x)).toThrow(re);
      expect(() => base(x as RerankModel)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    }
    // a re-ranker decides abstention on the first stage, so an abstention model reading V is refused
    expect(() => new Projections({ ...base().meta, wq: new Float32Array(8), ws: new Float32Array(8), rerank: m, abstention: { kind: "threshold", feature: "V", threshold: 0, marginCap: 1 } })).toThrow(/does not read the verdict's V/);
  });

  it("is in the embedded default projections", async () => {
    const p = await Projections.load(DEFAULT_PROJECTIONS);
    expect(p.rerank?.kind).toBe("cascade");
    // the file keeps the model the selection wrote (refitted after a one-line request stopped having a
    // title: bench/results/2026-12-01-cpu-one-line-title/cascade-margin.json, its verdict margin
    // included), applied at every library size, its verdict from 10,000 skills (decision.txt there)
    expect(p.rerank!.minSkills).toBe(0);
    expect(p.rerank!.verdictMinSkills).toBe(10_000);
    expect(p.rerank!.verdictMargin).toBe(1.5);
    expect(p.rerank).toEqual(checkRerankModel({ ...JSON.parse(readFileSync(join(repoRoot, "bench/results/2026-12-01-cpu-one-line-title/cascade-margin.json"), "utf8")), minSkills: 0, verdictMinSkills: 10_000 }));
  });
});

const WORDS = ["pdf", "extract", "tables", "docker", "image", "sql", "query", "git", "history", "secrets", "scan", "api", "design", "test", "python", "go", "modules"];
function randomTask(r: () => number): string {
  const line = () => Array.from({ length: 3 + Math.floor(r() * 8) }, () => WORDS[Math.floor(r() * WORDS.length)]).join(" ");
  return `${line()}\n\n${line()} ${line()}`;
}
function randomName(r: () => number): string {
  const n = 1 + Math.floor(r() * 3);
  return Array.from({ length: n }, () => WORDS[Math.floor(r() * WORDS.length)]).join("-");
}

describe("the re-ranker's pool and features against a plain reference", () => {
  it("pools, scores and orders as the fitting script's definitions, on fresh random inputs", () => {
    const seed = freshSeed();
    const r = rng(seed);
    for (let trial = 0; trial < 40; trial++) {
      const n = 1 + Math.floor(r() * 60);
      const poolGlance = Math.floor(r() * 12), poolLexical = 1 + Math.floor(r() * 12);
      const m = randomModel(r, poolGlance, poolLexical, 1 + Math.floor(r() * 4));
      // columns in a shuffled order, g sorted descending as the glance ranks them; some BM25 ties at 0
      const cols = Array.from({ length: n }, (_, i) => i).sort(() => r() - 0.5);
      const ranked: Ranked[] = cols.map((c, i) => ({ column: c, skill: `lib/${randomName(r)}-${i}`, name: randomName(r), g: 1 - i / n }));
      const bm25 = Float64Array.from({ length: n }, () => (r() < 0.3 ? 0 : r() * 40));
      const lucene = Float64Array.from({ length: n }, () => (r() < 0.3 ? 0 : r() * 20));
      const T = 10 + r() * 50;
      const text = randomTask(r);
      const pool = rerankPool(m, text, ranked, bm25, lucene, T);
      // reference: the glance's first poolGlance, then BM25's best poolLexical (ties: glance order) not already in
      const refIdx = ranked.slice(0, poolGlance).map((_, i) => i);
      const byBm25 = ranked.map((_, i) => i).sort((a, b) => bm25[ranked[b].column] - bm25[ranked[a].column] || a - b).slice(0, poolLexical);
      for (const i of byBm25) if (!refIdx.includes(i)) refIdx.push(i);
      expect(pool.map((c) => c.skill), `seed ${seed} trial ${trial}`).toEqual(refIdx.map((i) => ranked[i].skill));
      const s = refIdx.map((i) => bm25[ranked[i].column]), l = refIdx.map((i) => lucene[ranked[i].column]);
      const rank = (v: number[], k: number) => v.filter((x, j) => x > v[k] || (x === v[k] && j < k)).length;
      const t = taskText(text);
      pool.forEach((c, k) => {
        const who = { id: c.skill, name: c.name };
        const want: Partial<Record<RerankFeature, number>> = {
          bm25: s[k] / T,
          bm25Rel: Math.max(...s) > 0 ? s[k] / Math.max(...s) : 0,
          bm25Rank: Math.log1p(rank(s, k)),
          lucene: Math.max(...l) > 0 ? l[k] / Math.max(...l) : 0,
          nameShare: share(nameTokens(who), t.tokens),
          nameVerbatim: nameVerbatim(who, t),
          nameTitle: share(nameTokens(who), t.title),
          nameBigram: nameBigramShare(who, t),
          g: ranked[refIdx[k]].g,
          gRank: Math.log1p(rank(refIdx.map((i) => ranked[i].g), k)),
        };
        for (const [f, v] of Object.entries(want)) expect(c.x[f as RerankFeature], `seed ${seed} trial ${trial} ${f}`).toBeCloseTo(v!, 12);
        const z = m.cheap.features.reduce((a, f, j) => a + (m.cheap.weights[j] * (c.x[f] - m.cheap.mean[j])) / m.cheap.scale[j], 0);
        expect(c.cheap).toBeCloseTo(z, 10);
      });
      // the cheap stage's best verdictTop, back in pool order
      const top = cheapTop(pool, m.verdictTop);
      const want = pool.map((_, i) => i).sort((a, b) => pool[b].cheap - pool[a].cheap || a - b).slice(0, m.verdictTop).sort((a, b) => a - b);
      expect(top.map((c) => c.skill)).toEqual(want.map((i) => pool[i].skill));
      // the full stage reads L and V relative to the verdict's candidates
      const L = top.map(() => -5 + gauss(r)), V = top.map(() => 10 + gauss(r));
      const R = fullScores(m, top, L, V);
      top.forEach((c, k) => {
        const x = { ...c.x, L: L[k], LRel: L[k] - Math.max(...L), LRank: Math.log1p(rank(L, k)), V: V[k] };
        const z = m.full.features.reduce((a, f, j) => a + (m.full.weights[j] * (x[f] - m.full.mean[j])) / m.full.scale[j], 0);
        expect(R[k], `seed ${seed} trial ${trial}`).toBeCloseTo(z, 10);
      });
    }
    expect(RERANK_FEATURES.length).toBe(14);
  });
});

describe("the verdict's margin", () => {
  it("runs the verdict exactly when the cheap stage's best leads its second by less than the margin, on fresh random scores", () => {
    const seed = freshSeed();
    const r = rng(seed);
    const m = randomModel(r, 20, 20, 3);
    for (let trial = 0; trial < 200; trial++) {
      const n = Math.floor(r() * 4);
      const top = Array.from({ length: n }, (_, i) => ({ column: i, skill: `s${i}`, name: `s${i}`, g: 0, bm25: 0, cheap: gauss(r) * 2 }) as unknown as RerankCandidate);
      const tau = r() * 3;
      const sorted = top.map((c) => c.cheap).sort((a, b) => b - a);
      // the plain reference: two or more candidates, and a lead under τ
      const expected = n >= 2 && sorted[0] - sorted[1] < tau;
      expect(verdictNeeded(checkRerankModel({ ...m, verdictMargin: tau })!, top), `seed ${seed}, trial ${trial}`).toBe(expected);
      // no margin: the verdict reads any two or more
      expect(verdictNeeded(m, top)).toBe(n >= 2);
    }
  });
});
