// The whole loop a user with their own model runs, through the CLI on stories260K:
// layer → train → install → eval (validation) → calibrate → eval (test), and the router loads the result.
import { describe, expect, it } from "vitest";
import { runNode } from "../helpers/run.js";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model, Projections, Router } from "../../src/index.js";
import { repoRoot, sharedDir, storiesPath, needsShared, SHARED } from "../helpers/paths.js";

const NO_SHARED = needsShared("stories260K, SWE-Skills-Bench and the MIT skills library for layer, train, calibrate, eval", SHARED.stories, SHARED.benchTasks, SHARED.benchSkills, SHARED.mit);

const cli = join(repoRoot, "dist", "cli", "gavel.js");
const benchTasks = join(sharedDir, "data", "swe-skills-bench", "tasks.jsonl");
const benchSkills = join(sharedDir, "data", "swe-skills-bench", "skills.jsonl");
const mit = join(sharedDir, "data", "skills-mit.jsonl.gz");

/** One line of a `gavel eval --per-query` file, the fields this test reads. */
interface TaskRecord {
  id: string;
  accepted: string[];
  bm25?: string[];
  glance?: { skill: string; g: number }[];
  verdict?: { skill: string; g: number; L: number; V: number; s?: number }[];
  chosen?: { ruling?: string | null; rulingNoB?: string | null; gL?: string | null; gV?: string | null };
  firstStage?: string[];
  lexical?: { logZ: [number, number][] };
}

/** The ruling written out independently of src/: shortlist by Δ on g + βB (glance order on ties), then the best S = g + βB + αL + γV (first on a tie). */
function replayRuling(t: TaskRecord, p: { alpha: number; gamma: number; delta: number; maxShortlist: number; beta: number; lexicalTemperature: number }): string | null {
  // with β > 0: B = s/T − log Z(T) from the record, the first stage g + βB orders and shortlists
  const logZ = p.beta > 0 ? t.lexical!.logZ.find(([T]) => Math.abs(T - p.lexicalTemperature) < 1e-9 * T)![1] : 0;
  const F = (c: NonNullable<TaskRecord["verdict"]>[number]) => c.g + (p.beta > 0 ? p.beta * ((c.s ?? 0) / p.lexicalTemperature - logZ) : 0);
  const order = t.verdict!.map((c, i) => ({ c, i, f: F(c) })).sort((a, b) => b.f - a.f || a.i - b.i);
  const pool = order.filter((x) => x.f >= order[0].f - p.delta).slice(0, p.maxShortlist).map((x) => x.c);
  let best: { skill: string; S: number } | null = null;
  for (const c of pool) {
    const S = F(c) + p.alpha * c.L + p.gamma * c.V;
    if (best === null || S > best.S) best = { skill: c.skill, S };
  }
  return best?.skill ?? null;
}

async function gavel(...args: string[]): Promise<string> {
  const res = await runNode([cli, ...args]);
  if (res.code !== 0) throw new Error(`gavel ${args[0]} exited ${res.code}\n${res.err}\n${res.out}`);
  return res.out;
}

describe.skipIf(NO_SHARED)("layer → train → calibrate → eval", () => {
  it("runs end to end on stories260K and produces projections the Router loads", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gavel-loop-"));
    const proj = join(dir, "proj.gguf");
    const bank = join(dir, "bank");
    const common = ["--model", storiesPath, "--threads", "1"];
    const routerArgs = [...common, "--projections", proj, "--bank", bank, "--context", "1024", "--skill-budget", "160"];

    await gavel("layer", benchSkills, ...common, "--sample", "16", "--max-tokens", "96", "--out", join(dir, "layer.json"));
    const layer = JSON.parse(readFileSync(join(dir, "layer.json"), "utf8")) as { layer: number; curve: number[] };
    expect(layer.curve).toHaveLength(5);

    await gavel("train", ...common, "--library", mit, "--limit", "60", "--self-supervised", "--out", proj, "--layer-file", join(dir, "layer.json"), "--dim", "32", "--steps", "20", "--context", "512");
    expect(existsSync(proj)).toBe(true);
    const trained = await Projections.load(proj);
    expect(trained.layer).toBe(layer.layer);

    const inst = await gavel("install", benchSkills, ...routerArgs);
    expect(inst).toMatch(/installed 49/);

    await gavel("eval", "--tasks", benchTasks, "--library", benchSkills, "--batches", "1-5", "--limit", "4", "--pool", "20", "--per-query", join(dir, "val.jsonl"), ...routerArgs);
    const cal = await gavel("calibrate", "--per-query", join(dir, "val.jsonl"), "--projections", proj, "--write", "--json");
    const fitted = JSON.parse(cal) as { alpha: number; gamma: number; delta: number };
    const calibrated = await Projections.load(proj);
    expect(calibrated.alpha).toBeCloseTo(fitted.alpha, 10);
    expect(calibrated.delta).toBeCloseTo(fitted.delta, 10);

    const testRecords = join(dir, "test.jsonl");
    const table = JSON.parse(await gavel("eval", "--tasks", benchTasks, "--library", benchSkills, "--batches", "6-10", "--limit", "4", "--pool", "20", "--per-query", testRecords, "--json", ...routerArgs));
    const rows = (Array.isArray(table) ? table : table.table) as { method: string; hitAt1: number; recallAt20: number; n: number }[];
    expect(rows.map((r) => r.method).sort()).toEqual(["bm25", "gB", "gL", "gV", "glance", "ruling", "rulingNoB"].sort());
    // Each Hit@1 is what the per-task records say: the share of the 4 tasks whose committed skill is accepted.
    const records = readFileSync(testRecords, "utf8").trim().split("\n").map((l) => JSON.parse(l) as TaskRecord);
    expect(records).toHaveLength(4);
    for (const r of rows) {
      const hits = records.filter((t) => {
        const first = r.method === "bm25" ? t.bm25?.[0] : r.method === "glance" ? t.glance?.[0]?.skill : r.method === "gB" ? t.firstStage?.[0] : t.chosen?.[r.method as "ruling" | "rulingNoB" | "gL" | "gV"];
        return first != null && t.accepted.includes(first);
      }).length;
      expect(r.n, r.method).toBe(4);
      expect(r.hitAt1, r.method).toBeCloseTo(hits / 4, 12);
    }
    // And each record's ruling is the ruling replayed here from its verdict read-outs with the
    // calibrated α, γ, Δ: the first by S = g + αL + γV among the g within Δ of the best.
    for (const t of records) {
      expect(t.verdict?.length, t.id).toBeGreaterThan(0);
      expect(t.chosen?.ruling, t.id).toBe(replayRuling(t, calibrated));
      expect(t.chosen?.rulingNoB, t.id).toBe(replayRuling(t, { ...calibrated, beta: 0 }));
    }

    // the calibrated projections still open the bank built before calibration, and route
    const model = await Model.load(storiesPath, { contextSize: 1024, sequences: 16, threads: 1 });
    const router = await Router.open(model, { projections: proj, bankDir: bank, skillBudget: 160 });
    const res = await router.route("Add a CI workflow that runs the unit tests");
    expect(res.skill).not.toBeNull();
    await router.close();
    await model.dispose();
  }, 900_000);
});
