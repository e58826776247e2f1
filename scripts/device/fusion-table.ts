/**
 * Issue 13's table from the H100 records of 2026-11-26 (bench/results/2026-11-26-h100-fusion/): every
 * constant fitted on validation (all 245 tasks of batches 1–5, and off-domain batches 1–5), every
 * figure reported on the test split (batches 6–10) and the held-back off-domain prompts (6–10).
 *
 * The records hold, per task, the glance's top 20 and BM25's top 10 with g and a verdict (L, V) for
 * each, and BM25's normalisers, so the first stage g + βB and the ruling S = g + αL + γV + βB replay
 * exactly over that pool. A skill outside it could still enter a first-stage shortlist only if
 * g ≤ g₂₀ and BM25 ≤ the 11th score; the script counts the tasks where that bound does not exclude it.
 *
 * Usage: npx vite-node scripts/device/fusion-table.ts -- <dir> [--trigger-rate 0.1]
 * (<dir>/offdomain.jsonl.gz is optional: without it the abstention part is skipped)
 */
import { existsSync } from "node:fs";
import { readPerQuery } from "../../lab/eval/io.js";
import { calibrate } from "../../lab/eval/calibrate.js";
import { evaluateAbstention, fitAbstention, type AbstentionRuling } from "../../lab/eval/abstention-fit.js";
import { lexicalB, unionRecall, verdictPool } from "../../lab/eval/lexical-fit.js";
import { batchNumber } from "../../lab/eval/tasks.js";
import { chooseByRuling, firstStage, firstStageOrder, ruledShortlist } from "../../src/route/index.js";
import type { PerQueryRecord } from "../../lab/eval/evaluate.js";

const args = process.argv.slice(2).filter((a) => a !== "--");
const dir = args[0] ?? "bench/results/2026-11-26-h100-fusion";
const trigger = args.includes("--trigger-rate") ? Number(args[args.indexOf("--trigger-rate") + 1]) : 0.1;

const val = await readPerQuery(`${dir}/val.jsonl.gz`);
const test = await readPerQuery(`${dir}/test.jsonl.gz`);
// Off-domain records are optional (a run may skip them): abstention is then not fitted here.
const off = existsSync(`${dir}/offdomain.jsonl.gz`) ? await readPerQuery(`${dir}/offdomain.jsonl.gz`) : [];
const offVal = off.filter((r) => (batchNumber(r.batch) ?? 0) <= 5);
const offTest = off.filter((r) => (batchNumber(r.batch) ?? 0) > 5);
const maxShortlist = 20;

const fit = calibrate(val, { maxShortlist });
const fit0 = calibrate(val, { maxShortlist, lexical: false });
const T = fit.lexicalTemperature;
const pct = (x: number) => x.toFixed(3);
const hit = (r: PerQueryRecord, id: string | null | undefined) => (id != null && r.accepted.includes(id) ? 1 : 0);
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / (xs.length || 1);

/** The pool's first-stage order at β (glance top 20 ∪ BM25 top 10, each with g). */
function firstStageRanked(r: PerQueryRecord, beta: number) {
  const pool = [...(r.glance ?? []), ...(r.also ?? [])].map((c) => ({ ...c, B: lexicalB(r.lexical, c.s, T) }));
  return firstStageOrder(pool.sort((a, b) => b.g - a.g), beta);
}

/** Whether a skill outside the pool could reach the Δ-shortlist of the first stage at β. */
function uncertain(r: PerQueryRecord, beta: number, delta: number): boolean {
  const ranked = firstStageRanked(r, beta);
  const g20 = r.glance![r.glance!.length - 1].g;
  const s11 = r.lexical!.top[10]?.s ?? 0;
  const bound = g20 + beta * lexicalB(r.lexical, s11, T);
  return bound >= firstStage(ranked[0].g, ranked[0].B, beta) - delta;
}

