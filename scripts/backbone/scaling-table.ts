/**
 * Issue 14's scaling table and plot, rebuilt from per-query glance records on the CPU (no GPU): one
 * row per backbone (parameters, unique training tokens, validation and test glance Hit@1 / R@20 over
 * the full library), BM25 beside them from the same tasks' full-text records, and an SVG of test
 * Hit@1 and R@20 against parameters (log axis) with BM25's two lines. A backbone without records is
 * listed as not measured, and has no point.
 *
 * Each backbone: label=parameters:tokens:folder[:verdict-folder], the folder holding val-glance.jsonl.gz
 * and test-glance.jsonl.gz (train-full.sh's records) or "-" when not measured. BM25 comes from
 * --bm25=<folder> with val.jsonl.gz and test.jsonl.gz (scripts/device/lexical-records.ts).
 * The verdict folder, when given, holds val.jsonl.gz and test.jsonl.gz with the verdict's read-outs
 * over the glance's top 20 (scripts/backbone/verdict-records.ts, then lexical-records.ts): the ruling's
 * constants are fitted on validation (`calibrate`, as `gavel calibrate`) and the ruling is replayed on
 * test (g + αL and g + γV: the fitted ruling without γ, without α; the full ruling without B and with
 * B, issue 13's), as scripts/device/fusion-table.ts does; the plot marks the full ruling too.
 *
 *   npx vite-node scripts/backbone/scaling-table.ts -- --svg docs/scaling.svg \
 *     --bm25 bench/results/2026-11-27-h100-scaling-l7/m2l7/full-text \
 *     gavel-mini=26.6e6:22e6:bench/results/2026-11-27-h100-scaling-l7/mini \
 *     gavel-mini2=26.6e6:259e6:bench/results/2026-11-27-h100-scaling-l7/m2l7 \
 *     gavel-large=112.7e6:270e6:-
 * (docs/BACKBONE.md has the command with every backbone's records and verdict folders.) A third table
 * gives the verdict alone inside the glance's pool (argmax L, argmax V where the top 20 holds a gold).
 * A fourth gives each step between consecutive rows as a paired difference on test with a 95% bootstrap interval.
 */
import { writeFileSync } from "node:fs";
import { readPerQuery } from "../../lab/eval/io.js";
import type { PerQueryRecord } from "../../lab/eval/evaluate.js";
import { calibrate } from "../../lab/eval/calibrate.js";
import { verdictPool } from "../../lab/eval/lexical-fit.js";
import { chooseByRuling } from "../../src/route/index.js";
import { mulberry32 } from "../../src/util/prng.js";

interface Rates { tasks: number; hit1: number; r20: number; /** Hit@1 per task id */ hits: Map<string, boolean> }
/** Test Hit@1 of the ruling's variants, their constants fitted on validation. */
interface Ruled { valTasks: number; testTasks: number; gL: number; gV: number; ruling: number; rulingB: number; fit: string; rulingHits: Map<string, boolean>; inPool: { val: InPool; test: InPool } }
/** Over the tasks whose glance top 20 holds a gold: how often the highest L, resp. V, is a gold (no g, no fitting). */
interface InPool { tasks: number; byL: number; byV: number }
interface Row { label: string; params: number; tokens: number; val?: Rates; test?: Rates; ruled?: Ruled }

const args = process.argv.slice(2).filter((a) => a !== "--");
const flag = (name: string) => {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const v = args[i + 1];
  args.splice(i, 2);
  return v;
};
const svgPath = flag("--svg");
const bm25Dir = flag("--bm25");

/** Hit@1 and R@20 of a ranked list per task (records of off-domain prompts left out). */
function rates(records: PerQueryRecord[], ranked: (r: PerQueryRecord) => readonly string[] | undefined): Rates {
  const rs = records.filter((r) => !r.offDomain);
  let h = 0, k = 0;
  const hits = new Map<string, boolean>();
  for (const r of rs) {
    const ids = ranked(r) ?? [];
    const hit = ids[0] !== undefined && r.accepted.includes(ids[0]);
    hits.set(r.id, hit);
    if (hit) h++;
    if (ids.slice(0, 20).some((id) => r.accepted.includes(id))) k++;
  }
  return { tasks: rs.length, hit1: h / (rs.length || 1), r20: k / (rs.length || 1), hits };
}
const glanceIds = (r: PerQueryRecord) => r.glance?.map((c) => c.skill);
const bm25Ids = (r: PerQueryRecord) => r.bm25 ?? r.lexical?.top.map((t) => t.skill);

