/**
 * The default pipeline's selection table, rebuilt from per-query records: every constant is fitted on
 * validation (SWE-Skills-Bench batches 1–5, and the off-domain prompts of batches 1–5), and the chosen
 * pipeline is reported once on test (batches 6–10 and the held-back prompts).
 *
 * Each candidate is a folder of `gavel eval --per-query` records (val.jsonl.gz, test.jsonl.gz and,
 * optionally, offdomain.jsonl.gz) made with `--methods bm25,glance,ruling,gL,gV --lexical-pool N`, whose
 * lexical read-outs were recomputed over the full text by lexical-records.ts at the candidate's BM25
 * constants. The records hold, per task, the glance's top 20 and BM25's top N with g, L and V, so the
 * route replays exactly over that pool:
 *
 *   first stage F = g + βB; the verdict's pool = the Δ-shortlist of F ∪ the glance's best kg ∪ B's
 *   best kb (at most maxShortlist); S = g + αL + γV + βB over the pool; the route commits to argmax S.
 *
 * A skill outside the recorded pool could change a route only if it could enter the pool: the script
 * counts those tasks ("unsure") and bounds Hit@1 by them.
 *
 * Usage: npx vite-node scripts/device/select-default.ts -- NAME=DIR [NAME=DIR …] [--json OUT]
 */
import { existsSync, writeFileSync } from "node:fs";
import { readPerQuery } from "../../lab/eval/io.js";
import { calibrate } from "../../lab/eval/calibrate.js";
import { evaluateAbstention, fitAbstention, type AbstentionRuling } from "../../lab/eval/abstention-fit.js";
import { lexicalB } from "../../lab/eval/lexical-fit.js";
import { batchNumber } from "../../lab/eval/tasks.js";
import type { PerQueryRecord } from "../../lab/eval/evaluate.js";
import { firstStageShortlist } from "../../src/route/index.js";

const args = process.argv.slice(2).filter((a) => a !== "--");
const jsonAt = args.indexOf("--json");
const jsonOut = jsonAt >= 0 ? args.splice(jsonAt, 2)[1] : undefined;
const candidates = args.map((a) => {
  const [name, dir] = a.split("=");
  if (!name || !dir) throw new Error(`usage: select-default.ts NAME=DIR …; got ${a}`);
  return { name, dir };
});
const maxShortlist = 20;
const pct = (x: number) => x.toFixed(3);
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / (xs.length || 1);

interface Cand { skill: string; g: number; L: number; V: number; B: number }
interface Setting { beta: number; alpha: number; gamma: number; delta: number; kg: number; kb: number; T: number }

/** The recorded pool of one task with B at temperature T. */
function poolOf(r: PerQueryRecord, T: number): Cand[] {
  return (r.verdict ?? []).map((c) => ({ skill: c.skill, g: c.g, L: c.L, V: c.V, B: lexicalB(r.lexical, c.s, T) }));
}

/** The verdict's pool as route() builds it (the runtime's own firstStageShortlist), over the recorded candidates. */
function routePool(pool: readonly Cand[], s: Setting): Cand[] {
  return firstStageShortlist(pool, s.delta, maxShortlist, s.beta, (c) => c.B, { glance: s.kg, lexical: s.kb });
}

/** What the route commits to: with one candidate and no verdict, the first stage's best. */
function choose(pool: readonly Cand[], s: Setting): { skill: string | null; size: number } {
  const p = routePool(pool, s);
  if (p.length === 0) return { skill: null, size: 0 };
  if (p.length === 1) return { skill: p[0].skill, size: 1 };
  let best = p[0];
  let bestS = -Infinity;
  for (const c of p) {
    const S = c.g + s.alpha * c.L + s.gamma * c.V + s.beta * c.B;
    if (S > bestS) { bestS = S; best = c; }
  }
  return { skill: best.skill, size: p.length };
}

/**
 * Whether a skill outside the recorded pool could enter route()'s pool: its g is at most the 20th
 * glance g and its BM25 at most the best score outside the recorded pool (from the top-50 read-out).
 */
