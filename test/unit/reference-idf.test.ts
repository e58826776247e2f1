// The reference idf (src/lexical/reference-idf.ts): document frequencies over a reference library,
// the idf and the reference coverage abstention reads as `gcov`. Checked against plain counting on
// fresh random libraries, through the bank's BM25 index as a route reads it, and its checks on bad
// tables; and its round trip through a projections file, where a damaged table is CORRUPT_FILE.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { GavelError } from "../../src/errors.js";
import { LiveBm25Index } from "../../src/lexical/live-index.js";
import { bm25DocTokens, bm25Tokens, termHash } from "../../src/lexical/postings.js";
import { ReferenceIdf, referenceCoverage } from "../../src/lexical/reference-idf.js";
import { Projections } from "../../src/projections/projections.js";
import { arr, u32 } from "../../src/gguf/index.js";
import { projectionsRewriter } from "../helpers/projections-rewrite.js";
import { freshSeed, rng } from "../helpers/random.js";
import { tempDirs } from "../helpers/temp-dirs.js";

/** Random documents over words w0…w(V−1), Zipf-like, as word lists. */
function randomDocs(r: () => number): string[][] {
  const V = 20 + Math.floor(r() * 200);
  const word = () => `w${Math.floor(V * r() ** 2)}`;
  return Array.from({ length: 10 + Math.floor(r() * 200) }, () => Array.from({ length: 1 + Math.floor(r() * 40) }, word));
}

/** df of each word by counting, and the idf a table with `minDf` gives (words under it: (minDf − 1)/2). */
function plain(docs: readonly string[][], minDf: number) {
  const df = new Map<string, number>();
  for (const d of docs) for (const w of new Set(d)) df.set(w, (df.get(w) ?? 0) + 1);
  const N = docs.length;
  const dfOf = (w: string) => {
    const n = df.get(w) ?? 0;
    return n >= minDf ? n : (minDf - 1) / 2;
  };
  const idf = (w: string) => Math.log(1 + (N - dfOf(w) + 0.5) / (dfOf(w) + 0.5));
  return { df, dfOf, idf, kept: [...df.values()].filter((n) => n >= minDf).length };
}

const tmp = tempDirs("gavel-refidf-");

