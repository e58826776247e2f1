// A small library's own abstention cut, through the router with the embedded pair: the cut a route
// applies is the (pass + 1)-th lowest score of the reference prompts routed over the library with the
// cut off (a plain computation beside the router's own), a route abstains exactly when the model does
// or its score reaches that cut (by default; GAVEL_LIBRARY_CUT=off turns it off), the cut is measured
// again after an install changes the library, and none applies from `below` skills on, with
// `libraryCut: false`, or to a route that scores otherwise (B off).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cpSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Projections, Router, type RouteResult } from "../../src/index.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { repoRoot } from "../helpers/paths.js";
import { suiteModel } from "../helpers/model-suite.js";
import { withEnv } from "../helpers/env.js";
import { expectCode } from "../helpers/gavel-error.js";

const lines = (f: string) => readFileSync(join(repoRoot, f), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as { text: string; batch: string; gold_skill_ids: string[] });
// the hand-written off-domain prompts of batches 1-5 as the reference; those of 6-7, and requests, as tasks
const offDomain = lines("bench/data/off-domain-prompts.jsonl");
const reference = offDomain.filter((p) => Number(p.batch.slice(5)) <= 5).map((p) => p.text);
const SKILLS = ["git-history", "pdf-extract", "python-packaging", "regex-patterns"];
const requests = lines("bench/data/short-requests-examples.jsonl").filter((r) => r.gold_skill_ids.some((g) => SKILLS.includes(g) || g === "dockerfile"));
const tasks = [...requests.map((r) => r.text), ...offDomain.filter((p) => p.batch === "offhw6" || p.batch === "offhw7").map((p) => p.text)];

