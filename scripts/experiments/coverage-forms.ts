// Which form of the winner's reference coverage best tells a short request a skill serves from an
// off-domain prompt over small libraries? For each record of the given files (per-query records over
// small libraries with their lexical read-outs: bench/results/2026-12-01-cpu-small-band-size/records/),
// the shipped first stage's winner is replayed and these read of it: gcov (task words weighed by their
// reference idf), idf2-idf4 (weighed by idf to that power), rare3 (the share of the task's three
// rarest words), content (weights idf − 4, floored at 0), maxHeld (the rarest held word's idf over
// that of an unseen word), and the first stage's V, g and B. Prints each one's AUC (in-domain over
// off-domain, the hand-written prompts) per file and pooled, and the in-domain share under the cut
// that lets 10% of the pooled prompts through. `--fit`: only the fitting rows (batches ≤ 5).
//
// Usage: npx vite-node scripts/experiments/coverage-forms.ts -- R/tiny-3-5.jsonl.gz R/oneline-3-5.jsonl.gz R/short-24.jsonl.gz R/short-124.jsonl.gz [--fit]
import { readFileSync, existsSync } from "node:fs";
import { readPerQuery, loadLibrary } from "../../lab/eval/io.js";
import { batchNumber } from "../../lab/eval/tasks.js";
import { replayAbstention } from "../../lab/eval/abstention-fit.js";
import { Projections } from "../../src/index.js";
import { bm25DocTokens, bm25Tokens } from "../../src/lexical/postings.js";
const files = process.argv.slice(2).filter((a) => a !== "--" && !a.startsWith("--"));
const c = JSON.parse(readFileSync("bench/results/2026-11-28-h200-default/selection.json", "utf8")).l1.chosen;
const ruling = { alpha: c.alpha, gamma: c.gamma, delta: c.delta, beta: c.beta, maxShortlist: 20, lexicalTemperature: c.T };
const ref = (await Projections.load("models/gavel-mini.projections.gguf")).referenceIdf!;
const texts = new Map<string,string>();
for (const f of ["bench/data/off-domain-prompts.jsonl","bench/data/short-requests-examples.jsonl","bench/results/2026-12-01-cpu-small-library/requests.jsonl"]) if (existsSync(f)) for (const l of readFileSync(f,"utf8").split("\n").filter(Boolean)) { const o = JSON.parse(l); texts.set(o.id, o.text ?? o.task); }
type Doc = { name: string; description: string; body?: string };
const cut = (d: Doc): Doc => ({ name: d.name, description: d.description.split(/(?<=\.) /)[0], body: (d.body ?? "").split("\n").find((l) => l.trim() !== "")?.replace(/^#+ */, "") ?? "" });
const examples = new Map((await loadLibrary(["examples/skills"])).skills.map((s) => [s.id, s as Doc]));
let pub: Map<string, Doc> | undefined;
async function held(id: string, oneline: boolean) { let d: Doc | undefined = examples.get(id); if (d && oneline) d = cut(d); if (!d) { pub ??= new Map((await loadLibrary(["../shared/data/skills-mit.jsonl.gz"])).skills.map((s) => [s.id, s as Doc])); d = pub.get(id)!; } return new Set(bm25DocTokens(d)); }
const unseen = Math.log(1 + (ref.documents + 0.5) / 0.5);
const forms: Record<string, (t: string[], h: Set<string>) => number> = {
  gcov: (t, h) => ref.coverage(t, (w) => h.has(w)),
  idf2: (t, h) => { let a = 0, b = 0; for (const w of new Set(t)) { const x = ref.idf(w) ** 2; a += x; if (h.has(w)) b += x; } return a ? b / a : 0; },
  idf3: (t, h) => { let a = 0, b = 0; for (const w of new Set(t)) { const x = ref.idf(w) ** 3; a += x; if (h.has(w)) b += x; } return a ? b / a : 0; },
  idf4: (t, h) => { let a = 0, b = 0; for (const w of new Set(t)) { const x = ref.idf(w) ** 4; a += x; if (h.has(w)) b += x; } return a ? b / a : 0; },
  rare3: (t, h) => { const ws = [...new Set(t)].map((w) => [w, ref.idf(w)] as const).sort((a, b) => b[1] - a[1]).slice(0, 3); let a = 0, b = 0; for (const [w, x] of ws) { a += x; if (h.has(w)) b += x; } return a ? b / a : 0; },
  content: (t, h) => { let a = 0, b = 0; for (const w of new Set(t)) { const x = Math.max(0, ref.idf(w) - 4); a += x; if (h.has(w)) b += x; } return a ? b / a : 0; },
  maxHeld: (t, h) => { let m = 0; for (const w of new Set(t)) if (h.has(w)) m = Math.max(m, ref.idf(w)); return m / unseen; },
};
function auc(inn: number[], off: number[]) { let s = 0; for (const a of inn) for (const b of off) s += a > b ? 1 : a === b ? 0.5 : 0; return s / (inn.length * off.length); }
const pooled: Record<string, { inn: number[]; off: number[] }> = {};
for (const file of files) {
  const oneline = file.includes("oneline");
  const recs = await readPerQuery(file);
  const vals: Record<string, { inn: number[]; off: number[] }> = {};
  for (const r of recs) { const x = replayAbstention(r as any, ruling); if (!x) continue; if (process.argv.includes("--fit") && !((batchNumber((r as any).batch) ?? Infinity) <= 5)) continue; const t = texts.get(r.id.replace(/@.*/, "")); if (t === undefined) continue;
    const h = await held(x.chosen, oneline); const tw = bm25Tokens(t);
    const extra: Record<string, number> = { V: (x.features as any).V, g: (x.features as any).g, B: (x.features as any).B ?? NaN };
    for (const [k, v] of Object.entries(extra)) { (vals[k] ??= { inn: [], off: [] })[r.offDomain ? "off" : "inn"].push(v); const P = (pooled[k] ??= { inn: [], off: [] }); P[r.offDomain ? "off" : "inn"].push(v); }
    for (const [k, f] of Object.entries(forms)) { const v = f(tw, h); (vals[k] ??= { inn: [], off: [] })[r.offDomain ? "off" : "inn"].push(v); const P = (pooled[k] ??= { inn: [], off: [] }); P[r.offDomain ? "off" : "inn"].push(v); } }
  console.log(file.split("/").pop(), Object.entries(vals).map(([k, v]) => `${k} ${auc(v.inn, v.off).toFixed(3)} (${v.inn.length}/${v.off.length})`).join("  "));
}
for (const [k, v] of Object.entries(pooled)) { const offs = [...v.off].sort((a, b) => b - a); const t = offs[Math.floor(0.1 * offs.length)]; console.log(k, "cut at 10% off", t.toFixed(3), "in declined", (v.inn.filter((x) => x <= t).length / v.inn.length).toFixed(3)); }
console.log("pooled", Object.entries(pooled).map(([k, v]) => `${k} ${auc(v.inn, v.off).toFixed(3)}`).join("  "));
