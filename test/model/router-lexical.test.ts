// The lexical expert B inside the router (issue 13): B of each shortlisted skill against a plain
// reference (BM25 over the same texts, log softmax by the definition), β = 0 leaving the route as it
// was, β > 0 entering S, and the index following installs and uninstalls.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model, Projections, Router } from "../../src/index.js";
import { Bm25Index } from "../../src/lexical/bm25.js";
import { calibrate, evaluate } from "../../lab/eval/index.js";
import { logZAt } from "../../lab/eval/lexical-fit.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";
import { freshSeed } from "../helpers/random.js";

const skills = [
  { id: "pdf", name: "pdf", description: "Read and extract text and tables from PDF files.", body: "Use pdftotext on the report." },
  { id: "docker", name: "docker", description: "Write Dockerfiles and compose files.", body: "Start FROM a slim image." },
  { id: "sql", name: "sql", description: "Write and optimise SQL queries.", body: "Use EXPLAIN first on slow queries." },
  { id: "cat", name: "cat", description: "A story about a cat.", body: "Once upon a time there was a cat." },
];
const task = "Pull the revenue table out of report.pdf and load it with SQL queries";

/** B by the definition over `docs`, in float64 without shifts. */
function plainB(docs: typeof skills, T: number): Map<string, number> {
  const idx = new Bm25Index(docs);
  const s = Array.from(idx.scores(task));
  const z = Math.log(s.reduce((a, x) => a + Math.exp(x / T), 0));
  return new Map(idx.ids.map((id, i) => [id, s[i] / T - z]));
}

