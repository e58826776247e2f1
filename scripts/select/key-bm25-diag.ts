/**
 * What the glance can see: BM25 over each skill's kept key tokens (token ids as terms; the task
 * tokenized whole by the model, or its last 1,400 tokens), and Σ idf over the task's tokens a skill
 * keeps, against the tasks' golds. Columns follow glance-vectors.ts's records (DIR/skills.json, the
 * tasks in DIR/tasks.jsonl).
 *
 *   npx vite-node scripts/select/key-bm25-diag.ts -- BANK TASKS.jsonl DIR [BATCHES, default 1-5]
 */
import { readFileSync } from "node:fs";
import { defaultModelPaths } from "../../src/defaults.js";
import { Model } from "../../src/model/Model.js";
import { Projections } from "../../src/projections/projections.js";
import { Library } from "../../src/bank/library.js";
import { loadTasks, selectTasks } from "../../lab/eval/tasks.js";

const [bankDir, tasksPath, dir, batches = "1-5"] = process.argv.slice(2).filter((a) => a !== "--");
const { projections: projPath, model: modelPath } = defaultModelPaths();
const projections = await Projections.load(projPath);
const library = await Library.openSnapshot(bankDir, projections);
const model = await Model.load(modelPath, { contextSize: 512 });
const skills = JSON.parse(readFileSync(`${dir}/skills.json`, "utf8")) as { id: string }[];
const N = skills.length;
const docs = skills.map((s) => library.entry(s.id).keyTokens);
const df = new Map<number, number>();
const tfs = docs.map((d) => { const m = new Map<number, number>(); for (const t of d) m.set(t, (m.get(t) ?? 0) + 1); for (const t of m.keys()) df.set(t, (df.get(t) ?? 0) + 1); return m; });
const avg = docs.reduce((a, d) => a + d.length, 0) / N;
const recs = new Map(readFileSync(`${dir}/tasks.jsonl`, "utf8").split("\n").filter(Boolean).map((l) => { const r = JSON.parse(l) as { id: string; gold: number[] }; return [r.id, r.gold]; }));
const tasks = selectTasks(await loadTasks(tasksPath), { batches }).filter((t) => recs.has(t.id));
const idf = (t: number) => Math.log((N + 1) / ((df.get(t) ?? 0) + 0.5));
const variants: Record<string, { h1: number; r20: number }> = {};
for (const t of tasks) {
  const gold = new Set(recs.get(t.id)!);
  const all = Array.from(model.tokenize(t.text));
  for (const [name, q, k1, b, binary] of [["bm25 k1 3 b 1, whole task", all, 3, 1, false], ["bm25 k1 1.2 b .75, whole task", all, 1.2, 0.75, false], ["bm25 k1 3 b 1, last 1400", all.slice(-1400), 3, 1, false], ["Σ idf over query tokens present (binary)", all, 0, 0, true], ["bm25 k1 3 b 0, whole task", all, 3, 0, false]] as [string, number[], number, number, boolean][]) {
    const qtf = new Map<number, number>(); for (const x of q) qtf.set(x, (qtf.get(x) ?? 0) + 1);
    const sc = new Float64Array(N);
    for (let s = 0; s < N; s++) {
      let v = 0; const m = tfs[s];
      for (const [x, c] of qtf) { const f = m.get(x); if (!f) continue; v += c * idf(x) * (binary ? 1 : f * (k1 + 1) / (f + k1 * (1 - b + b * docs[s].length / avg))); }
      sc[s] = v;
    }
    let best = -Infinity; for (const c of gold) best = Math.max(best, sc[c]);
    let above = 0; for (let s = 0; s < N; s++) if (!gold.has(s) && sc[s] > best) above++;
    const v = (variants[name] ??= { h1: 0, r20: 0 });
    if (above === 0) v.h1++; if (above < 20) v.r20++;
  }
}
for (const [k, v] of Object.entries(variants)) console.log(`${k}: Hit@1 ${(v.h1 / tasks.length).toFixed(3)} R@20 ${(v.r20 / tasks.length).toFixed(3)}`);
await library.close(); await model.dispose();
