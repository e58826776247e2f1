// A small library's own abstention cut (src/route/library-cut.ts): the abstention reference in the
// projections file (checked, round-tripped, refused when damaged), the cut a route applies beside the
// model's (against a plain reading of the rule on fresh random inputs), and the cut's measurement: the
// (pass + 1)-th lowest prompt score, once per state of the library, again after a change.
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { writeProjectionsFile, ABSTAIN_REFERENCE_KEY } from "../../src/projections/file.js";
import { Projections, type AbstentionModel } from "../../src/projections/projections.js";
import { checkAbstentionReference, type AbstentionReference, type BandAbstention } from "../../src/projections/abstention-model.js";
import { readGgufHeader } from "../../src/gguf/index.js";
import { applyLibraryCut, type AbstentionDecision, type LibraryCut } from "../../src/route/abstention.js";
import { LIBRARY_CUT_FILE, libraryCut, routeCut } from "../../src/route/library-cut.js";
import { GavelError } from "../../src/errors.js";
import type { LexicalExpert } from "../../src/route/lexical-expert.js";
import type { RouterParts } from "../../src/route/parts.js";
import type { LibraryState } from "../../src/bank/library.js";
import { freshSeed, rng } from "../helpers/random.js";
import { expectCode } from "../helpers/gavel-error.js";

const seed = freshSeed();

const fp = { architecture: "llama", nLayer: 2, nEmbd: 4, nVocab: 10, vocabHash: "0".repeat(64) };
const dir = mkdtempSync(join(tmpdir(), "library-cut-"));
const base = () => new Projections({ wq: Float32Array.from({ length: 8 }, (_, i) => i / 8), ws: new Float32Array(8), dim: 2, layer: 1, model: fp });
const SMALL: BandAbstention = { kind: "logistic", features: ["g", "B"], weights: [-1, -0.5], bias: 0.1, mean: [0.3, -2], scale: [0.1, 1], threshold: 0, marginCap: 1 };
const LARGE: BandAbstention = { kind: "threshold", feature: "reach", threshold: 1.6, marginCap: 0.1 };
const BY_SIZE: AbstentionModel = { kind: "bySize", from: 125, small: SMALL, large: LARGE };
const REF: AbstentionReference = { prompts: ["What time zone is Lisbon in?", "Tell me a joke about penguins.", "How many grams of protein are in an egg?", "Write a haiku about rain."], pass: 1, below: 125 };

