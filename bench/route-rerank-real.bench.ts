/**
 * The re-ranked default route against the first stage alone, through the real runtime on a real
 * bank: `Router.route(task)` with the shipped projections (the re-ranking cascade) and with the same
 * projections less the re-ranker, both opening one installed bank read-only, over SWE-Skills-Bench
 * task statements. Hit@1 (abstentions count as misses, gold = the accepted ids of lab/eval), the
 * verdict's share of the route's time, and the route's p50 / p95 for each.
 *
 *   npm run bench -- route-rerank-real <bank> <tasks.jsonl> <library.jsonl[,…]> [--batches 6-10]
 *     [--limit N] [--budget-s S] [--model F] [--projections F] [--records F.jsonl]
 *     [--abstain-off] [--off-domain F.jsonl [--off-batches offhw6-offhw10]] [--shipped-only]
 *     [--skill-budget N|default]
 *
 * `bank`: installed with the embedded default pair (as bench/results/2026-11-28-cpu-index-real/
 * README.md builds its 3,049-skill bank); `library`: the JSONL files installed there, read for the
 * accepted ids. Tasks without a gold in the bank are left out; the rest are visited in the stride
 * order 97 · i mod n, so a `--budget-s` stop still samples every batch.
 *
 * `--model` / `--projections`: the pair to open (default GAVEL_MODEL / GAVEL_PROJECTIONS, else the
 * embedded pair). `--records`: one JSON line per task (the pick, the best 5 with their read-outs
 * [g, B, L, V, R], abstention and timings of each route). `--abstain-off`: also the re-ranked route with abstention off (`{ abstain: false }`), the
 * pick a route makes whatever abstention says. `--off-domain`: prompts no skill serves
 * (bench/data/off-domain-prompts.jsonl; `--off-batches` picks the held-out ones, default
 * offhw6-offhw10), routed by the re-ranked route after the tasks: the share that loads a skill.
 * `--shipped-only`: route each task with the shipped route alone (no first-stage route beside it), for
 * the route's own latency where a route takes seconds (a large bank on the CPU). `--skill-budget`: the
 * routers' skill budget (default 512, the budget the SWE-Skills-Bench banks were installed with;
 * `default`: none given, what `gavel` opens with, ¾ of the 2,048-token context for gavel-mini). It
 * should match the bank's install: a render longer than the install's is never read.
 */
import { createWriteStream } from "node:fs";
import { cpus, loadavg } from "node:os";
import { defaultModelPaths } from "../src/defaults.js";
import { Model } from "../src/model/Model.js";
import { Projections } from "../src/projections/projections.js";
import { Router } from "../src/route/Router.js";
import type { RouteResult } from "../src/route/types.js";
import { acceptedIds, libraryIndex } from "../lab/eval/metrics.js";
import { loadTasks, selectTasks } from "../lab/eval/tasks.js";
import { loadLibrary } from "../lab/eval/io.js";
import { median, quantile } from "./data.js";

