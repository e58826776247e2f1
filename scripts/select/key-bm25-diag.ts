/**
 * What the glance can see: BM25 over each skill's kept key tokens (token ids as terms; the task
 * tokenized whole by the model, or its last 1,400 tokens), and Σ idf over the task's tokens a skill
 * keeps, against the tasks' golds. Columns follow glance-vectors.ts's records (DIR/skills.json, the
 * tasks in DIR/tasks.jsonl).
 *
 *   npx vite-node scripts/select/key-bm25-diag.ts -- BANK TASKS.jsonl DIR [BATCHES, default 1-5]
 */
import { aboveGold, openDiag } from "./diag-records.js";

const { library, model, skills, tasks, close } = await openDiag(process.argv.slice(2));
const N = skills.length;
const docs = skills.map((s) => library.entry(s.id).keyTokens);
const df = new Map<number, number>();
const tfs = docs.map((d) => { const m = new Map<number, number>(); for (const t of d) m.set(t, (m.get(t) ?? 0) + 1); for (const t of m.keys()) df.set(t, (df.get(t) ?? 0) + 1); return m; });
const avg = docs.reduce((a, d) => a + d.length, 0) / N;
const idf = (t: number) => Math.log((N + 1) / ((df.get(t) ?? 0) + 0.5));
const variants: Record<string, { h1: number; r20: number }> = {};
for (const t of tasks) {
  const all = Array.from(model.tokenize(t.text));
  for (const [name, q, k1, b, binary] of [["bm25 k1 3 b 1, whole task", all, 3, 1, false], ["bm25 k1 1.2 b .75, whole task", all, 1.2, 0.75, false], ["bm25 k1 3 b 1, last 1400", all.slice(-1400), 3, 1, false], ["Σ idf over query tokens present (binary)", all, 0, 0, true], ["bm25 k1 3 b 0, whole task", all, 3, 0, false]] as [string, number[], number, number, boolean][]) {
    const qtf = new Map<number, number>(); for (const x of q) qtf.set(x, (qtf.get(x) ?? 0) + 1);
    const sc = new Float64Array(N);
    for (let s = 0; s < N; s++) {
      let v = 0; const m = tfs[s];
      for (const [x, c] of qtf) { const f = m.get(x); if (!f) continue; v += c * idf(x) * (binary ? 1 : f * (k1 + 1) / (f + k1 * (1 - b + b * docs[s].length / avg))); }
      sc[s] = v;
    }
    const above = aboveGold(sc, t.gold);
    const v = (variants[name] ??= { h1: 0, r20: 0 });
    if (above === 0) v.h1++; if (above < 20) v.r20++;
  }
}
for (const [k, v] of Object.entries(variants)) console.log(`${k}: Hit@1 ${(v.h1 / tasks.length).toFixed(3)} R@20 ${(v.r20 / tasks.length).toFixed(3)}`);
await close();