describe("the abstention reference in the projections file", () => {
  it("round-trips exactly, as one JSON key, and goes with the model", async () => {
    const p = base().withCalibration({ abstention: BY_SIZE, abstentionReference: REF });
    const path = join(dir, "ref.gguf");
    await p.save(path);
    const back = await Projections.load(path);
    expect(back.abstentionReference).toEqual(REF);
    expect(back.meta).toEqual(p.meta);
    expect(back.hash).toBe(base().hash);
    expect((await readGgufHeader(path)).metadata.get(ABSTAIN_REFERENCE_KEY)?.type).toBe("str");
    // kept by other calibrations and a new model; removed with the model or on its own
    expect(p.withCalibration({ alpha: 2 }).abstentionReference).toEqual(REF);
    expect(p.withCalibration({ abstention: SMALL }).abstentionReference).toEqual(REF);
    expect(p.withCalibration({ abstention: null }).abstentionReference).toBeNull();
    expect(p.withCalibration({ abstentionReference: null }).abstentionReference).toBeNull();
    expect(p.withCalibration({ abstentionReference: null }).abstention).toEqual(BY_SIZE);
    // a file without the key has none
    const plain = join(dir, "plain.gguf");
    await base().withCalibration({ abstention: BY_SIZE }).save(plain);
    expect((await Projections.load(plain)).abstentionReference).toBeNull();
  });

  it("refuses a malformed reference, naming what is wrong", () => {
    const bad: [unknown, RegExp][] = [
      [[], /must be an object/],
      ["x", /must be an object/],
      [{ ...REF, extra: 1 }, /unknown field "extra"/],
      [{ ...REF, prompts: [] }, /prompts must be a list of 1 to 1000/],
      [{ ...REF, prompts: "a" }, /prompts must be a list/],
      [{ ...REF, prompts: ["ok", "  "] }, /prompts\[1\] must be a non-blank string/],
      [{ ...REF, prompts: ["ok", 3] }, /prompts\[1\]/],
      [{ ...REF, prompts: ["x".repeat(4001)] }, /prompts\[0\]/],
      [{ ...REF, pass: 4 }, /pass must be an integer in \[0, 3\]/],
      [{ ...REF, pass: -1 }, /pass must be an integer/],
      [{ ...REF, pass: 1.5 }, /pass must be an integer/],
      [{ ...REF, pass: undefined }, /pass must be an integer/],
      [{ ...REF, below: 1 }, /below must be an integer in \[2, 2\^31\]/],
      [{ ...REF, below: Infinity }, /below must be an integer/],
    ];
    for (const [r, why] of bad) {
      expect(() => checkAbstentionReference(r), JSON.stringify(r)?.slice(0, 80)).toThrow(why);
      expect(() => base().withCalibration({ abstention: BY_SIZE, abstentionReference: r as AbstentionReference })).toThrow(why);
    }
    expect(checkAbstentionReference(null)).toBeNull();
    expect(checkAbstentionReference(undefined)).toBeNull();
    // a reference moves a model's cut: none without a model
    expect(() => base().withCalibration({ abstentionReference: REF })).toThrow(/needs an abstention model/);
  });

  it("refuses a damaged stored reference as a corrupt file", async () => {
    const path = join(dir, "bad.gguf");
    const p = base().withCalibration({ abstention: BY_SIZE });
    await writeProjectionsFile(path, { ...p.meta, wq: p.wq, ws: p.ws, abstentionReference: { ...REF, pass: 9 } });
    await expectCode(Projections.load(path), "CORRUPT_FILE", /gavel\.abstain\.reference\.json: .*pass must be an integer in \[0, 3\]/);
    // stored without a model
    const q = base();
    await writeProjectionsFile(path, { ...q.meta, wq: q.wq, ws: q.ws, abstentionReference: REF });
    await expectCode(Projections.load(path), "CORRUPT_FILE", /set without gavel\.abstain\.kind/);
  });
});