const argv = process.argv.slice(2);
function flag(name: string, fallback: string): string {
  const i = argv.indexOf(name);
  return i >= 0 ? argv.splice(i, 2)[1] : fallback;
}
const batches = flag("--batches", "6-10");
const limit = Number(flag("--limit", "Infinity"));
const budgetS = Number(flag("--budget-s", "Infinity"));
const modelFlag = flag("--model", process.env.GAVEL_MODEL ?? "");
const projFlag = flag("--projections", process.env.GAVEL_PROJECTIONS ?? "");
const recordsPath = flag("--records", "");
const offDomainPath = flag("--off-domain", "");
const offBatches = flag("--off-batches", "offhw6,offhw7,offhw8,offhw9,offhw10").split(",");
const abstainOffAt = argv.indexOf("--abstain-off");
const abstainOff = abstainOffAt >= 0;
if (abstainOff) argv.splice(abstainOffAt, 1);
const skillBudgetFlag = flag("--skill-budget", "512");
const skillBudget = skillBudgetFlag === "default" ? undefined : Number(skillBudgetFlag);
const shippedOnlyAt = argv.indexOf("--shipped-only");
const shippedOnly = shippedOnlyAt >= 0;
if (shippedOnly) argv.splice(shippedOnlyAt, 1);
const [bankDir, tasksPath, libraryList] = argv;
if (!bankDir || !tasksPath || !libraryList) {
  console.error("usage: npm run bench -- route-rerank-real <bank> <tasks.jsonl> <library.jsonl[,…]> [--batches 6-10] [--limit N] [--budget-s S]");
  process.exit(2);
}
const { skills } = await loadLibrary(libraryList.split(","));
const index = libraryIndex(skills);
const defaults = defaultModelPaths();
const modelPath = modelFlag || defaults.model;
const projPath = projFlag || defaults.projections;
const model = await Model.load(modelPath, { contextSize: 2048 });
const shipped = await Projections.load(projPath);
if (!shipped.rerank) throw new Error(`${projPath} carries no re-ranker`);
const reranked = await Router.open(model, { projections: shipped, bankDir, readOnly: true, skillBudget });
// the first stage's router only where it routes (a second copy of a large bank's keys otherwise)
const routers = {
  reranked,
  firstStage: shippedOnly ? reranked : await Router.open(model, { projections: shipped.withCalibration({ rerank: null }), bankDir, readOnly: true, skillBudget }),
};
const installed = new Set(routers.reranked.list().map((s) => s.id));
const all = selectTasks(await loadTasks(tasksPath), { batches }).filter((t) => [...acceptedIds(t.gold_skill_ids, index)].some((id) => installed.has(id)));
const n = all.length;
const order = Array.from({ length: n }, (_, i) => all[(97 * i) % n]).slice(0, limit);
console.log(`route-rerank-real: bank ${bankDir} (${installed.size} skills; context 2048, skill budget ${reranked.skillBudget}, key budget ${reranked.keyBudget}), tasks ${tasksPath} batches ${batches}: ${n} with a gold installed; ${cpus().length} × ${cpus()[0]?.model}, node ${process.version}, ${new Date().toISOString()}, load ${loadavg()[0].toFixed(1)}`);
/** The shortlist's read-outs in full (g, B, L, V, R; null where not computed): two passes of one task compare value by value. */
const readOuts = (r: RouteResult) => r.shortlist.slice(0, 5).map((c) => [c.g, c.B ?? null, Number.isFinite(c.L) ? c.L : null, Number.isFinite(c.V) ? c.V : null, c.R ?? null]);
const hits = { reranked: 0, firstStage: 0, rerankedNoAbstain: 0 };
const ms = { reranked: [] as number[], firstStage: [] as number[] };
const abstained = { reranked: 0, firstStage: 0 };
const records = recordsPath ? createWriteStream(recordsPath) : null;
const verdictMs: number[] = [];
const t0 = Date.now();
let done = 0;
for (const t of order) {
  if ((Date.now() - t0) / 1000 > budgetS) break;
  const gold = acceptedIds(t.gold_skill_ids, index);
  const rec: Record<string, unknown> = { id: t.id, batch: t.batch, gold: [...gold] };
  for (const k of shippedOnly ? (["reranked"] as const) : (["reranked", "firstStage"] as const)) {
    const s = performance.now();
    const r = await routers[k].route(t.text);
    const took = performance.now() - s;
    ms[k].push(took);
    if (k === "reranked") verdictMs.push(r.timings.verdictMs);
    if (!r.abstained && r.skill !== null && gold.has(r.skill)) hits[k]++;
    if (r.abstained) abstained[k]++;
    rec[k] = { skill: r.skill, abstained: r.abstained, abstention: r.abstention?.score ?? null, verdict: r.verdict, shortlist: r.shortlist.slice(0, 5).map((c) => c.skill), read: readOuts(r), ms: Math.round(took), verdictMs: Math.round(r.timings.verdictMs), glanceMs: Math.round(r.timings.glanceMs) };
  }
  if (abstainOff) {
    const r = await routers.reranked.route(t.text, { abstain: false });
    if (r.skill !== null && gold.has(r.skill)) hits.rerankedNoAbstain++;
    rec.rerankedNoAbstain = { skill: r.skill, verdict: r.verdict, shortlist: r.shortlist.slice(0, 5).map((c) => c.skill), read: readOuts(r) };
  }
  if (records) records.write(JSON.stringify(rec) + "\n");
  if (++done % 10 === 0) console.log(`  ${done} tasks: Hit@1 re-ranked ${(hits.reranked / done).toFixed(3)}, first stage ${(hits.firstStage / done).toFixed(3)} (load ${loadavg()[0].toFixed(1)})`);
}
const p95 = (xs: number[]) => quantile(xs, 0.95);
console.log(`${done} of ${order.length} tasks${done < order.length ? " (the budget stopped it)" : ""}`);
for (const k of shippedOnly ? (["reranked"] as const) : (["reranked", "firstStage"] as const)) console.log(`${k}: Hit@1 ${(hits[k] / done).toFixed(3)} (abstentions as misses; abstained on ${abstained[k]}); route p50 ${median(ms[k]).toFixed(0)} ms, p95 ${p95(ms[k]).toFixed(0)} ms`);
if (abstainOff) console.log(`reranked, abstention off: Hit@1 ${(hits.rerankedNoAbstain / done).toFixed(3)}`);
console.log(`the re-ranked route's verdict: p50 ${median(verdictMs).toFixed(0)} ms, p95 ${p95(verdictMs).toFixed(0)} ms; load ${loadavg().map((x) => x.toFixed(1)).join(" ")}`);
if (offDomainPath) {
  const prompts = (await loadTasks(offDomainPath)).filter((t) => offBatches.includes(String(t.batch)));
  let loaded = 0;
  for (const t of prompts) {
    const r = await routers.reranked.route(t.text);
    if (!r.abstained && r.skill !== null) loaded++;
    if (records) records.write(JSON.stringify({ id: t.id, batch: t.batch, offDomain: true, skill: r.skill, abstained: r.abstained, abstention: r.abstention?.score ?? null }) + "\n");
  }
  console.log(`off-domain prompts (${offBatches.join(",")}): ${loaded} of ${prompts.length} load a skill (${(loaded / Math.max(1, prompts.length)).toFixed(3)})`);
}
if (records) await new Promise<void>((res) => records.end(res));
for (const r of new Set(Object.values(routers))) await r.close();
await model.dispose();