/** The verdict alone inside the glance's pool: what the backbone's read-outs pick when the pool holds a gold. */
function inPool(records: PerQueryRecord[]): InPool {
  let tasks = 0, byL = 0, byV = 0;
  for (const r of records) {
    const v = r.verdict ?? [];
    if (!v.some((c) => r.accepted.includes(c.skill))) continue;
    tasks++;
    const best = (key: "L" | "V") => v.reduce((a, c) => (c[key] > a[key] ? c : a));
    if (r.accepted.includes(best("L").skill)) byL++;
    if (r.accepted.includes(best("V").skill)) byV++;
  }
  return { tasks, byL: byL / (tasks || 1), byV: byV / (tasks || 1) };
}

/** The ruling's variants on test, fitted on validation (the pool: the glance's recorded top 20). */
async function ruledRates(dir: string): Promise<Ruled> {
  const maxShortlist = 20;
  const val = (await readPerQuery(`${dir}/val.jsonl.gz`)).filter((r) => !r.offDomain);
  const test = (await readPerQuery(`${dir}/test.jsonl.gz`)).filter((r) => !r.offDomain);
  const fitB = calibrate(val, { maxShortlist });
  const fit0 = calibrate(val, { maxShortlist, lexical: false });
  const T = fitB.lexicalTemperature;
  const hitsOf = (p: { alpha: number; gamma: number; delta: number; beta: number }) =>
    new Map(test.map((r) => {
      const chosen = chooseByRuling(verdictPool(r, T), { ...p, maxShortlist });
      return [r.id, chosen !== null && r.accepted.includes(chosen)] as const;
    }));
  const hit = (p: { alpha: number; gamma: number; delta: number; beta: number }) =>
    [...hitsOf(p).values()].filter(Boolean).length / (test.length || 1);
  const p0 = { alpha: fit0.alpha, gamma: fit0.gamma, delta: fit0.delta, beta: 0 };
  const pB = { alpha: fitB.alpha, gamma: fitB.gamma, delta: fitB.delta, beta: fitB.beta };
  const g = (x: number) => x.toPrecision(3);
  return {
    valTasks: val.length,
    testTasks: test.length,
    gL: hit({ ...p0, gamma: 0 }),
    gV: hit({ ...p0, alpha: 0 }),
    ruling: hit(p0),
    rulingB: hit(pB),
    inPool: { val: inPool(val), test: inPool(test) },
    rulingHits: hitsOf(p0),
    fit: `α ${g(p0.alpha)}, γ ${g(p0.gamma)}, Δ ${g(p0.delta)}; with B: α ${g(pB.alpha)}, γ ${g(pB.gamma)}, Δ ${g(pB.delta)}, β ${g(pB.beta)}`,
  };
}

const rows: Row[] = [];
for (const a of args) {
  const [label, spec] = a.split("=");
  const [params, tokens, dir, verdictDir] = spec.split(":");
  const row: Row = { label, params: Number(params), tokens: Number(tokens) };
  if (dir && dir !== "-") {
    row.val = rates(await readPerQuery(`${dir}/val-glance.jsonl.gz`), glanceIds);
    row.test = rates(await readPerQuery(`${dir}/test-glance.jsonl.gz`), glanceIds);
  }
  if (verdictDir) row.ruled = await ruledRates(verdictDir);
  rows.push(row);
}
const bm25 = bm25Dir
  ? { val: rates(await readPerQuery(`${bm25Dir}/val.jsonl.gz`), bm25Ids), test: rates(await readPerQuery(`${bm25Dir}/test.jsonl.gz`), bm25Ids) }
  : undefined;