describe("ReferenceIdf", () => {
  it("counts each word's documents, keeps those in at least minDf, and reads the rest as (minDf − 1)/2", () => {
    const seed = freshSeed();
    const r = rng(seed);
    for (let trial = 0; trial < 30; trial++) {
      const docs = randomDocs(r);
      const minDf = 1 + Math.floor(r() * 6);
      const ref = ReferenceIdf.build(docs, minDf);
      const p = plain(docs, minDf);
      const why = `seed ${seed}, trial ${trial}, minDf ${minDf}`;
      expect(ref.documents, why).toBe(docs.length);
      expect(ref.words, why).toBe(p.kept);
      for (const w of [...p.df.keys(), "never-seen", "zz9"]) {
        expect(ref.dfOf(w), `${why}, ${w}`).toBe(p.dfOf(w));
        expect(ref.idf(w), `${why}, ${w}`).toBeCloseTo(p.idf(w), 12);
      }
    }
  });

  it("coverage is the task's distinct words' idf held over all of it, as computed by hand", () => {
    const seed = freshSeed();
    const r = rng(seed);
    for (let trial = 0; trial < 30; trial++) {
      const docs = randomDocs(r);
      const ref = ReferenceIdf.build(docs, 1 + Math.floor(r() * 4));
      const p = plain(docs, ref.minDf);
      const skill = new Set(docs[Math.floor(r() * docs.length)]);
      const task = Array.from({ length: 1 + Math.floor(r() * 12) }, () => (r() < 0.2 ? `zz${Math.floor(r() * 5)}` : docs[0][Math.floor(r() * docs[0].length)]));
      const distinct = [...new Set(task)];
      const all = distinct.reduce((s, w) => s + p.idf(w), 0);
      const held = distinct.filter((w) => skill.has(w)).reduce((s, w) => s + p.idf(w), 0);
      const got = ref.coverage(task, (w) => skill.has(w));
      expect(got, `seed ${seed}, trial ${trial}`).toBeCloseTo(held / all, 12);
      // a word said twice counts once
      expect(ref.coverage([...task, ...task], (w) => skill.has(w))).toBeCloseTo(got, 12);
      // gcov2: each word weighed by its idf squared
      const all2 = distinct.reduce((s, w) => s + p.idf(w) ** 2, 0);
      const held2 = distinct.filter((w) => skill.has(w)).reduce((s, w) => s + p.idf(w) ** 2, 0);
      expect(ref.coverage(task, (w) => skill.has(w), 2), `seed ${seed}, trial ${trial}, power 2`).toBeCloseTo(held2 / all2, 12);
    }
    const ref = ReferenceIdf.build([["a"]], 1);
    expect(ref.coverage([], () => true)).toBe(0);
    expect(ref.coverage(["a", "b"], () => true)).toBe(1);
    expect(ref.coverage(["a", "b"], () => false)).toBe(0);
    for (const bad of [0, -1, NaN, Infinity, "2" as unknown as number]) {
      expect(() => ref.coverage(["a"], () => true, bad), String(bad)).toThrow(/power must be a finite number > 0/);
    }
  });

  it("a rare word held counts for more than a common one", () => {
    // "the" in every document, "dockerfile" in one of 100
    const docs = Array.from({ length: 100 }, (_, i) => (i === 0 ? ["the", "dockerfile"] : ["the", `x${i}`]));
    const ref = ReferenceIdf.build(docs, 1);
    const task = ["write", "the", "dockerfile"];
    const rare = ref.coverage(task, (w) => w === "dockerfile");
    const common = ref.coverage(task, (w) => w === "the");
    expect(rare).toBeGreaterThan(5 * common);
    // squaring the weights widens the gap between two words the reference holds: the common word's
    // share falls, the rare word's rises
    const two = ["the", "dockerfile"];
    expect(ref.coverage(two, (w) => w === "the", 2)).toBeLessThan(ref.coverage(two, (w) => w === "the"));
    expect(ref.coverage(two, (w) => w === "dockerfile", 2)).toBeGreaterThan(ref.coverage(two, (w) => w === "dockerfile"));
  });

  it("reads a bank's BM25 index as the route does: the task's words the indexed skill holds", () => {
    const seed = freshSeed();
    const r = rng(seed);
    for (let trial = 0; trial < 20; trial++) {
      const docs = randomDocs(r);
      const ref = ReferenceIdf.build(docs, 1 + Math.floor(r() * 3));
      const index = new LiveBm25Index();
      const skills = Array.from({ length: 3 + Math.floor(r() * 5) }, (_, i) => ({ id: `s${i}`, name: `skill ${i}`, description: docs[i % docs.length].join(" "), body: r() < 0.5 ? docs[(i + 1) % docs.length].join(" ") : "" }));
      for (const s of skills) index.add(s);
      index.remove("s0");
      const task = `${docs[1].slice(0, 5).join(" ")} and ZZ1 ${docs[2][0]}`;
      for (const s of skills.slice(1)) {
        const held = new Set(bm25DocTokens(s));
        const want = ref.coverage(bm25Tokens(task), (w) => held.has(w));
        expect(referenceCoverage(ref, index, task, s.id), `seed ${seed}, trial ${trial}, ${s.id}`).toBeCloseTo(want, 12);
        const want2 = ref.coverage(bm25Tokens(task), (w) => held.has(w), 2);
        expect(referenceCoverage(ref, index, task, s.id, 2), `seed ${seed}, trial ${trial}, ${s.id}, power 2`).toBeCloseTo(want2, 12);
      }
      // a skill the index lacks (removed, or never added) has none
      expect(referenceCoverage(ref, index, task, "s0")).toBeUndefined();
      expect(referenceCoverage(ref, index, task, "nope")).toBeUndefined();
    }
  });

  it("refuses a damaged table with INVALID_ARGUMENT", () => {
    const ok = { documents: 10, minDf: 2, hashes: Uint32Array.from([1, 5, 9]), df: Uint32Array.from([2, 3, 10]) };
    expect(new ReferenceIdf(ok).words).toBe(3);
    const bad: [string, object][] = [
      ["hashes not ascending", { ...ok, hashes: Uint32Array.from([1, 9, 5]) }],
      ["a repeated hash", { ...ok, hashes: Uint32Array.from([1, 5, 5]) }],
      ["df under minDf", { ...ok, df: Uint32Array.from([1, 3, 10]) }],
      ["df over documents", { ...ok, df: Uint32Array.from([2, 3, 11]) }],
      ["lengths differ", { ...ok, df: Uint32Array.from([2, 3]) }],
      ["no documents", { ...ok, documents: 0 }],
      ["minDf 0", { ...ok, minDf: 0 }],
      ["minDf over documents", { ...ok, minDf: 11 }],
      ["a plain array", { ...ok, hashes: [1, 5, 9] }],
    ];
    for (const [what, init] of bad) {
      expect(() => new ReferenceIdf(init as never), what).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    }
  });

  it("travels in a projections file: read back word for word, shown by its size, kept by withCalibration", async () => {
    const dir = tmp();
    const docs = randomDocs(rng(freshSeed()));
    const ref = ReferenceIdf.build(docs, 2);
    const base = await Projections.random({ architecture: "llama", nLayer: 2, nEmbd: 8, nVocab: 32, vocabHash: "0".repeat(64) }, { dim: 4 });
    expect(base.referenceIdf).toBeNull();
    const p = base.withCalibration({ referenceIdf: ref });
    await p.save(join(dir, "p.gguf"));
    const back = await Projections.load(join(dir, "p.gguf"));
    expect(back.referenceIdf).not.toBeNull();
    expect(back.referenceIdf!.documents).toBe(ref.documents);
    expect(back.referenceIdf!.minDf).toBe(2);
    expect([...back.referenceIdf!.hashes]).toEqual([...ref.hashes]);
    expect([...back.referenceIdf!.df]).toEqual([...ref.df]);
    expect(back.withCalibration({ alpha: 2 }).referenceIdf).toBe(back.referenceIdf);
    expect(back.withCalibration({ referenceIdf: null }).referenceIdf).toBeNull();
    // the table is not part of the metadata (it would flood `gavel info`)
    expect(Object.keys(back.meta)).not.toContain("referenceIdf");
    // and the file without one reads as none
    await base.save(join(dir, "none.gguf"));
    expect((await Projections.load(join(dir, "none.gguf"))).referenceIdf).toBeNull();
  });

  it("an abstention model that reads gcov needs the table", async () => {
    const base = await Projections.random({ architecture: "llama", nLayer: 2, nEmbd: 8, nVocab: 32, vocabHash: "0".repeat(64) }, { dim: 4 });
    const model = { kind: "threshold" as const, feature: "gcov" as const, threshold: 0.2, marginCap: 1 };
    expect(() => base.withCalibration({ abstention: model })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringContaining("reference idf") }));
    const withRef = base.withCalibration({ referenceIdf: ReferenceIdf.build([["a", "b"], ["a"]], 1) }).withCalibration({ abstention: model });
    expect(withRef.abstention).toEqual(model);
    expect(() => withRef.withCalibration({ referenceIdf: null })).toThrow(GavelError);
  });

  it("a damaged table in a file is CORRUPT_FILE, naming what is wrong", async () => {
    const dir = tmp();
    const base = await Projections.random({ architecture: "llama", nLayer: 2, nEmbd: 8, nVocab: 32, vocabHash: "0".repeat(64) }, { dim: 4 });
    const good = join(dir, "good.gguf");
    await base.withCalibration({ referenceIdf: new ReferenceIdf({ documents: 10, minDf: 2, hashes: Uint32Array.from([termHash("a"), termHash("b")].sort((x, y) => x - y)), df: Uint32Array.from([2, 3]) }) }).save(good);
    // rewrite the file's metadata with one change, the tensors as they are
    const rewrite = await projectionsRewriter(good, dir);
    const cases: [string, (m: Map<string, unknown>) => void, string][] = [
      ["incomplete", (m) => m.delete("gavel.reference.df"), "incomplete"],
      ["descending", (m) => m.set("gavel.reference.hashes", arr("u32", [7, 3])), "ascending"],
      ["df-range", (m) => m.set("gavel.reference.df", arr("u32", [2, 99])), "outside"],
      ["df-type", (m) => m.set("gavel.reference.df", arr("f32", [2, 3])), "array of u32"],
      ["documents-type", (m) => m.set("gavel.reference.documents", arr("u32", [10])), "not a u32"],
    ];
    for (const [name, change, says] of cases) {
      const path = await rewrite(`${name}.gguf`, change);
      await expect(Projections.load(path), name).rejects.toMatchObject({ code: "CORRUPT_FILE", message: expect.stringContaining(says) });
    }
    // the unchanged rewrite reads
    const same = await rewrite("same.gguf", (m) => m.set("gavel.reference.min_df", u32(2)));
    expect((await Projections.load(same)).referenceIdf!.words).toBe(2);
  });
});
