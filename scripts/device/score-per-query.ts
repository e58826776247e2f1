// Scores `gavel eval --per-query` records again, offline: Hit@1 and R@20 of the glance, and of the
// ruling and its two ablations (g+αL, g+γV) under given constants: the projections' calibrated ones
// and the paper's. The records hold the verdict's read-outs for the top candidates whatever Δ is, so
// any (α, γ, Δ) can be replayed exactly (the arithmetic of route(), src/route/ruling.ts).
//
// With --bm25 F (records of `gavel eval --methods bm25 --per-query F`, e.g. over the unpacked library
// here on the CPU), a BM25 row over the same tasks comes first, so the table has issue 5's five rows.
//
// With --lexical-val V (issue 13), the records must carry the lexical expert's read-outs
// (scripts/device/lexical-records.ts), and V is the validation records with them: every constant of
// the lexical rows (T, the first stage's β, the ruling's β with α, γ, Δ) is fitted on V, never on the
// records scored. Rows added: B alone, g + βB (exact over the glance's list; bounds over the library),
// the union of both top-20 lists, and the full ruling with and without B.
//
// Usage: npx vite-node scripts/device/score-per-query.ts -- <projections.gguf> <records.jsonl> [more.jsonl …] [--bm25 F] [--lexical-val V]
import { readPerQuery } from "../../lab/eval/io.js";
import { chooseByRuling, type RulingParams } from "../../src/route/index.js";
import { calibrate, PAPER_RULING } from "../../lab/eval/calibrate.js";
import { Projections } from "../../src/projections/projections.js";
import type { PerQueryRecord } from "../../lab/eval/evaluate.js";
import { fitFirstStageBeta, fitLexicalTemperature, firstStageRates, lexicalB, unionRecall, type LexicalRecord } from "../../lab/eval/lexical-fit.js";

const args = process.argv.slice(2).filter((a) => a !== "--");
const option = (name: string) => {
  const at = args.indexOf(name);
  return at >= 0 ? args.splice(at, 2)[1] : undefined;
};
const bm25Path = option("--bm25");
const lexicalVal = option("--lexical-val");
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
const rulingHit = (p: RulingParams & { beta?: number }, temperature?: number) =>
  rate((r) => {
    const verdict = (r.verdict ?? []).map((c) => (temperature === undefined ? c : { ...c, B: lexicalB(r.lexical, c.s, temperature) }));
    const chosen = chooseByRuling(verdict, { ...p, maxShortlist });
    return chosen !== null && r.accepted.includes(chosen);
  });
for (const [label, c] of [
  [`calibrated (α=${proj.alpha}, γ=${proj.gamma}, Δ=${proj.delta})`, { alpha: proj.alpha, gamma: proj.gamma, delta: proj.delta }],
  [`paper (α=${PAPER_RULING.alpha}, γ=${PAPER_RULING.gamma}, Δ=${PAPER_RULING.delta})`, PAPER_RULING],
] as const) {
  for (const [name, p] of [
    ["ruling g+αL+γV", { ...c }],
    ["g+αL", { ...c, gamma: 0 }],
    ["g+γV", { ...c, alpha: 0 }],
  ] as const) {
    rows.push(`| ${name}, ${label} | ${rulingHit({ ...p, maxShortlist }).toFixed(3)} | ${r20.toFixed(3)} |`);
  }
}
if (lexicalVal) rows.push(...(await lexicalRows(await readPerQuery(lexicalVal))));
console.log(`${records.length} tasks from ${files.join(", ")}\n\n| method | Hit@1 | R@20 |\n| --- | --- | --- |\n${rows.join("\n")}`);