describe("a small library's own abstention cut", () => {
  const model = suiteModel(DEFAULT_MODEL, { contextSize: 2048, threads: 2 });
  let dir: string;
  let projections: Projections;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "gavel-library-cut-"));
    for (const s of [...SKILLS, "dockerfile"]) cpSync(join(repoRoot, "examples", "skills", s), join(dir, "skills", s), { recursive: true });
    const shipped = await Projections.load(DEFAULT_PROJECTIONS);
    projections = shipped.withCalibration({ abstentionReference: { prompts: reference, pass: 0, below: 125 } });
    expect(reference.length).toBeGreaterThan(4);
    expect(requests.length).toBeGreaterThan(4);
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The cut computed plainly: each reference prompt routed with the cut off, the (pass + 1)-th lowest score. */
  async function plainCut(router: Router, pass: number): Promise<number> {
    const scores: number[] = [];
    for (const p of reference) {
      const r = await router.route(p, { libraryCut: false });
      scores.push(r.abstention && Number.isFinite(r.abstention.score) ? r.abstention.score : Infinity);
    }
    return scores.sort((a, b) => a - b)[pass];
  }

  /** Routes every task with the cut on and off and checks the rule against `cut` (null: no cut applies). */
  async function checkRoutes(router: Router, cut: number | null): Promise<{ byCut: number }> {
    let byCut = 0;
    for (const t of tasks) {
      const off: RouteResult = await router.route(t, { libraryCut: false });
      const on: RouteResult = await router.route(t);
      expect(on.abstention?.score).toBe(off.abstention?.score);
      const score = off.abstention?.score ?? -Infinity;
      // the router decodes the reference prompts' passes together (equal to single passes within
      // 1e-4 in the queries: test/model/encode-tasks-many.test.ts), so a score this close to the
      // plain cut may fall on either side of the router's
      if (cut !== null && !off.abstained && Math.abs(score - cut) < 1e-3) continue;
      const expected = off.abstained || (cut !== null && score >= cut);
      expect(on.abstained, `${t}: score ${off.abstention?.score}, cut ${cut}`).toBe(expected);
      if (on.abstained && !off.abstained) {
        byCut++;
        expect(on.abstention!.reason).toMatch(/this library's own cut/);
        expect(on.skill).toBeNull();
        expect(on.load).toBeNull();
      } else {
        expect(on.skill).toBe(off.skill);
      }
    }
    return { byCut };
  }

  it("abstains at the cut the reference prompts set, and measures it again after an install", async () => {
    const router = await Router.open(model(), { projections, bankDir: join(dir, "bank") });
    try {
      for (const s of SKILLS) expect((await router.install(join(dir, "skills", s))).failed).toEqual([]);
      const cut4 = await plainCut(router, 0);
      expect(Number.isFinite(cut4)).toBe(true);
      const first = await checkRoutes(router, cut4);
      // GAVEL_LIBRARY_CUT=off: the default becomes the model's cut alone; the option still wins
      await withEnv({ GAVEL_LIBRARY_CUT: "off" }, async () => {
        for (const t of tasks.slice(0, 12)) {
          const plain = await router.route(t, { libraryCut: false });
          expect((await router.route(t)).abstained).toBe(plain.abstained);
          expect((await router.route(t, { libraryCut: true })).abstained).toBe(plain.abstained || (plain.abstention?.score ?? -Infinity) >= cut4);
        }
      });
      await expectCode(withEnv({ GAVEL_LIBRARY_CUT: "maybe" }, () => router.route(tasks[0])), "INVALID_ARGUMENT", /GAVEL_LIBRARY_CUT/);
      // a route that scores otherwise than the cut was measured (B off) applies the model's cut alone
      for (const t of tasks.slice(0, 8)) {
        const plain = await router.route(t, { lexical: false, libraryCut: false });
        const own = await router.route(t, { lexical: false });
        expect([own.abstained, own.abstention?.reason]).toEqual([plain.abstained, plain.abstention?.reason]);
      }
      // an install changes the library: the cut is measured again (a stale one would disagree with the plain one)
      expect((await router.install(join(dir, "skills", "dockerfile"))).failed).toEqual([]);
      const cut5 = await plainCut(router, 0);
      expect(cut5).not.toBe(cut4);
      const second = await checkRoutes(router, cut5);
      // the cut is not idle over these prompts: it declines something the model alone lets through
      expect(first.byCut + second.byCut).toBeGreaterThan(0);
    } finally {
      await router.close();
    }
    // ~300 routes of gavel-mini: 60-145 s with another suite beside it, more on a busier machine
  }, 600_000);

  it("is what the shipped projections carry: the 120 hand-written prompts of batches 1-5 and offref, at most 8 through, under the small band's edge", async () => {
    const shipped = await Projections.load(DEFAULT_PROJECTIONS);
    const ref = shipped.abstentionReference;
    expect(ref, "models/gavel-mini.projections.gguf carries no abstention reference (scripts/select/write-abstention-reference.ts)").not.toBeNull();
    const more = lines("bench/data/off-domain-reference-prompts.jsonl");
    expect(more.every((p) => p.batch === "offref")).toBe(true);
    expect(ref!.prompts).toEqual([...reference, ...more.map((p) => p.text)]);
    expect(ref!.prompts).toHaveLength(120);
    // the largest pass whose realised off-domain rate over a library, Beta(pass + 1, n − pass) over
    // draws of the prompts, exceeds 10% with probability at most 0.2: P(Binomial(n, 0.1) ≤ pass)
    const n = ref!.prompts.length;
    const over10 = (k: number) => { let s = 0; for (let i = 0; i <= k; i++) s += binomial(n, i) * 0.1 ** i * 0.9 ** (n - i); return s; };
    expect(ref!.pass).toBe(8);
    expect(over10(ref!.pass)).toBeLessThanOrEqual(0.2);
    expect(over10(ref!.pass + 1)).toBeGreaterThan(0.2);
    expect(shipped.abstention?.kind).toBe("bySize");
    expect(ref!.below).toBe(shipped.abstention?.kind === "bySize" ? shipped.abstention.from : NaN);
  });

  it("applies no cut from `below` skills on", async () => {
    const router = await Router.open(model(), { projections: projections.withCalibration({ abstentionReference: { prompts: reference, pass: 0, below: 4 } }), bankDir: join(dir, "bank-below") });
    try {
      for (const s of SKILLS) await router.install(join(dir, "skills", s));
      await checkRoutes(router, null);
    } finally {
      await router.close();
    }
  });
});

/** n choose k, as a float. */
function binomial(n: number, k: number): number {
  let c = 1;
  for (let i = 0; i < k; i++) c = (c * (n - i)) / (i + 1);
  return c;
}