function unsure(r: PerQueryRecord, pool: readonly Cand[], s: Setting): boolean {
  const inPool = new Set(pool.map((c) => c.skill));
  const g20 = r.glance![r.glance!.length - 1].g;
  const outside = r.lexical!.top.find((c) => !inPool.has(c.skill));
  const bOut = outside ? lexicalB(r.lexical, outside.s, s.T) : -Infinity;
  const F = Math.max(...pool.map((c) => c.g + s.beta * c.B));
  if (g20 + s.beta * bOut >= F - s.delta) return true;
  // B's best kb: a skill outside the pool among them?
  if (s.kb && r.lexical!.top.slice(0, s.kb).some((c) => !inPool.has(c.skill))) return true;
  return false;
}

function score(records: readonly PerQueryRecord[], s: Setting) {
  const ins = records.filter((r) => !r.offDomain && r.verdict && r.verdict.length > 0);
  let hits = 0;
  let size = 0;
  let unsureN = 0;
  let unsureHits = 0;
  for (const r of ins) {
    const pool = poolOf(r, s.T);
    const c = choose(pool, s);
    const h = c.skill !== null && r.accepted.includes(c.skill) ? 1 : 0;
    hits += h;
    size += c.size;
    if (unsure(r, pool, s)) { unsureN++; unsureHits += h; }
  }
  const n = ins.length;
  return { n, hit: hits / n, size: size / n, lo: (hits - unsureHits) / n, hi: (hits - unsureHits + unsureN) / n };
}

/** In-pool accuracy of argmax L: over tasks whose union pool (kg, kb) holds a gold. */
function verdictInPool(records: readonly PerQueryRecord[], s: Setting): { n: number; acc: number } {
  const ins = records.filter((r) => !r.offDomain && r.verdict && r.verdict.length > 0);
  let n = 0;
  let right = 0;
  for (const r of ins) {
    const p = routePool(poolOf(r, s.T), s);
    if (!p.some((c) => r.accepted.includes(c.skill))) continue;
    n++;
    const top = p.reduce((a, b) => (b.L > a.L ? b : a));
    if (r.accepted.includes(top.skill)) right++;
  }
  return { n, acc: right / (n || 1) };
}