describe("a route's abstention with the library's cut", () => {
  it("abstains when the model does or the score reaches the cut, on the logistic band only (random inputs)", () => {
    const rnd = rng(seed);
    for (let i = 0; i < 2000; i++) {
      const score = rnd() < 0.05 ? NaN : (rnd() - 0.5) * 8;
      const modelSays = rnd() < 0.3;
      const d: AbstentionDecision = { abstain: modelSays, score, reason: "the model's reason" };
      const cut: LibraryCut | null = rnd() < 0.1 ? null : { cut: (rnd() - 0.5) * 8, pass: 3, prompts: 40, skills: 4 };
      const logN = Math.log(2 + Math.floor(rnd() * 300));
      const band = Math.exp(logN) < 125 ? "logistic" : "threshold";
      const got = applyLibraryCut(d, cut, BY_SIZE, logN);
      // the rule, read plainly
      const byCut = cut !== null && band === "logistic" && Number.isFinite(score) && score >= cut.cut;
      expect(got.abstain, `seed ${seed} (GAVEL_TEST_SEED replays it)`).toBe(modelSays || byCut);
      expect(got.score).toBe(d.score);
      if (!modelSays && byCut) expect(got.reason).toMatch(/^the model's reason; but this library's own cut, logit [−-]?\d+(\.\d+)? \(3 of the projections' 40 .* over these 4 skills\), is at or below/);
      else expect(got).toBe(d);
    }
    // no model: nothing to cut
    expect(applyLibraryCut({ abstain: false, score: 5, reason: "r" }, { cut: 0, pass: 0, prompts: 1, skills: 3 }, null, Math.log(3)).abstain).toBe(false);
  });
});

describe("measuring a library's cut", () => {
  /**
   * A stand-in for the router's parts: a library (in its own bank folder, or `bankDir`) whose state,
   * routable skills and their content a test sets.
   */
  function fakeParts(projections: Projections, skills: number, bankDir = mkdtempSync(join(dir, "bank-"))) {
    let version = 0;
    const library = {
      skills,
      content: "v0",
      dir: bankDir,
      changedSince: (s: LibraryState | undefined) => s === undefined || (s as unknown as { v: number }).v !== version,
      state: () => ({ v: version }) as unknown as LibraryState,
      routable: () => Int32Array.from({ length: library.skills }, (_, i) => i),
      idOf: (h: number) => `skill-${h}`,
      entry: (id: string) => ({ id, contentHash: `${id}:${library.content}` }),
      change: () => void (version++, (library.content = `v${version}`)),
    };
    return { parts: { projections, library, model: { path: "/models/m.gguf" } } as unknown as RouterParts, library };
  }

  it("is the (pass + 1)-th lowest prompt score, measured once per state of the library (random scores)", async () => {
    const rnd = rng(seed + 1);
    for (let trial = 0; trial < 50; trial++) {
      const n = 1 + Math.floor(rnd() * 40);
      const pass = Math.floor(rnd() * n);
      const prompts = Array.from({ length: n }, (_, i) => `prompt ${i}`);
      const p = base().withCalibration({ abstention: BY_SIZE, abstentionReference: { prompts, pass, below: 125 } });
      const { parts, library } = fakeParts(p, 3 + Math.floor(rnd() * 100));
      const scores = new Map(prompts.map((q) => [q, (rnd() - 0.5) * 10]));
      let calls = 0;
      const score = async (q: string) => (calls++, scores.get(q)!);
      const cut = await libraryCut(parts, score);
      const plain = [...scores.values()].sort((a, b) => a - b)[pass];
      expect(cut, `seed ${seed}`).toEqual({ cut: plain, pass, prompts: n, skills: library.skills });
      // at most `pass` prompts score under it
      expect([...scores.values()].filter((z) => z < cut!.cut).length).toBeLessThanOrEqual(pass);
      expect(calls).toBe(n);
      // the same state: kept, nothing routed again
      expect(await libraryCut(parts, score)).toEqual(cut);
      expect(calls).toBe(n);
      // a change: measured again
      library.change();
      for (const q of prompts) scores.set(q, (rnd() - 0.5) * 10);
      const again = await libraryCut(parts, score);
      expect(calls).toBe(2 * n);
      expect(again!.cut).toBe([...scores.values()].sort((a, b) => a - b)[pass]);
    }
  });

  it("applies only under `below` routable skills with a logistic band, and reads an unscored prompt as off-domain", async () => {
    const prompts = ["a", "b", "c"];
    const p = base().withCalibration({ abstention: BY_SIZE, abstentionReference: { prompts, pass: 1, below: 50 } });
    const scores: Record<string, number> = { a: 2, b: NaN, c: -1 };
    const score = async (q: string) => scores[q];
    // NaN (nothing shortlisted) sorts last: the second lowest of −1, 2, +∞ is 2
    expect((await libraryCut(fakeParts(p, 10).parts, score))?.cut).toBe(2);
    expect(await libraryCut(fakeParts(p, 50).parts, score)).toBeNull();
    expect(await libraryCut(fakeParts(p, 0).parts, score)).toBeNull();
    // a band that is not logistic (the large band from 125 skills, with below past it)
    const wide = base().withCalibration({ abstention: BY_SIZE, abstentionReference: { prompts, pass: 1, below: 1000 } });
    expect(await libraryCut(fakeParts(wide, 200).parts, score)).toBeNull();
    expect((await libraryCut(fakeParts(wide, 124).parts, score))?.cut).toBe(2);
    // no reference, or too few scored prompts: none
    expect(await libraryCut(fakeParts(base().withCalibration({ abstention: BY_SIZE }), 10).parts, score)).toBeNull();
    const allNaN = async () => NaN;
    expect(await libraryCut(fakeParts(p, 10).parts, allNaN)).toBeNull();
  });

  it("is kept in the bank folder for the next process over the same library, and never trusted when it does not match", async () => {
    const prompts = ["a", "b", "c", "d"];
    const p = base().withCalibration({ abstention: BY_SIZE, abstentionReference: { prompts, pass: 1, below: 125 } });
    let calls = 0;
    const scores: Record<string, number> = { a: 3, b: -2, c: 0.5, d: 1 };
    const score = async (q: string) => (calls++, scores[q]);
    const first = fakeParts(p, 7);
    const cut = await libraryCut(first.parts, score);
    expect(cut).toEqual({ cut: 0.5, pass: 1, prompts: 4, skills: 7 });
    expect(calls).toBe(4);
    const file = join(first.library.dir, LIBRARY_CUT_FILE);
    expect(existsSync(file)).toBe(true);
    // a bank's file: the owner's only
    if (process.platform !== "win32") expect(statSync(file).mode & 0o077).toBe(0);
    // a new process (new parts) over the same folder and library: read, nothing routed
    expect(await libraryCut(fakeParts(p, 7, first.library.dir).parts, score)).toEqual(cut);
    expect(calls).toBe(4);
    // another library in the folder (a skill's content changed), other projections or another model: measured
    const changed = fakeParts(p, 7, first.library.dir);
    changed.library.content = "edited";
    scores.c = 2;
    expect((await libraryCut(changed.parts, score))?.cut).toBe(1);
    expect(calls).toBe(8);
    const other = p.withCalibration({ abstentionReference: { prompts, pass: 2, below: 125 } });
    expect((await libraryCut(fakeParts(other, 7, first.library.dir).parts, score))?.cut).toBe(2);
    expect(calls).toBe(12);
    const moved = fakeParts(other, 7, first.library.dir);
    (moved.parts as unknown as { model: { path: string } }).model = { path: "/models/other.gguf" };
    await libraryCut(moved.parts, score);
    expect(calls).toBe(16);
    // a damaged file is measured over (and rewritten), never read
    const bytes = readFileSync(file);
    bytes[bytes.length - 40] ^= 0xff;
    writeFileSync(file, bytes);
    expect((await libraryCut(fakeParts(other, 7, first.library.dir).parts, score))?.cut).toBe(2);
    expect(calls).toBe(20);
    expect(await libraryCut(fakeParts(other, 7, first.library.dir).parts, score)).toMatchObject({ cut: 2 });
    expect(calls).toBe(20);
    // a folder it cannot write to: measured, not kept, no error
    const gone = fakeParts(p, 7, join(dir, "no-such-folder", "bank"));
    expect((await libraryCut(gone.parts, score))?.cut).toBe(1);
  });

  it("gives no route another's ABORTED: a waiting route measures again when the measuring one was aborted", async () => {
    const prompts = ["a", "b", "c"];
    const p = base().withCalibration({ abstention: BY_SIZE, abstentionReference: { prompts, pass: 0, below: 125 } });
    const { parts } = fakeParts(p, 5);
    const measuredBy: string[] = [];
    // a scorer that yields between prompts and stops with ABORTED once its route's signal aborts
    const scorer = (_p: RouterParts, _l: LexicalExpert, signal?: AbortSignal) => async (q: string) => {
      measuredBy.push((signal as AbortSignal & { who?: string })?.who ?? "?");
      await new Promise((r) => setTimeout(r, 5));
      if (signal?.aborted) throw new GavelError("the operation was aborted", "ABORTED");
      return { a: 2, b: 1, c: 3 }[q]!;
    };
    const a = new AbortController(), b = new AbortController();
    Object.assign(a.signal, { who: "a" });
    Object.assign(b.signal, { who: "b" });
    const first = routeCut(parts, {} as LexicalExpert, a.signal, scorer);
    const second = routeCut(parts, {} as LexicalExpert, b.signal, scorer);
    a.abort();
    await expectCode(first, "ABORTED");
    expect(await second).toEqual({ cut: 1, pass: 0, prompts: 3, skills: 5 });
    // a measured first, was aborted; b measured again, whole
    expect(measuredBy[0]).toBe("a");
    expect(measuredBy.filter((w) => w === "b")).toHaveLength(3);
    // an aborted route's own ABORTED is its own: it does not measure again
    const c = new AbortController();
    c.abort();
    const { parts: fresh } = fakeParts(p, 5);
    await expectCode(routeCut(fresh, {} as LexicalExpert, c.signal, scorer), "ABORTED");
  });

  it("measures again after a failed measurement", async () => {
    const p = base().withCalibration({ abstention: BY_SIZE, abstentionReference: REF });
    const { parts } = fakeParts(p, 5);
    let fail = true;
    const score = async () => {
      if (fail) throw new Error("the model went away");
      return 1;
    };
    await expect(libraryCut(parts, score)).rejects.toThrow(/went away/);
    fail = false;
    expect(await libraryCut(parts, score)).toEqual({ cut: 1, pass: 1, prompts: 4, skills: 5 });
  });
});
