// Scores `gavel eval --per-query` records again, offline: Hit@1 and R@20 of the glance, and of the
// ruling and its two ablations (g+αL, g+γV) under given constants: the projections' calibrated ones
// and the paper's. The records hold the verdict's read-outs for the top candidates whatever Δ is, so
// any (α, γ, Δ) can be replayed exactly (the arithmetic of route(), src/route/ruling.ts).
//
// With --bm25 F (records of `gavel eval --methods bm25 --per-query F`, e.g. over the unpacked library
// here on the CPU), a BM25 row over the same tasks comes first, so the table has issue 5's five rows.
//
// Usage: npx vite-node scripts/device/score-per-query.ts -- <projections.gguf> <records.jsonl> [more.jsonl …] [--bm25 F]
import { readPerQuery } from "../../src/eval/io.js";
import { chooseByRuling } from "../../src/route/index.js";
import { PAPER_RULING } from "../../src/eval/calibrate.js";
import { Projections } from "../../src/projections/projections.js";
import type { PerQueryRecord } from "../../src/eval/evaluate.js";

const args = process.argv.slice(2).filter((a) => a !== "--");
const bmAt = args.indexOf("--bm25");
const bm25Path = bmAt >= 0 ? args.splice(bmAt, 2)[1] : undefined;
const [projPath, ...files] = args;
const proj = await Projections.load(projPath);
const records: PerQueryRecord[] = [];
for (const f of files) records.push(...(await readPerQuery(f)));
const maxShortlist = proj.maxShortlist;
const rows: string[] = [];
if (bm25Path) {
  const bm = new Map((await readPerQuery(bm25Path)).map((r) => [r.id, r]));
  const missing = records.filter((r) => !bm.get(r.id)?.bm25);
  if (missing.length) throw new Error(`${bm25Path} has no BM25 list for ${missing.length} of the tasks (first: ${missing[0].id})`);
  const list = (r: PerQueryRecord) => bm.get(r.id)!.bm25!;
  const hit = records.filter((r) => r.accepted.includes(list(r)[0])).length / records.length;
  const rec = records.filter((r) => list(r).slice(0, 20).some((id) => r.accepted.includes(id))).length / records.length;
  rows.push(`| BM25 | ${hit.toFixed(3)} | ${rec.toFixed(3)} |`);
}
const rate = (f: (r: PerQueryRecord) => boolean) => records.filter(f).length / records.length;
const hitGlance = rate((r) => !!r.glance?.length && r.accepted.includes(r.glance[0].skill));
const r20 = rate((r) => (r.glance ?? []).slice(0, 20).some((c) => r.accepted.includes(c.skill)));
rows.push(`| glance | ${hitGlance.toFixed(3)} | ${r20.toFixed(3)} |`);
for (const [label, c] of [
  [`calibrated (α=${proj.alpha}, γ=${proj.gamma}, Δ=${proj.delta})`, { alpha: proj.alpha, gamma: proj.gamma, delta: proj.delta }],
  [`paper (α=${PAPER_RULING.alpha}, γ=${PAPER_RULING.gamma}, Δ=${PAPER_RULING.delta})`, PAPER_RULING],
] as const) {
  for (const [name, p] of [
    ["ruling g+αL+γV", { ...c }],
    ["g+αL", { ...c, gamma: 0 }],
    ["g+γV", { ...c, alpha: 0 }],
  ] as const) {
    const hit = rate((r) => {
      const chosen = chooseByRuling(r.verdict ?? [], { ...p, maxShortlist });
      return chosen !== null && r.accepted.includes(chosen);
    });
    rows.push(`| ${name}, ${label} | ${hit.toFixed(3)} | ${r20.toFixed(3)} |`);
  }
}
console.log(`${records.length} tasks from ${files.join(", ")}\n\n| method | Hit@1 | R@20 |\n| --- | --- | --- |\n${rows.join("\n")}`);