describe("Router's lexical expert on the tiny llama", () => {
  let model: Model;
  let projections: Projections;
  const seed = freshSeed();
  beforeAll(async () => {
    model = await Model.load(TINY_LLAMA_PATH, { contextSize: 1024, sequences: 8, threads: 1 });
    // Δ large: every skill is shortlisted, so every B is checked
    projections = (await Projections.random(model, { seed, dim: 64 })).withCalibration({ delta: 10, lexicalTemperature: 2 });
  });
  afterAll(async () => {
    await model?.dispose();
  });

  it("computes B like the plain reference, enters S only with β > 0, and follows the bank", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gavel-lex-"));
    let router = await Router.open(model, { projections, bankDir: dir, skillBudget: 128 });
    await router.install(skills);
    const plain = await router.route(task);
    expect(plain.shortlist.every((c) => c.B === undefined), `seed ${seed}`).toBe(true);
    const withB = await router.route(task, { lexical: true });
    expect(withB.timings.lexicalMs).toBeGreaterThanOrEqual(0);
    expect(plain.timings.lexicalMs).toBeUndefined();
    const ref = plainB(skills, 2);
    expect(withB.shortlist.length).toBe(skills.length);
    for (const c of withB.shortlist) expect(c.B!).toBeCloseTo(ref.get(c.skill)!, 10);
    // β = 0: S is exactly g + αL + γV (the second route's L, V differ from the first's only by the
    // KV cache's numeric noise, ~1e-8, so the two routes are compared to that)
    for (const c of withB.shortlist) expect(c.S).toBe(c.g + projections.alpha * c.L + projections.gamma * c.V);
    const S0 = new Map(plain.shortlist.map((c) => [c.skill, c.S]));
    for (const c of withB.shortlist) expect(c.S).toBeCloseTo(S0.get(c.skill)!, 5);

    // β large: B decides the first stage, whose Δ-shortlist then holds the best B alone, so the
    // verdict is skipped (it could change nothing) and S = g + βB; with the verdict forced over a
    // wider Δ, S = g + αL + γV + βB
    await router.close();
    const heavy = projections.withCalibration({ beta: 1000 });
    router = await Router.open(model, { projections: heavy, bankDir: dir, skillBudget: 128 });
    const ruled = await router.route(task);
    const best = [...ref].sort((a, b) => b[1] - a[1])[0][0];
    expect(ruled.skill).toBe(best);
    expect(ruled.shortlist.length).toBe(1);
    expect(ruled.verdict).toBe("skipped");
    expect(ruled.timings.verdictMs).toBe(0);
    expect(ruled.shortlist[0].L).toBeNaN();
    expect(ruled.shortlist[0].S).toBe(ruled.shortlist[0].g + 1000 * ruled.shortlist[0].B!);
    await router.close();
    const wide = projections.withCalibration({ beta: 1000, delta: 1e9 });
    router = await Router.open(model, { projections: wide, bankDir: dir, skillBudget: 128 });
    const judged = await router.route(task);
    expect(judged.verdict).toBe("ran");
    expect(judged.skill).toBe(best);
    expect(judged.shortlist.length).toBe(skills.length);
    for (const c of judged.shortlist) expect(c.S).toBeCloseTo(c.g + wide.alpha * c.L + wide.gamma * c.V + 1000 * c.B!, 6);
    expect((await router.route(task, { lexical: false })).shortlist.every((c) => c.B === undefined)).toBe(true);

    // the index follows an uninstall and an install
    await router.uninstall(best);
    const after = await router.route(task);
    const ref2 = plainB(skills.filter((s) => s.id !== best), 2);
    expect(after.shortlist.map((c) => c.skill)).not.toContain(best);
    for (const c of after.shortlist) expect(c.B!).toBeCloseTo(ref2.get(c.skill)!, 10);
    await router.install(skills.filter((s) => s.id === best));
    expect((await router.route(task)).skill).toBe(best);
    await router.close();
  });

  it("skips the verdict when asked or when it can change nothing, and abstains by the projections' model with its reason", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gavel-lex-abstain-"));
    let router = await Router.open(model, { projections, bankDir: dir, skillBudget: 128 });
    await router.install(skills);
    const full = await router.route(task);
    expect(full.verdict).toBe("ran");
    expect(full.abstained).toBe(false);
    expect(full.abstention).toBeUndefined(); // no model, abstain off by default
    // verdict off: the same first stage, L and V unknown, S = g (β = 0), no verdict time
    const off = await router.route(task, { verdict: false });
    expect(off.verdict).toBe("off");
    expect(off.timings.verdictMs).toBe(0);
    expect(off.shortlist.map((c) => c.skill).sort()).toEqual(full.shortlist.map((c) => c.skill).sort());
    for (const c of off.shortlist) {
      expect(c.L).toBeNaN();
      expect(c.S).toBe(c.g);
    }
    expect(off.skill).toBe(off.shortlist[0].skill);
    // a threshold model on B: B ≤ 0 always (a log posterior), so a threshold of 0 abstains on any
    // task and one of −1e9 never does; B is computed because the model reads it, and V is not needed
    await router.close();
    const marginCap = 1;
    const always = projections.withCalibration({ abstention: { kind: "threshold", feature: "B", threshold: 0, marginCap } });
    router = await Router.open(model, { projections: always, bankDir: dir, skillBudget: 128 });
    const declined = await router.route(task);
    expect(declined.abstained).toBe(true);
    expect(declined.skill).toBeNull();
    expect(declined.abstention!.reason).toMatch(/B of the winner .* is below the calibrated 0/);
    expect(declined.shortlist[0].B).toBeLessThan(0);
    expect(declined.timings.lexicalMs).toBeGreaterThanOrEqual(0);
    expect((await router.route(task, { abstain: false })).abstained).toBe(false);
    await router.close();
    const never = projections.withCalibration({ abstention: { kind: "threshold", feature: "B", threshold: -1e9, marginCap } });
    router = await Router.open(model, { projections: never, bankDir: dir, skillBudget: 128 });
    const kept = await router.route(task);
    expect(kept.abstained).toBe(false);
    expect(kept.skill).toBe(kept.shortlist[0].skill);
    expect(kept.abstention!.reason).toMatch(/at or above/);
    await router.close();
  });

  it("gavel eval's records carry the lexical read-outs, and calibrate reads them", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gavel-lex-eval-"));
    const router = await Router.open(model, { projections, bankDir: dir, skillBudget: 128 });
    await router.install(skills);
    const tasks = [
      { id: "t1", text: task, gold_skill_ids: ["pdf"] },
      { id: "t2", text: "Write a Dockerfile and a compose file for the api", gold_skill_ids: ["docker"] },
    ];
    const { perQuery } = await evaluate({ router, tasks, library: skills, methods: ["bm25", "glance", "ruling"], pool: projections.maxShortlist });
    const idx = new Bm25Index(skills);
    for (const [r, t] of perQuery.map((r, i) => [r, tasks[i]] as const)) {
      const sc = Array.from(idx.scores(t.text));
      const s = new Map(idx.ids.map((id, i) => [id, sc[i]]));
      expect(r.lexical!.top[0].skill).toBe(r.bm25![0]);
      for (const c of [...r.glance!, ...r.verdict!]) expect(c.s!).toBeCloseTo(s.get(c.skill)!, 4);
      const z = Math.log(sc.reduce((a, x) => a + Math.exp(x / 4), 0));
      expect(logZAt(r.lexical!, 4)).toBeCloseTo(z, 4);
      expect(r.lexical!.gold).toBeCloseTo(s.get(t.gold_skill_ids[0])!, 4);
    }
    const fit = calibrate(perQuery, { maxShortlist: projections.maxShortlist });
    expect(fit.withoutLexicalHitAt1).toBeDefined();
    expect(fit.lexicalTemperature).toBeGreaterThan(0);
    await router.close();
  });
});