function rows(records: PerQueryRecord[]) {
  const ins = records.filter((r) => !r.offDomain);
  const rank = (ids: string[] | undefined, r: PerQueryRecord, k: number) => (ids ?? []).slice(0, k).some((id) => r.accepted.includes(id)) ? 1 : 0;
  const ruling = (r: PerQueryRecord, p: { alpha: number; gamma: number; delta: number; beta: number }) =>
    hit(r, chooseByRuling(verdictPool(r, T), { ...p, maxShortlist }));
  const out: [string, number, number | string][] = [];
  out.push(["BM25 (= B alone: BM25's own order)", mean(ins.map((r) => hit(r, r.bm25?.[0]))), mean(ins.map((r) => rank(r.bm25, r, 20)))]);
  out.push(["glance", mean(ins.map((r) => hit(r, r.glance?.[0].skill))), mean(ins.map((r) => rank(r.glance?.map((c) => c.skill), r, 20)))]);
  out.push([`first stage g + βB (β = ${fit.beta}), no verdict`, mean(ins.map((r) => hit(r, firstStageRanked(r, fit.beta)[0].skill))), mean(ins.map((r) => rank(firstStageRanked(r, fit.beta).map((c) => c.skill), r, 20)))]);
  out.push(["union of the glance's top 20 and BM25's top 10 (recall)", NaN, unionRecall(ins, 20)]);
  const p0 = { alpha: fit0.alpha, gamma: fit0.gamma, delta: fit0.delta, beta: 0 };
  out.push([`g + αL, without B (α = ${p0.alpha})`, mean(ins.map((r) => ruling(r, { ...p0, gamma: 0 }))), "="]);
  out.push([`g + γV, without B (γ = ${p0.gamma})`, mean(ins.map((r) => ruling(r, { ...p0, alpha: 0 }))), "="]);
  out.push([`full ruling without B (α = ${p0.alpha}, γ = ${p0.gamma}, Δ = ${p0.delta.toPrecision(3)})`, mean(ins.map((r) => ruling(r, p0))), "="]);
  const p1 = { alpha: fit.alpha, gamma: fit.gamma, delta: fit.delta, beta: fit.beta };
  out.push([`full ruling with B: shortlist by g + βB, S = g + αL + γV + βB (α = ${p1.alpha}, γ = ${p1.gamma}, Δ = ${p1.delta.toPrecision(3)}, β = ${p1.beta})`, mean(ins.map((r) => ruling(r, p1))), "="]);
  const shortlistSize = mean(ins.map((r) => ruledShortlist(verdictPool(r, T), { ...p1, maxShortlist }).length));
  const unsureRecs = ins.filter((r) => uncertain(r, p1.beta, p1.delta));
  // bounds on the full ruling's Hit@1: an uncertain task may turn either way
  const unsureHits = unsureRecs.filter((r) => ruling(r, p1) === 1).length;
  const h = mean(ins.map((r) => ruling(r, p1)));
  const bounds = [h - unsureHits / ins.length, h + (unsureRecs.length - unsureHits) / ins.length];
  return { out, shortlistSize, unsure: `${unsureRecs.length} (full ruling with B lies in [${pct(bounds[0])}, ${pct(bounds[1])}])`, n: ins.length };
}

console.log(`T = ${T} (likelihood on validation); calibration on ${fit.evaluated} validation tasks: with B ${pct(fit.hitAt1)} (β = ${fit.beta}), without ${pct(fit0.hitAt1)}`);
for (const [name, recs] of [["validation (batches 1–5)", val], ["test (batches 6–10)", test]] as const) {
  const { out, shortlistSize, unsure, n } = rows(recs);
  console.log(`\n## ${name}: ${n} tasks, 30,593 skills`);
  console.log("| method | Hit@1 | R@20 |\n| --- | --- | --- |");
  for (const [m, h, r] of out) console.log(`| ${m} | ${Number.isNaN(h) ? "–" : pct(h)} | ${typeof r === "string" ? "(the glance's or the first stage's)" : pct(r)} |`);
  console.log(`average shortlist with B: ${shortlistSize.toFixed(2)}; tasks where a skill outside the recorded pool could enter the first-stage shortlist: ${unsure}`);
}

// Abstention, on the ruling with B as fitted
if (off.length === 0) {
  console.log("\nno off-domain records: abstention not fitted");
  process.exit(0);
}
const ruling: AbstentionRuling = { alpha: fit.alpha, gamma: fit.gamma, delta: fit.delta, beta: fit.beta, maxShortlist, lexicalTemperature: T };
const { model, report } = fitAbstention(val, offVal, ruling, { targetTriggerRate: trigger });
console.log(`\n## Abstention (target trigger rate ${trigger}); fitted on ${report.inDomain} + ${report.offDomain} validation records`);
for (const c of report.candidates) console.log(`${c.label.padEnd(40)} fit@${c.fitTriggerRate.toFixed(3)} cv abstain ${c.cv ? pct(c.cv.abstentionRate) : "–"} trigger ${c.cv ? pct(c.cv.triggerRate) : "–"} | fitting abstain ${pct(c.fitting.abstentionRate)} trigger ${pct(c.fitting.triggerRate)}`);
console.log("chosen:", JSON.stringify(model));
for (const [name, ins, offs] of [["validation", val, offVal], ["test + held-back off-domain", test, offTest]] as const) {
  const e = evaluateAbstention(model, ins, offs, ruling);
  console.log(`${name}: in-domain abstention ${pct(e.abstentionRate)} (${e.inDomain} tasks), off-domain trigger ${pct(e.triggerRate)} (${e.offDomain} prompts), Hit@1 ${pct(e.hitAt1)} (without abstention ${pct(e.hitAt1WithoutAbstention)}; answered ${pct(e.answeredHitAt1)}; right answers dropped ${e.lostHits})`);
}
