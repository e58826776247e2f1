// The domain score (src/lexical/domain.ts): the words it reads, the score against a plain
// implementation on fresh random tables and texts, its checks on bad tables, its round trip through a
// projections file (a damaged table is CORRUPT_FILE), the abstention feature that reads it, and the
// embedded projections' table on requests and prompts of the shapes it was trained to tell apart.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DOMAIN_STOP_WORDS, DomainModel, domainWords } from "../../src/lexical/domain.js";
import { termHash } from "../../src/lexical/postings.js";
import { Projections } from "../../src/projections/projections.js";
import { abstentionFeatures, decideAbstention } from "../../src/route/abstention.js";
import { arr } from "../../src/gguf/index.js";
import { projectionsRewriter } from "../helpers/projections-rewrite.js";
import { DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { domainTextOf } from "../../src/route/context.js";
import { freshSeed, rng } from "../helpers/random.js";
import { tempDirs } from "../helpers/temp-dirs.js";

const tmp = tempDirs("gavel-domain-");
const fingerprint = { architecture: "llama", nLayer: 2, nEmbd: 8, nVocab: 32, vocabHash: "0".repeat(64) };

/** The score as written in the module's description, with a Map for the table. */
function plainScore(table: Map<string, number>, bias: number, text: string): number | undefined {
  const seen = new Set<string>();
  let sum = 0;
  for (const w of text.toLowerCase().split(/[^a-z0-9]+/)) {
    if (w.length < 2 || DOMAIN_STOP_WORDS.has(w) || seen.has(w)) continue;
    seen.add(w);
  }
  const known = [...seen].filter((w) => table.has(w));
  for (const w of known) sum += Math.fround(table.get(w)!);
  return known.length === 0 ? undefined : bias + sum / Math.sqrt(known.length);
}

/** A random word over a small alphabet (so texts repeat words), with mixed case. */
function randomWord(r: () => number): string {
  const n = 1 + Math.floor(r() * 6);
  let w = "";
  for (let i = 0; i < n; i++) {
    const c = "abcdeXYZ019"[Math.floor(r() * 11)];
    w += r() < 0.2 ? c.toUpperCase() : c;
  }
  return w;
}

describe("domainWords", () => {
  it("reads distinct lower-cased runs of ASCII letters and digits, without one-letter words or stop words", () => {
    expect(domainWords("Write a Dockerfile for the Flask app; write it FAST (v2)!")).toEqual(["write", "dockerfile", "flask", "app", "fast", "v2"]);
    expect(domainWords("user_id → audit-logs.js")).toEqual(["user", "id", "audit", "logs", "js"]);
    // words of other scripts are not read: a task in them holds none of the table's words
    expect(domainWords("导出报表 à la carte")).toEqual(["la", "carte"]);
    expect(domainWords("")).toEqual([]);
  });
});

describe("domainTextOf", () => {
  it("reads a task as it is and chat messages' contents without the system prompt or the role labels", () => {
    expect(domainTextOf("Write a Dockerfile")).toBe("Write a Dockerfile");
    const chat = [{ role: "system", content: "You are an agent." }, { role: "user", content: "Write a Dockerfile" }, { role: "assistant", content: "For which app?" }];
    expect(domainTextOf(chat)).toBe("Write a Dockerfile\nFor which app?");
    expect(domainWords(domainTextOf(chat))).not.toContain("user");
  });
});

describe("DomainModel", () => {
  it("scores as bias + the known words' weights over √(their number), on fresh random tables and texts", () => {
    const seed = freshSeed();
    const r = rng(seed);
    for (let trial = 0; trial < 40; trial++) {
      const table = new Map<string, number>();
      const n = 1 + Math.floor(r() * 60);
      while (table.size < n) {
        const w = randomWord(r).toLowerCase();
        if (w.length > 1 && !DOMAIN_STOP_WORDS.has(w)) table.set(w, (r() - 0.5) * 8);
      }
      const bias = (r() - 0.5) * 4;
      let model: DomainModel;
      try {
        model = DomainModel.fromWords([...table.keys()], [...table.values()], bias);
      } catch (err) {
        // two random words sharing an FNV-1a hash: refused, as it must be (no silent merge)
        expect(err, `seed ${seed}, trial ${trial}`).toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringContaining("share a hash") });
        continue;
      }
      expect(model.words).toBe(table.size);
      for (let k = 0; k < 10; k++) {
        const text = Array.from({ length: Math.floor(r() * 12) }, () => (r() < 0.6 ? [...table.keys()][Math.floor(r() * table.size)] : randomWord(r))).join(r() < 0.5 ? " " : ", ");
        const want = plainScore(table, bias, text);
        const got = model.score(text);
        const why = `seed ${seed}, trial ${trial}, ${JSON.stringify(text)}`;
        if (want === undefined) expect(got, why).toBeUndefined();
        else expect(got, why).toBeCloseTo(want, 10);
      }
      for (const [w, x] of table) expect(model.weightOf(w)).toBe(Math.fround(x));
      expect(model.weightOf("zz-not-a-word")).toBeUndefined();
    }
  });

  it("refuses a damaged table with INVALID_ARGUMENT", () => {
    const ok = { hashes: Uint32Array.from([1, 5, 9]), weights: Float32Array.from([0.5, -1, 2]), bias: 0.1 };
    expect(new DomainModel(ok).words).toBe(3);
    const bad: [string, object][] = [
      ["hashes not ascending", { ...ok, hashes: Uint32Array.from([1, 9, 5]) }],
      ["a repeated hash", { ...ok, hashes: Uint32Array.from([1, 5, 5]) }],
      ["lengths differ", { ...ok, weights: Float32Array.from([1, 2]) }],
      ["empty", { hashes: new Uint32Array(0), weights: new Float32Array(0), bias: 0 }],
      ["a NaN weight", { ...ok, weights: Float32Array.from([1, NaN, 2]) }],
      ["an infinite bias", { ...ok, bias: Infinity }],
      ["plain arrays", { ...ok, hashes: [1, 5, 9] }],
      ["not an object", null as unknown as object],
    ];
    for (const [what, init] of bad) expect(() => new DomainModel(init as never), what).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => DomainModel.fromWords(["a1", "a1"], [1, 2], 0)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => DomainModel.fromWords(["a1"], [1, 2], 0)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => DomainModel.fromWords([""], [1], 0)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
  });

  it("refuses a text or word that is not a string with INVALID_ARGUMENT, naming the verb and what came", () => {
    const model = DomainModel.fromWords(["dockerfile", "flask"], [1.5, 0.5], -0.2);
    for (const bad of [5, null, undefined, { length: 3 }, ["dockerfile"], Symbol("x")]) {
      const what = typeof bad === "symbol" ? "a symbol" : JSON.stringify(bad) ?? "undefined";
      expect(() => domainWords(bad as never), what).toThrow(expect.objectContaining({ name: "GavelError", code: "INVALID_ARGUMENT", message: expect.stringMatching(/^domainWords: text must be a string, got /) }));
      expect(() => model.score(bad as never), what).toThrow(expect.objectContaining({ name: "GavelError", code: "INVALID_ARGUMENT", message: expect.stringMatching(/^DomainModel\.score: text must be a string, got /) }));
      expect(() => model.weightOf(bad as never), what).toThrow(expect.objectContaining({ name: "GavelError", code: "INVALID_ARGUMENT", message: expect.stringMatching(/^DomainModel\.weightOf: word must be a string, got /) }));
    }
    expect(() => model.score(5 as never)).toThrow("got 5");
    // a string still scores
    expect(model.score("a Dockerfile for Flask")).toBeCloseTo(-0.2 + 2 / Math.SQRT2, 6);
  });

  it("travels in a projections file: read back weight for weight, kept by withCalibration, absent from the metadata", async () => {
    const dir = tmp();
    const r = rng(freshSeed());
    const words = [...new Set(Array.from({ length: 50 }, () => `w${Math.floor(r() * 1e6)}`))];
    const model = DomainModel.fromWords(words, words.map(() => r() - 0.5), -0.25);
    const base = await Projections.random(fingerprint, { dim: 4 });
    expect(base.domain).toBeNull();
    await base.withCalibration({ domain: model }).save(join(dir, "p.gguf"));
    const back = await Projections.load(join(dir, "p.gguf"));
    expect([...back.domain!.hashes]).toEqual([...model.hashes]);
    expect([...back.domain!.weights]).toEqual([...model.weights]);
    expect(back.domain!.bias).toBe(-0.25);
    expect(back.domain!.score(words.slice(0, 7).join(" "))).toBe(model.score(words.slice(0, 7).join(" ")));
    expect(back.withCalibration({ alpha: 2 }).domain).toBe(back.domain);
    expect(back.withCalibration({ domain: null }).domain).toBeNull();
    expect(Object.keys(back.meta)).not.toContain("domain");
    await base.save(join(dir, "none.gguf"));
    expect((await Projections.load(join(dir, "none.gguf"))).domain).toBeNull();
  });

  it("a damaged table in a file is CORRUPT_FILE, naming what is wrong", async () => {
    const dir = tmp();
    const base = await Projections.random(fingerprint, { dim: 4 });
    const good = join(dir, "good.gguf");
    await base.withCalibration({ domain: DomainModel.fromWords(["docker", "joke"], [1.5, -2], 0.1) }).save(good);
    const rewrite = await projectionsRewriter(good, dir);
    const hashes = [termHash("docker"), termHash("joke")].sort((a, b) => a - b);
    const cases: [string, (m: Map<string, unknown>) => void, string][] = [
      ["incomplete", (m) => m.delete("gavel.domain.bias"), "incomplete"],
      ["descending", (m) => m.set("gavel.domain.hashes", arr("u32", [hashes[1], hashes[0]])), "ascending"],
      ["lengths", (m) => m.set("gavel.domain.weights", arr("f32", [1])), "weights"],
      ["weights-type", (m) => m.set("gavel.domain.weights", arr("u32", [1, 2])), "array of f32"],
      ["hashes-type", (m) => m.set("gavel.domain.hashes", arr("f32", [1, 2])), "array of u32"],
      ["nan", (m) => m.set("gavel.domain.weights", arr("f32", [1, NaN])), "not a finite number"],
    ];
    for (const [name, change, says] of cases) {
      const path = await rewrite(`${name}.gguf`, change);
      await expect(Projections.load(path), name).rejects.toMatchObject({ code: "CORRUPT_FILE", message: expect.stringContaining(says) });
    }
  });

  it("an abstention model that reads domain needs the table; the feature moves its decision and is neutral when absent", async () => {
    const base = await Projections.random(fingerprint, { dim: 4 });
    const model = { kind: "logistic" as const, features: ["reach" as const, "domain" as const], weights: [-1, -2], bias: 0, mean: [1, 0], scale: [1, 1], threshold: 0, marginCap: 1 };
    expect(() => base.withCalibration({ abstention: model })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringContaining("domain table") }));
    const table = DomainModel.fromWords(["dockerfile", "joke"], [3, -3], 0);
    const p = base.withCalibration({ domain: table }).withCalibration({ abstention: model });
    expect(() => p.withCalibration({ domain: null })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    const ruled = [{ S: 1, g: 0.3, V: NaN }];
    // the same reach: a task of the agent's kind routes, an everyday one abstains
    const at = (text: string) => decideAbstention(p.abstention, abstentionFeatures(ruled, { reach: 1, domain: table.score(text) }));
    expect(at("Write a Dockerfile").abstain).toBe(false);
    expect(at("Tell me a joke").abstain).toBe(true);
    expect(at("Tell me a joke").reason).toContain("domain score");
    // a task holding none of the table's words: the feature sits at its mean (z = 0 here: routes)
    expect(table.score("Bonjour")).toBeUndefined();
    expect(at("Bonjour").abstain).toBe(false);
  });
});

describe("the embedded projections' domain table", () => {
  it("reads an agent's requests above everyday questions", async () => {
    const p = await Projections.load(DEFAULT_PROJECTIONS);
    expect(p.domain).not.toBeNull();
    const work = ["Add retries with exponential backoff to the deploy script.", "Why does this Postgres query scan the whole orders table?", "Convert the CSV export to Parquet partitioned by month."];
    const everyday = ["What's a good recipe for banana bread?", "Remind me to call my sister on Sunday.", "How far is the moon from the earth?"];
    const w = work.map((t) => p.domain!.score(t)!);
    const e = everyday.map((t) => p.domain!.score(t)!);
    expect(Math.min(...w), `${w} against ${e}`).toBeGreaterThan(Math.max(...e));
    // the large band reads it beside the reach
    expect(p.abstention?.kind).toBe("bySize");
    const large = p.abstention!.kind === "bySize" ? p.abstention!.large : null;
    expect(large?.kind === "logistic" && large.features).toEqual(["reach", "domain"]);
  });
});
