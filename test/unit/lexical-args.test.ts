// What the lexical entry points do with input JavaScript can pass them: Bm25Index's documents and
// queries, the live index's documents, ReferenceIdf's word lists (each a typed INVALID_ARGUMENT
// naming what is wrong, never a TypeError from inside), and the lexical posterior where BM25 / T
// overflows a double or no document can match (defined values, never NaN).
import { describe, expect, it } from "vitest";
import { Bm25Index } from "../../src/lexical/bm25.js";
import { LiveBm25Index } from "../../src/lexical/live-index.js";
import { lexicalPosterior, logPartition } from "../../src/lexical/posterior.js";
import { ReferenceIdf } from "../../src/lexical/reference-idf.js";
import { Projections } from "../../src/projections/projections.js";
import { expectCodeSync } from "../helpers/gavel-error.js";
import { freshSeed, rng } from "../helpers/random.js";

const docs = [
  { id: "a", name: "alpha", description: "git commit" },
  { id: "b", name: "beta", description: "docker build", body: "images and containers" },
];
const call = (f: (...a: unknown[]) => unknown, ...args: unknown[]) => () => f(...args);

describe("Bm25Index refuses what is not its documents or a query", () => {
  const ctor = (...a: unknown[]) => new (Bm25Index as unknown as new (...x: unknown[]) => Bm25Index)(...a);
  it("documents: an array of objects with string id, name and description, and a string body or none", () => {
    const bad: [unknown, RegExp][] = [
      [null, /Bm25Index: documents must be an array, got null/],
      [{}, /documents must be an array, got an object/],
      ["abc", /documents must be an array, got the string "abc"/],
      [[null], /documents\[0\] must be an object/],
      [[docs[0], "x"], /documents\[1\] must be an object/],
      [[{ id: "x", description: "d" }], /documents\[0\]\.name must be a string, got undefined/],
      [[{ id: "x", name: 5, description: "d" }], /documents\[0\]\.name must be a string, got 5/],
      [[{ id: 1, name: "n", description: "d" }], /documents\[0\]\.id must be a string/],
      [[docs[0], { id: "y", name: "n" }], /documents\[1\]\.description must be a string/],
      [[{ id: "x", name: "n", description: "d", body: null }], /documents\[0\]\.body must be a string or absent, got null/],
    ];
    for (const [d, msg] of bad) expectCodeSync(() => ctor(d), "INVALID_ARGUMENT", msg);
    // what the type allows is taken: body absent, undefined or a string
    expect(ctor([{ id: "x", name: "n", description: "d", body: undefined }, ...docs]).size).toBe(3);
  });

  it("documents: no two with one id (an id twice would rank twice); the live index replaces instead", () => {
    const twice = [docs[0], docs[1], { id: "a", name: "gamma", description: "docker compose" }];
    expectCodeSync(() => new Bm25Index(twice), "INVALID_ARGUMENT", /^Bm25Index: documents\[2\]\.id "a" repeats documents\[0\]\.id/);
    expectCodeSync(() => new Bm25Index([docs[1], docs[1]]), "INVALID_ARGUMENT", /documents\[1\]\.id "b" repeats documents\[0\]\.id/);
    // ids that differ only in case or by a space are distinct documents
    expect(new Bm25Index([docs[0], { ...docs[1], id: "A" }, { ...docs[1], id: "a " }]).ids).toEqual(["a", "A", "a "]);
    // the live index, updated one document at a time, takes a second add of an id as its new version
    const live = new LiveBm25Index();
    for (const d of twice) live.add(d);
    expect(live.size).toBe(2);
  });

  it("queries: a string, in scores, search and ceiling", () => {
    const index = new Bm25Index(docs);
    for (const q of [42, undefined, null, { text: "git" }, ["git"]]) {
      expectCodeSync(call(index.scores.bind(index) as (...a: unknown[]) => unknown, q), "INVALID_ARGUMENT", /Bm25Index\.scores: query must be a string/);
      expectCodeSync(call(index.search.bind(index) as (...a: unknown[]) => unknown, q), "INVALID_ARGUMENT", /Bm25Index\.search: query must be a string/);
      expectCodeSync(call(index.ceiling.bind(index) as (...a: unknown[]) => unknown, q), "INVALID_ARGUMENT", /Bm25Index\.ceiling: query must be a string/);
    }
    // and params, when given, are BM25 options: an object with k1 and b only
    for (const params of ["zz", null, { k: 1 }]) {
      expectCodeSync(call(index.scores.bind(index) as (...a: unknown[]) => unknown, "git", params), "INVALID_ARGUMENT", /bm25 options/);
      expectCodeSync(call(index.ceiling.bind(index) as (...a: unknown[]) => unknown, "git", params), "INVALID_ARGUMENT", /bm25 options/);
    }
    expect(index.scores("git commit", { k1: 0 })).toEqual(new Bm25Index(docs, { k1: 0 }).scores("git commit"));
    expect(index.search("git").map((h) => h.id)).toEqual(["a"]);
    // a document's missing name was once read as the word "undefined"
    expect(index.search("undefined")).toEqual([]);
  });

  it("the live index refuses a document the same way", () => {
    const live = new LiveBm25Index();
    expectCodeSync(() => live.add({ id: "x", description: "d" } as never), "INVALID_ARGUMENT", /LiveBm25Index\.add: document\.name must be a string/);
    expectCodeSync(() => live.add(null as never), "INVALID_ARGUMENT", /LiveBm25Index\.add: document must be an object/);
    expect(live.size).toBe(0);
  });
});

