// gavel eval follows the route's own shortlist by default: over examples/skills with the embedded
// default pair, eval's ruling for each of a few demo tasks is router.route(task)'s winner (and its
// abstention), and the verdict reads only the skills the route shortlisted (counted at the model's
// scoring call). The wide pool stays behind `pool: N`, and each record says which pool made it.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model, Projections, Router, type Skill } from "../../src/index.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { calibrate, evaluate, loadLibrary, type EvalTask, type PerQueryRecord } from "../../lab/eval/index.js";
import { routeSummary } from "../../lab/cli/eval.js";
import { repoRoot } from "../helpers/paths.js";

const demo = JSON.parse(readFileSync(join(repoRoot, "examples", "demo-tasks.json"), "utf8")) as { task: string; expected: string | null }[];
// four in-domain tasks and the first off-domain prompt
const picked = [...demo.filter((t) => t.expected !== null).slice(0, 4), demo.find((t) => t.expected === null)!];
const tasks: EvalTask[] = picked.map((t, i) => ({ id: `demo-${i}`, text: t.task, gold_skill_ids: t.expected ? [t.expected] : [], ...(t.expected ? {} : { off_domain: true }) }));

describe("gavel eval over examples/skills with the default pair", () => {
  let model: Model;
  let bankDir: string;
  let library: Skill[];
  let projections: Projections;
  // skills the verdict read, counted where every verdict pass goes through (Model.scoreMany)
  let passes = 0;

  beforeAll(async () => {
    // the model's exact settings (f32 KV, no flash attention, a KV stream per sequence), under which a
    // verdict pass scored again gives the same L and V whatever else the cache holds
    model = await Model.load(DEFAULT_MODEL, { contextSize: 4096, threads: 1 });
    const scoreMany = model.scoreMany.bind(model);
    vi.spyOn(model, "scoreMany").mockImplementation((prefixes, continuation, options) => {
      passes += prefixes.length;
      return scoreMany(prefixes, continuation, options);
    });
    projections = await Projections.load(DEFAULT_PROJECTIONS);
    bankDir = mkdtempSync(join(tmpdir(), "gavel-eval-route-"));
    const router = await Router.open(model, { projections, bankDir, skillBudget: 1024 });
    try {
      expect((await router.install(join(repoRoot, "examples", "skills"))).failed).toEqual([]);
    } finally {
      await router.close();
    }
    library = (await loadLibrary([join(repoRoot, "examples", "skills")])).skills;
  });

  afterAll(async () => {
    await model?.dispose();
    if (bankDir) rmSync(bankDir, { recursive: true, force: true });
  });

  /** Routes each task again and checks that its record is that route's: winner, abstention, shortlist, verdict. */
  async function expectRouteRecords(router: Router, perQuery: PerQueryRecord[]): Promise<void> {
    expect(perQuery.map((r) => r.id)).toEqual(tasks.map((t) => t.id));
    for (const rec of perQuery) {
      const task = tasks.find((t) => t.id === rec.id)!;
      const routed = await router.route(task.text);
      expect(rec.pool).toBe("route");
      expect(rec.route!.shortlist).toEqual(routed.shortlist.map((c) => c.skill));
      expect(rec.route!.abstained, task.text).toBe(routed.abstained);
      expect(rec.route!.verdict).toBe(routed.verdict);
      // the ruling is the route's winner; when the route did not decline, the skill it loads
      expect(rec.chosen!.ruling).toBe(routed.shortlist[0]?.skill ?? null);
      if (!routed.abstained) expect(rec.chosen!.ruling).toBe(routed.skill);
      // the verdict's read-outs: exactly the shortlisted skills when it ran, none when it was skipped
      const judged = routed.verdict === "ran" ? routed.shortlist.map((c) => c.skill).sort() : [];
      expect(rec.verdict!.map((v) => v.skill).sort()).toEqual(judged);
      for (const v of rec.verdict!) {
        const c = routed.shortlist.find((s) => s.skill === v.skill)!;
        expect(v.g).toBe(c.g);
        expect(v.L).toBeCloseTo(c.L, 4);
        expect(v.V).toBeCloseTo(c.V, 4);
      }
      expect(rec.glance).toHaveLength(20);
    }
  }

  it("by default rules as router.route does, reading the verdict only for the shortlisted skills", async () => {
    const router = await Router.open(model, { projections, bankDir });
    try {
      passes = 0;
      const res = await evaluate({ router, tasks, library });
      const counted = passes;
      expect(res.perQuery.find((r) => r.offDomain)).toBeDefined(); // the off-domain prompt is kept, for abstention
      expect(counted).toBe(res.perQuery.reduce((n, r) => n + r.verdict!.length, 0));
      expect(counted).toBeLessThan(tasks.length * projections.maxShortlist);
      await expectRouteRecords(router, res.perQuery);
      const declined = res.perQuery.filter((r) => r.route!.abstained).length;
      const ran = res.perQuery.filter((r) => r.route!.verdict === "ran").length;
      expect(routeSummary(res.perQuery)).toMatch(new RegExp(`^route's own shortlist: ${tasks.length} tasks, declined ${declined}; the verdict ran on ${ran} \\(${counted} skills in all\\); route p50 \\d+ ms$`));
      // records of the route's shortlist hold nothing to fit Δ over
      expect(() => calibrate(res.perQuery)).toThrow(/route's own shortlist.*--pool/);
    } finally {
      await router.close();
    }
  }, 900_000);

  it("follows the glance's pool too (gavel.shortlist_glance), where the verdict reads several skills", async () => {
    // the same pair with the glance's best 3 joining the verdict's pool (the bank stays valid: the maps
    // are the same); without the re-ranker, whose own pool replaces the ruling's shortlist, and without
    // the library's own cut, whose one measurement (the reference prompts routed once, each with its
    // verdict here) would add passes no task's shortlist accounts for (test/model/library-cut.test.ts)
    const wider = projections.withCalibration({ shortlistGlance: 3, rerank: null, abstentionReference: null });
    expect(wider.abstention).toEqual(projections.abstention);
    const router = await Router.open(model, { projections: wider, bankDir });
    try {
      passes = 0;
      const res = await evaluate({ router, tasks, library, methods: ["glance", "ruling", "gL", "gV"] });
      const counted = passes;
      expect(res.perQuery.every((r) => r.route!.verdict === "ran" && r.route!.shortlist.length >= 3)).toBe(true);
      expect(counted).toBe(res.perQuery.reduce((n, r) => n + r.route!.shortlist.length, 0));
      expect(counted).toBeLessThan(tasks.length * wider.maxShortlist);
      await expectRouteRecords(router, res.perQuery);
    } finally {
      await router.close();
    }
  }, 900_000);

  it("keeps the wide pool behind pool: N (N verdicts a task, whatever Δ), and says so in each record", async () => {
    const router = await Router.open(model, { projections, bankDir });
    try {
      passes = 0;
      const res = await evaluate({ router, tasks: tasks.slice(0, 2), library, methods: ["glance", "ruling"], pool: 6 });
      expect(passes).toBe(2 * 6);
      for (const rec of res.perQuery) {
        expect(rec.pool).toBe(6);
        expect(rec.route).toBeUndefined();
        expect(rec.verdict!.map((v) => v.skill)).toEqual(rec.glance!.slice(0, 6).map((h) => h.skill));
      }
      // a record of one pool is not reused by a run over the other
      passes = 0;
      const again = await evaluate({ router, tasks: tasks.slice(0, 2), library, methods: ["glance", "ruling"], previous: res.perQuery });
      expect(again.perQuery.every((r) => r.pool === "route")).toBe(true);
      const kept = await evaluate({ router, tasks: tasks.slice(0, 2), library, methods: ["glance", "ruling"], pool: 6, previous: res.perQuery });
      expect(kept.perQuery).toEqual(res.perQuery);
      await expect(evaluate({ router, tasks, library, lexicalPool: 5 })).rejects.toThrow(/give pool/);
    } finally {
      await router.close();
    }
  }, 900_000);
});