const ALPHAS = [0, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3];
const GAMMAS = [0, 0.003, 0.01, 0.03, 0.1];
const KS = [0, 1, 2, 3, 5];
const report: Record<string, unknown> = {};
for (const { name, dir } of candidates) {
  const val = await readPerQuery(`${dir}/val.jsonl.gz`);
  const test = await readPerQuery(`${dir}/test.jsonl.gz`);
  const off = existsSync(`${dir}/offdomain.jsonl.gz`) ? await readPerQuery(`${dir}/offdomain.jsonl.gz`) : [];
  const offVal = off.filter((r) => (batchNumber(r.batch) ?? 0) <= 5);
  const offTest = off.filter((r) => (batchNumber(r.batch) ?? 0) > 5);
  // β, T and Δ as calibrate fits them (the Δ-shortlist alone); then the union and α, γ by val Hit@1
  const fit = calibrate(val, { maxShortlist });
  const base: Setting = { beta: fit.beta, alpha: fit.alpha, gamma: fit.gamma, delta: fit.delta, kg: 0, kb: 0, T: fit.lexicalTemperature };
  let best = { s: base, v: score(val, base) };
  const rows: string[] = [];
  for (const kg of KS) for (const kb of KS) {
    let bk = { s: { ...base, kg, kb }, v: score(val, { ...base, kg, kb }) };
    for (const alpha of ALPHAS) for (const gamma of GAMMAS) {
      const s = { ...base, kg, kb, alpha, gamma };
      const v = score(val, s);
      if (v.hit > bk.v.hit + 1e-12 || (Math.abs(v.hit - bk.v.hit) < 1e-12 && v.size < bk.v.size)) bk = { s, v };
    }
    const t = score(test, bk.s);
    const ip = verdictInPool(val, bk.s);
    rows.push(`| ${kg} | ${kb} | ${bk.v.size.toFixed(2)} | ${pct(ip.acc)} (${ip.n}) | ${pct(bk.v.hit)} | ${pct(t.hit)} [${pct(t.lo)}, ${pct(t.hi)}] | α ${bk.s.alpha}, γ ${bk.s.gamma} |`);
    // the pool grows only where it buys validation hits: ties go to the smaller pool
    if (bk.v.hit > best.v.hit + 1e-12 || (Math.abs(bk.v.hit - best.v.hit) < 1e-12 && bk.v.size < best.v.size)) best = bk;
  }
  const noVerdict: Setting = { ...base, alpha: 0, gamma: 0, delta: 0, kg: 0, kb: 0 };
  const glanceHit = (rs: PerQueryRecord[]) => mean(rs.filter((r) => !r.offDomain).map((r) => (r.glance?.[0] && r.accepted.includes(r.glance[0].skill) ? 1 : 0)));
  const glanceR20 = (rs: PerQueryRecord[]) => mean(rs.filter((r) => !r.offDomain).map((r) => ((r.glance ?? []).slice(0, 20).some((c) => r.accepted.includes(c.skill)) ? 1 : 0)));
  const bm25Hit = (rs: PerQueryRecord[]) => mean(rs.filter((r) => !r.offDomain).map((r) => (r.bm25?.[0] && r.accepted.includes(r.bm25[0]) ? 1 : 0)));
  const bm25R20 = (rs: PerQueryRecord[]) => mean(rs.filter((r) => !r.offDomain).map((r) => ((r.bm25 ?? []).slice(0, 20).some((id) => r.accepted.includes(id)) ? 1 : 0)));
  console.log(`\n# ${name} (${dir})`);
  console.log(`fitted on ${val.length} validation records: T = ${base.T}, β = ${base.beta}, Δ = ${base.delta}`);
  console.log("\n| method | val Hit@1 | val R@20 | test Hit@1 | test R@20 |\n| --- | --- | --- | --- | --- |");
  console.log(`| lexical expert alone (BM25 at the candidate's k1, b) | ${pct(bm25Hit(val))} | ${pct(bm25R20(val))} | ${pct(bm25Hit(test))} | ${pct(bm25R20(test))} |`);
  console.log(`| glance | ${pct(glanceHit(val))} | ${pct(glanceR20(val))} | ${pct(glanceHit(test))} | ${pct(glanceR20(test))} |`);
  const nv = [score(val, noVerdict), score(test, noVerdict)];
  console.log(`| first stage g + βB, no verdict | ${pct(nv[0].hit)} | – | ${pct(nv[1].hit)} [${pct(nv[1].lo)}, ${pct(nv[1].hi)}] | – |`);
  const bt = score(test, best.s);
  console.log(`| **chosen: kg ${best.s.kg}, kb ${best.s.kb}, α ${best.s.alpha}, γ ${best.s.gamma}** | ${pct(best.v.hit)} | – | ${pct(bt.hit)} [${pct(bt.lo)}, ${pct(bt.hi)}] | – |`);
  console.log("\nThe verdict's pool by size (α, γ refitted on validation for each; test in [bounds]):\n");
  console.log("| kg | kb | mean pool (val) | argmax L in pool, val (tasks) | val Hit@1 | test Hit@1 | constants |\n| --- | --- | --- | --- | --- | --- | --- |");
  for (const r of rows) console.log(r);
  let abstention: unknown = null;
  if (offVal.length) {
    const ruling: AbstentionRuling = { alpha: best.s.alpha, gamma: best.s.gamma, delta: best.s.delta, beta: best.s.beta, maxShortlist, lexicalTemperature: best.s.T };
    const { model } = fitAbstention(val, offVal, ruling, { targetTriggerRate: 0.1 });
    abstention = model;
    console.log(`\nabstention fitted on ${val.length} + ${offVal.length} validation records: ${JSON.stringify(model)}`);
    for (const [label, ins, offs] of [["validation", val, offVal], ["test + held-back prompts", test, offTest]] as const) {
      const e = evaluateAbstention(model, ins, offs, ruling);
      console.log(`${label}: in-domain abstention ${pct(e.abstentionRate)} (${e.inDomain}), off-domain trigger ${pct(e.triggerRate)} (${e.offDomain})`);
    }
  }
  report[name] = { chosen: best.s, val: best.v, test: bt, abstention };
}
if (jsonOut) writeFileSync(jsonOut, JSON.stringify(report, null, 2) + "\n");
