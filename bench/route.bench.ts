/**
 * The warm default route on this CPU: `Router.route(task)` with everything a new user gets (the
 * embedded gavel-mini pair, its shipped constants: first stage g + βB, Δ-shortlist, verdict when the
 * shortlist holds more than one skill, the abstention model), timed per call after warm-ups.
 *
 *   npm run bench -- route [runs] [--library N] [--tasks N] [--glance-only] [--shortlist 1,2,4,8,16]
 *
 * Each run times the exact glance (GAVEL_GLANCE_INDEX=off), then `auto` (the glance index from 8,192
 * routable skills: the same as off below that).
 *
 * - Default: examples/skills (24 skills) installed for real; tasks: the demo's and the everyday
 *   requests (examples/*.json), each routed `runs` times (default 10).
 * - `--library N`: the first N routable skills of the benchmark library (../shared/data: the
 *   SWE-Skills-Bench golds, then the public skills), their texts real (the lexical expert and the
 *   verdict read them) but their keys random unit vectors at the shipped projections' dim, as many per
 *   skill as the 24 real skills keep on average: installing 30K skills for real takes hours on this
 *   CPU (docs/BENCHMARKS.md, "Install"), and the glance's cost depends on the keys' count and dim,
 *   not their values. The tasks are SWE-Skills-Bench's test statements (batches 6-10). Since random
 *   keys make g uninformative, the shortlist (and so how often the verdict runs) is whatever the
 *   shipped Δ leaves; the report says how often the verdict ran.
 * - `--shortlist LIST`: the route's time as a function of the verdict's shortlist size instead: for
 *   each n of LIST the same bank is routed under the shipped projections with Δ opened wide (10^6) and
 *   maxShortlist n, so every route's shortlist holds exactly n skills (the first stage's best n by
 *   g + βB; fewer only when the library is smaller). The verdict then runs on n skills for n ≥ 2; at
 *   n = 1 it is skipped as in the default route (the abstention model reads no V). Everything else is
 *   the default route (the exact glance below 8,192 skills, B, the ruling, abstention).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Library } from "../src/bank/library.js";
import { defaultModelPaths } from "../src/defaults.js";
import { Model } from "../src/model/Model.js";
import { Projections } from "../src/projections/projections.js";
import { Router } from "../src/route/Router.js";
import { resetConfig } from "../src/config.js";
import { loadLibrary } from "../lab/eval/io.js";
import { loadTasks, selectTasks } from "../lab/eval/tasks.js";
import { unitRows } from "./data.js";

const root = resolve(".");
const argv = process.argv.slice(2);
const li = argv.indexOf("--library");
const libraryN = li >= 0 ? Number(argv.splice(li, 2)[1]) : 0;
const ti = argv.indexOf("--tasks");
const taskLimit = ti >= 0 ? Number(argv.splice(ti, 2)[1]) : Infinity;
// --glance-only: route(task, { verdict: false }), the hook's default path
const gi = argv.indexOf("--glance-only");
const glanceOnly = gi >= 0 ? (argv.splice(gi, 1), true) : false;
// --shortlist 1,2,4,8,16: the route's time per forced shortlist size
const si = argv.indexOf("--shortlist");
const shortlistSizes = si >= 0 ? argv.splice(si, 2)[1].split(",").map(Number) : [];
if (shortlistSizes.some((n) => !Number.isInteger(n) || n < 1)) throw new Error("--shortlist takes positive integers, e.g. 1,2,4,8,16");
const runs = Number(argv[0] ?? 10);

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

async function main() {
  const { model: modelPath, projections } = defaultModelPaths();
  const model = await Model.load(modelPath, { contextSize: 4096 });
  const dirs: string[] = [];
  const tmp = () => { const d = mkdtempSync(join(tmpdir(), "gavel-route-bench-")); dirs.push(d); return d; };
  try {
    // the 24 real skills: also what the synthetic bank's keys per skill copy
    const small = await Router.open(model, { projections, bankDir: tmp() });
    await small.install(join(root, "examples", "skills"));
    const st = small.stats() as { skills?: number; keys?: number };
    const keysPerSkill = Math.max(1, Math.round((st.keys ?? 0) / Math.max(1, st.skills ?? 1)));
    let router = small;
    let bankDir = dirs[0];
    let tasks: string[];
    if (!libraryN) {
      tasks = ["demo-tasks.json", "everyday-tasks.json"].flatMap((f) => (JSON.parse(readFileSync(join(root, "examples", f), "utf8")) as { task: string }[]).map((t) => t.task));
    } else {
      await small.close();
      const shared = join(root, "..", "shared", "data");
      const { skills } = await loadLibrary([join(shared, "swe-skills-bench", "skills.jsonl"), join(shared, "skills-mit.jsonl.gz")]);
      const chosen = skills.filter((s) => !s.disableModelInvocation).slice(0, libraryN);
      const proj = await Projections.load(projections);
      const dir = tmp();
      const lib = await Library.open(dir, proj, { create: true });
      const dim = proj.dim;
      const t0 = performance.now();
      for (let i = 0; i < chosen.length; i++) {
        const s = chosen[i];
        const keys = unitRows(keysPerSkill, dim, i + 1);
        await lib.save(s, { keyTokens: Array.from({ length: keysPerSkill }, () => 1), keyPositions: Array.from({ length: keysPerSkill }, (_, j) => j), renderTokens: 64, renderCut: { descriptionChars: s.description.length, bodyChars: (s.body ?? "").length } }, keys);
        if ((i + 1) % 5000 === 0) { await lib.commit(); console.log(`  ${i + 1} skills staged (${((performance.now() - t0) / 1000).toFixed(0)} s)`); }
      }
      await lib.commit();
      await lib.close();
      router = await Router.open(model, { projections, bankDir: dir });
      bankDir = dir;
      tasks = selectTasks(await loadTasks(join(shared, "swe-skills-bench", "tasks.jsonl")), { batches: "6-10" }).map((t) => t.text);
    }
    const stats = router.stats() as { skills?: number; keys?: number };
    tasks = tasks.slice(0, taskLimit);
    console.log(`route bench: ${stats.skills} skills, ${stats.keys} keys (${libraryN ? `random, ${keysPerSkill} a skill` : "installed"}), dim ${(await Projections.load(projections)).dim}, ${tasks.length} tasks × ${runs}, ${cpus().length} cores (${cpus()[0]?.model}), node ${process.version}, ${new Date().toISOString().slice(0, 10)}`);
    if (shortlistSizes.length) {
      await router.close();
      await byShortlistSize(model, projections, bankDir, tasks);
      return;
    }
    // the exact glance, then the glance index where the library is large enough for `auto` to use it
    for (const mode of ["off", "auto"] as const) {
      process.env.GAVEL_GLANCE_INDEX = mode;
      resetConfig();
      const t0 = performance.now();
      for (const t of tasks.slice(0, 3)) await router.route(t); // warm-up: lexicon laid out, graph built, index opened
      const warm = performance.now() - t0;
      const ms: number[] = [];
      let verdicts = 0, abstained = 0;
      for (let r = 0; r < runs; r++) {
        for (const t of tasks) {
          const t1 = performance.now();
          const res = await router.route(t, glanceOnly ? { verdict: false } : {});
          ms.push(performance.now() - t1);
          if (res.verdict === "ran") verdicts++;
          if (res.abstained) abstained++;
        }
      }
      console.log(`  GAVEL_GLANCE_INDEX=${mode.padEnd(4)} warm ${glanceOnly ? "glance-only" : "default"} route   p50 ${pct(ms, 50).toFixed(1)} ms   p95 ${pct(ms, 95).toFixed(1)} ms   (n = ${ms.length}; verdict ran ${verdicts}, declined ${abstained}; warm-up ${(warm / 1000).toFixed(1)} s)`);
    }
    await router.close();
  } finally {
    await model.dispose();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}
/** The route's time at each forced shortlist size (`--shortlist`): Δ 10^6, maxShortlist n. */
async function byShortlistSize(model: Model, projectionsPath: string, bankDir: string, tasks: string[]): Promise<void> {
  const shipped = await Projections.load(projectionsPath);
  console.log(`  shipped: Δ ${shipped.delta}, maxShortlist ${shipped.maxShortlist}, shortlist_glance ${shipped.shortlistGlance}, shortlist_lexical ${shipped.shortlistLexical}, β ${shipped.beta}; forced: Δ 1e6, maxShortlist n`);
  console.log("  n    p50 ms     p95 ms   verdict p50 ms   mean shortlist   verdict ran   declined   routes");
  for (const n of shortlistSizes) {
    const router = await Router.open(model, { projections: shipped.withCalibration({ delta: 1e6, maxShortlist: n }), bankDir });
    try {
      await router.route(tasks[0]); // warm-up: the graph at this shortlist size
      const ms: number[] = [];
      const verdictMs: number[] = [];
      let sizes = 0, verdicts = 0, abstained = 0;
      for (let r = 0; r < runs; r++) {
        for (const t of tasks) {
          const t1 = performance.now();
          const res = await router.route(t);
          ms.push(performance.now() - t1);
          verdictMs.push(res.timings.verdictMs);
          sizes += res.shortlist.length;
          if (res.verdict === "ran") verdicts++;
          if (res.abstained) abstained++;
        }
      }
      const cols = [String(n).padEnd(3), pct(ms, 50).toFixed(1).padStart(8), pct(ms, 95).toFixed(1).padStart(10), pct(verdictMs, 50).toFixed(1).padStart(16), (sizes / ms.length).toFixed(2).padStart(16), String(verdicts).padStart(13), String(abstained).padStart(10), String(ms.length).padStart(8)];
      console.log(`  ${cols.join(" ")}`);
    } finally {
      await router.close();
    }
  }
}

await main();
