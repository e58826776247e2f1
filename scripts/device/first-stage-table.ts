/**
 * The first stage g + βB from glance-only records (no verdict), on the CPU: T fitted by likelihood on
 * validation (fitLexicalTemperature), β chosen on validation Hit@1 over calibrate's grid (0 and the
 * quarter decades 1e-4 … 1; ties go to the smaller β), both reported on test. The pool is the glance's
 * recorded top 20 alone, so records of runs that also read BM25's leaders (`also`) are replayed over
 * the same pool, and every row of the table is made the same way.
 *
 * Input: one or more folders, each with val.jsonl.gz and test.jsonl.gz carrying lexical read-outs
 * (scripts/device/lexical-records.ts), named on the command line as label=folder.
 * Usage: npx vite-node scripts/device/first-stage-table.ts -- [--union] s11=bench/results/…/mini/full-text …
 *
 * --union: the pool is the glance's top 20 and the records' `also` entries (BM25's full-text leaders,
 * each given g by `gavel eval --also`), as the default route's first stage sees them over a whole bank
 * (the skills in neither list have g near 0 and B far below: they cannot lead).
 */
import { readPerQuery } from "../../lab/eval/io.js";
import { fitLexicalTemperature, lexicalB } from "../../lab/eval/lexical-fit.js";
import { firstStageOrder } from "../../src/route/index.js";
import type { PerQueryRecord } from "../../lab/eval/evaluate.js";

const BETAS = [0, ...Array.from({ length: 17 }, (_, i) => Number((10 ** ((i - 16) / 4)).toPrecision(6)))];
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / (xs.length || 1);
const f3 = (x: number) => x.toFixed(3);

const argv = process.argv.slice(2).filter((a) => a !== "--");
const UNION = argv.includes("--union");

/** The glance's recorded top 20 (with --union, and BM25's leaders), reordered by g + βB. */
function ranked(r: PerQueryRecord, beta: number, T: number): string[] {
  const seen = new Set<string>();
  const cands = [...(r.glance ?? []), ...(UNION ? (r.also ?? []) : [])].filter((c) => !seen.has(c.skill) && seen.add(c.skill));
  const pool = cands.map((c) => ({ ...c, B: lexicalB(r.lexical, c.s, T) }));
  return firstStageOrder(pool, beta).map((c) => c.skill);
}
const hit1 = (r: PerQueryRecord, ids: readonly string[] | undefined) => (ids?.[0] !== undefined && r.accepted.includes(ids[0]) ? 1 : 0);
/** BM25's own order: the record's list, else the lexical read-out's top (glance-only runs). */
const bm25 = (r: PerQueryRecord) => r.bm25 ?? r.lexical?.top.map((t) => t.skill);
const hitK = (r: PerQueryRecord, ids: readonly string[] | undefined, k = 20) => ((ids ?? []).slice(0, k).some((id) => r.accepted.includes(id)) ? 1 : 0);

console.log("| pair | split (tasks) | BM25 Hit@1 / R@20 | glance Hit@1 / R@20 | g + βB Hit@1 / R@20 (β, T fitted on validation) |");
console.log("| --- | --- | --- | --- | --- |");
for (const arg of argv.filter((a) => a !== "--union")) {
  const [label, dir] = arg.includes("=") ? arg.split("=") : [arg, arg];
  const val = (await readPerQuery(`${dir}/val.jsonl.gz`)).filter((r) => !r.offDomain && r.lexical);
  const test = (await readPerQuery(`${dir}/test.jsonl.gz`)).filter((r) => !r.offDomain && r.lexical);
  const T = fitLexicalTemperature(val.map((r) => r.lexical!)).temperature;
  let beta = 0, best = -1;
  for (const b of BETAS) {
    const h = mean(val.map((r) => hit1(r, ranked(r, b, T))));
    if (h > best) [best, beta] = [h, b];
  }
  for (const [name, recs] of [["val 1–5", val], ["test 6–10", test]] as const) {
    const fs = recs.map((r) => ranked(r, beta, T));
    const gl = recs.map((r) => r.glance?.map((c) => c.skill));
    console.log(
      `| ${label} | ${name} (${recs.length}) | ${f3(mean(recs.map((r) => hit1(r, bm25(r)))))} / ${f3(mean(recs.map((r) => hitK(r, bm25(r)))))} | ` +
        `${f3(mean(recs.map((r, i) => hit1(r, gl[i]))))} / ${f3(mean(recs.map((r, i) => hitK(r, gl[i]))))} | ` +
        `${f3(mean(recs.map((r, i) => hit1(r, fs[i]))))} / ${f3(mean(recs.map((r, i) => hitK(r, fs[i]))))} (β ${beta}, T ${T}) |`,
    );
  }
}