const f3 = (x: number) => x.toFixed(3);
const m = (x: number) => `${(x / 1e6).toFixed(1)}M`;
const cell = (r?: Rates) => (r ? `${f3(r.hit1)} / ${f3(r.r20)} (${r.tasks})` : "not measured");
console.log("| backbone | parameters | unique training tokens | val glance Hit@1 / R@20 (tasks) | test glance Hit@1 / R@20 (tasks) |");
console.log("| --- | --- | --- | --- | --- |");
if (bm25) console.log(`| BM25 (full text) | – | – | ${cell(bm25.val)} | ${cell(bm25.test)} |`);
for (const r of rows) console.log(`| ${r.label} | ${m(r.params)} | ${m(r.tokens)} | ${cell(r.val)} | ${cell(r.test)} |`);
console.log("\n| backbone | test glance Hit@1 | test g + αL | test g + γV | **test full ruling** | test ruling with B | fitted on validation (tasks) |");
console.log("| --- | --- | --- | --- | --- | --- | --- |");
if (bm25) console.log(`| BM25 (full text) | ${f3(bm25.test.hit1)} | – | – | – | – | – |`);
for (const r of rows) {
  const v = r.ruled;
  console.log(v
    ? `| ${r.label} | ${r.test ? f3(r.test.hit1) : "–"} | ${f3(v.gL)} | ${f3(v.gV)} | **${f3(v.ruling)}** | ${f3(v.rulingB)} | ${v.fit} (${v.valTasks}; test ${v.testTasks}) |`
    : `| ${r.label} | ${r.test ? f3(r.test.hit1) : "–"} | not measured | not measured | not measured | not measured | – |`);
}

console.log("\n| backbone | gold in the glance's top 20, val / test tasks | argmax L is a gold, val / test | argmax V is a gold, val / test |");
console.log("| --- | --- | --- | --- |");
for (const r of rows) {
  const p = r.ruled?.inPool;
  if (p) console.log(`| ${r.label} | ${p.val.tasks} / ${p.test.tasks} | ${f3(p.val.byL)} / ${f3(p.test.byL)} | ${f3(p.val.byV)} / ${f3(p.test.byV)} |`);
}

/**
 * Paired difference of two Hit@1 vectors over the tasks both hold, with a 95% percentile bootstrap
 * interval (10,000 resamples of the tasks, a fixed seed, so the table rebuilds the same).
 */
function pairedDiff(a: Map<string, boolean>, b: Map<string, boolean>): { n: number; diff: number; lo: number; hi: number } {
  const ids = [...a.keys()].filter((id) => b.has(id));
  const d = ids.map((id) => Number(b.get(id)) - Number(a.get(id)));
  const n = d.length;
  const mean = (xs: number[]) => xs.reduce((x, y) => x + y, 0) / (xs.length || 1);
  const rand = mulberry32(12345);
  const means: number[] = [];
  for (let it = 0; it < 10000; it++) {
    let s = 0;
    for (let i = 0; i < n; i++) s += d[Math.floor(rand() * n)];
    means.push(s / (n || 1));
  }
  means.sort((x, y) => x - y);
  return { n, diff: mean(d), lo: means[249], hi: means[9749] };
}
const signed = (x: number) => `${x >= 0 ? "+" : "−"}${Math.abs(x).toFixed(3)}`;
console.log("\n| step (test tasks both hold) | Δ glance Hit@1 [95% interval] | Δ full ruling Hit@1 [95% interval] |");
console.log("| --- | --- | --- |");
for (let i = 1; i < rows.length; i++) {
  const [a, b] = [rows[i - 1], rows[i]];
  if (!a.test || !b.test) continue;
  const g = pairedDiff(a.test.hits, b.test.hits);
  const r = a.ruled && b.ruled ? pairedDiff(a.ruled.rulingHits, b.ruled.rulingHits) : undefined;
  const cellOf = (x: { diff: number; lo: number; hi: number }) => `${signed(x.diff)} [${signed(x.lo)}, ${signed(x.hi)}]`;
  console.log(`| ${a.label} → ${b.label} (${g.n}) | ${cellOf(g)} | ${r ? cellOf(r) : "–"} |`);
}

if (svgPath) writeFileSync(svgPath, plot(rows, bm25?.test));