/** The lexical expert's rows, every constant fitted on `val`. */
async function lexicalRows(val: PerQueryRecord[]): Promise<string[]> {
  const lexicals = (rs: PerQueryRecord[], what: string) => rs.map((r) => {
    if (!r.lexical) throw new Error(`${what} record ${r.id} has no lexical read-outs (scripts/device/lexical-records.ts)`);
    return r.lexical as LexicalRecord;
  });
  lexicals(records, "scored");
  const T = fitLexicalTemperature(lexicals(val, "validation")).temperature;
  const betas = Array.from({ length: 17 }, (_, i) => Number((10 ** ((i - 16) / 4)).toPrecision(6)));
  const out: string[] = [];
  const bHit = rate((r) => r.accepted.includes(r.lexical!.top[0]?.skill));
  const bR20 = rate((r) => r.lexical!.top.slice(0, 20).some((c) => r.accepted.includes(c.skill)));
  out.push(`| B alone (log softmax of BM25 / T, T=${T}: BM25's order) | ${bHit.toFixed(3)} | ${bR20.toFixed(3)} |`);
  const first = fitFirstStageBeta(val, T, betas);
  const f = firstStageRates(records, first.beta, T);
  out.push(`| g + βB over the glance's top 20 (β=${first.beta}; exact) | ${f.pool.toFixed(3)} | ${r20.toFixed(3)} |`);
  out.push(`| g + βB over the library (β=${first.beta}; bounds from records) | ${f.low.toFixed(3)} … ${f.high.toFixed(3)} | – |`);
  out.push(`| union of glance top 20 and B top 20 (40 candidates; recall only) | – | ${unionRecall(records, 20).toFixed(3)} |`);
  const joint = calibrate(val, { maxShortlist });
  const forced = calibrate(val, { maxShortlist, grid: { betas } });
  const without = calibrate(val, { maxShortlist, lexical: false });
  for (const [name, fit] of [["full ruling without B", without], ["full ruling with B, β fitted jointly (0 allowed)", joint], ["full ruling with B, β > 0 forced", forced]] as const) {
    const hit = rulingHit({ alpha: fit.alpha, gamma: fit.gamma, delta: fit.delta, beta: fit.beta, maxShortlist }, fit.beta > 0 ? fit.lexicalTemperature : undefined);
    out.push(`| ${name} (α=${fit.alpha}, γ=${fit.gamma}, Δ=${fit.delta.toPrecision(4)}, β=${fit.beta}; val ${fit.hitAt1.toFixed(3)}) | ${hit.toFixed(3)} | ${r20.toFixed(3)} |`);
  }
  // The pipeline the router can run from the glance's top 20: first stage g' = g + β₁B over that list,
  // Δ on g', the verdict on the shortlist, S = g' + αL + γV (so β = β₁ in the ruling). Exact from records:
  // L and V are known for the whole list. α, γ, Δ are calibrated on validation records transformed alike.
  const staged = (rs: PerQueryRecord[]) => rs.map((r) => ({
    ...r,
    lexical: undefined,
    verdict: (r.verdict ?? []).map((c) => ({ ...c, g: c.g + first.beta * lexicalB(r.lexical, c.s, T) })).sort((a, b) => b.g - a.g),
  }));
  const st = calibrate(staged(val), { maxShortlist, lexical: false });
  const stHit = staged(records).filter((r) => {
    const chosen = chooseByRuling(r.verdict, { alpha: st.alpha, gamma: st.gamma, delta: st.delta, maxShortlist });
    return chosen !== null && r.accepted.includes(chosen);
  }).length / records.length;
  out.push(`| first stage g + βB over the glance's top 20 (β=${first.beta}), then the full ruling S = g + βB + αL + γV (α=${st.alpha}, γ=${st.gamma}, Δ=${st.delta.toPrecision(4)}; shortlist ${st.avgShortlist.toFixed(2)}; val ${st.hitAt1.toFixed(3)}) | ${stHit.toFixed(3)} | ${r20.toFixed(3)} |`);
  out.push(`\nvalidation (${val.length} tasks): T=${T}; first stage g+βB β=${first.beta}: exact over the glance's list ${first.rates.pool.toFixed(3)}, library ${first.rates.low.toFixed(3)} … ${first.rates.high.toFixed(3)}`);
  return out;
}