describe("ReferenceIdf refuses what is not words", () => {
  const ref = ReferenceIdf.build([["git", "commit"], ["docker", "build"]], 1);
  it("build: an iterable of arrays of strings", () => {
    expectCodeSync(() => ReferenceIdf.build([[1, 2]] as never, 1), "INVALID_ARGUMENT", /document 0, word 0 must be a string, got 1/);
    expectCodeSync(() => ReferenceIdf.build(["abc"] as never, 1), "INVALID_ARGUMENT", /document 0 must be an array of words, got the string "abc"/);
    expectCodeSync(() => ReferenceIdf.build(null as never, 1), "INVALID_ARGUMENT", /docs must be an iterable/);
    expectCodeSync(() => ReferenceIdf.build("git" as never, 1), "INVALID_ARGUMENT", /docs must be an iterable/);
  });
  it("coverage: an iterable of word strings, not a string, and a function", () => {
    expectCodeSync(() => ref.coverage("deploy docker" as never, () => true), "INVALID_ARGUMENT", /taskWords must be an iterable of words \(not a string\)/);
    expectCodeSync(() => ref.coverage([1] as never, () => true), "INVALID_ARGUMENT", /taskWords must hold strings, got 1/);
    expectCodeSync(() => ref.coverage(["git"], null as never), "INVALID_ARGUMENT", /holds must be a function/);
    expect(ref.coverage(new Set(["git", "docker"]), (w) => w === "git")).toBeCloseTo(0.5, 12);
  });
});

describe("the lexical posterior where BM25 / T overflows, or no document can match", () => {
  it("reads (s − max)/T when max/T overflows: the best scores share the mass", () => {
    expect(Array.from(lexicalPosterior([10, 5], 1e-308))).toEqual([0, -Infinity]);
    expect(Array.from(lexicalPosterior([1, 2], 5e-324))).toEqual([-Infinity, 0]);
    expect(Array.from(lexicalPosterior([10, 10, 3], 1e-308))).toEqual([-Math.log(2), -Math.log(2), -Infinity]);
    expect(Array.from(lexicalPosterior([-Infinity, 7, 7, 7], 1e-310))).toEqual([-Infinity, -Math.log(3), -Math.log(3), -Math.log(3)]);
    expect(logPartition([10, 5], 1e-308)).toBe(Infinity);
  });
  it("every score −∞: uniform, −log N each", () => {
    expect(Array.from(lexicalPosterior([-Infinity, -Infinity], 1))).toEqual([-Math.log(2), -Math.log(2)]);
    expect(Array.from(lexicalPosterior([-Infinity], 3))).toEqual([0]);
    expect(logPartition([-Infinity, -Infinity], 1)).toBe(-Infinity);
    expect(lexicalPosterior([], 1).length).toBe(0);
  });
  it("ordinary inputs: scores / T − logPartition, to the bit, on fresh random scores", () => {
    const seed = freshSeed();
    const r = rng(seed);
    for (let trial = 0; trial < 200; trial++) {
      const n = 1 + Math.floor(r() * 50);
      const scores = Array.from({ length: n }, () => (r() < 0.1 ? -Infinity : r() * 10 ** (r() * 6 - 2)));
      scores[0] = r() * 30;
      const T = 10 ** (r() * 8 - 4);
      const z = logPartition(scores, T);
      const B = lexicalPosterior(scores, T);
      for (let i = 0; i < n; i++) expect(B[i], `seed ${seed}, trial ${trial}`).toBe(scores[i] / T - z);
    }
  });
  it("Projections refuses a lexical temperature under 1e-9 (a damaged file's, not a setting)", () => {
    const model = { architecture: "llama", nLayer: 2, nEmbd: 4, nVocab: 10, vocabHash: "0".repeat(64) };
    const p = new Projections({ wq: new Float32Array(8), ws: new Float32Array(8), dim: 2, layer: 1, model });
    for (const T of [1e-308, 5e-324, 1e-10]) expectCodeSync(() => p.withCalibration({ lexicalTemperature: T }), "INVALID_ARGUMENT", /lexicalTemperature must be ≥ 1e-9/);
    expect(p.withCalibration({ lexicalTemperature: 1e-9 }).lexicalTemperature).toBe(1e-9);
  });
});