/** Test Hit@1 (filled) and R@20 (open) against parameters on a log axis; BM25 as dashed lines. */
function plot(rs: Row[], ref?: Rates): string {
  const W = 640, H = 340, L = 60, R = 190, T = 30, B = 50;
  const lo = 1e7, hi = 1e9;
  const x = (p: number) => L + ((Math.log10(p) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * (W - L - R);
  const y = (v: number) => T + (1 - v) * (H - T - B);
  const out: string[] = [`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="11">`];
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  out.push(`<text x="${L}" y="18" font-size="13">Routing on the test tasks (batches 6–10) over 30,593 skills, by backbone size</text>`);
  for (const v of [0, 0.2, 0.4, 0.6, 0.8, 1]) {
    out.push(`<line x1="${L}" x2="${W - R}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/><text x="${L - 8}" y="${y(v) + 4}" text-anchor="end">${v.toFixed(1)}</text>`);
  }
  for (const p of [1e7, 3e7, 1e8, 3e8, 1e9]) {
    out.push(`<line x1="${x(p)}" x2="${x(p)}" y1="${T}" y2="${H - B}" stroke="#eee"/><text x="${x(p)}" y="${H - B + 16}" text-anchor="middle">${p >= 1e9 ? "1B" : `${p / 1e6}M`}</text>`);
  }
  out.push(`<text x="${(L + W - R) / 2}" y="${H - 12}" text-anchor="middle">parameters</text>`);
  out.push(`<rect x="${L}" y="${T}" width="${W - L - R}" height="${H - T - B}" fill="none" stroke="#888"/>`);
  const legend = (i: number, svg: string, text: string) => out.push(`<g transform="translate(${W - R + 12},${T + 10 + i * 18})">${svg}<text x="18" y="4">${text}</text></g>`);
  if (ref) {
    out.push(`<line x1="${L}" x2="${W - R}" y1="${y(ref.hit1)}" y2="${y(ref.hit1)}" stroke="#c33" stroke-dasharray="5,4"/>`);
    out.push(`<line x1="${L}" x2="${W - R}" y1="${y(ref.r20)}" y2="${y(ref.r20)}" stroke="#c33" stroke-dasharray="1,3"/>`);
    legend(0, `<line x1="0" x2="14" stroke="#c33" stroke-dasharray="5,4"/>`, "BM25 Hit@1");
    legend(1, `<line x1="0" x2="14" stroke="#c33" stroke-dasharray="1,3"/>`, "BM25 R@20");
  }
  legend(2, `<circle cx="7" r="4" fill="#236"/>`, "glance Hit@1");
  legend(3, `<circle cx="7" r="4" fill="white" stroke="#236"/>`, "glance R@20");
  legend(4, `<rect x="1" y="-6" width="12" height="12" fill="none" stroke="#383" stroke-width="2"/>`, "full ruling Hit@1");
  let i = 5;
  for (const r of rs) {
    if (!r.test) {
      legend(i++, "", `${r.label}: not measured`);
      continue;
    }
    // backbones of one size side by side (the data axis), 16 px apart around their size
    const same = rs.filter((o) => o.test && o.params === r.params);
    const px = x(r.params) + (same.indexOf(r) - (same.length - 1) / 2) * 16;
    out.push(`<circle cx="${px}" cy="${y(r.test.hit1)}" r="4" fill="#236"><title>${r.label} Hit@1 ${f3(r.test.hit1)}</title></circle>`);
    out.push(`<circle cx="${px}" cy="${y(r.test.r20)}" r="4" fill="white" stroke="#236"><title>${r.label} R@20 ${f3(r.test.r20)}</title></circle>`);
    if (r.ruled) out.push(`<rect x="${px - 6}" y="${y(r.ruled.ruling) - 6}" width="12" height="12" fill="none" stroke="#383" stroke-width="2"><title>${r.label} full ruling Hit@1 ${f3(r.ruled.ruling)}</title></rect>`);
    // the first of a group labelled on its left, the others on their right
    const left = same.length > 1 && same.indexOf(r) === 0;
    out.push(`<text x="${left ? px - 10 : px + 10}" y="${y(r.test.hit1) + 4}"${left ? ' text-anchor="end"' : ""}>${r.label}</text>`);
  }
  out.push("</svg>");
  return out.join("\n") + "\n";
}
