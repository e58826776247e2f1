/**
 * How much of a skill the glance would need to read: token-id BM25 (k1 3, b 1) and Σ idf of the
 * task's tokens present, over each skill's first L tokens (name, description and body tokenized by the
 * model), L = 512 … 4,096 and whole, against the tasks' golds (columns and tasks of glance-vectors.ts's
 * records in DIR). Slow: a few minutes per L over 30K skills.
 *
 *   npx vite-node scripts/select/budget-diag.ts -- BANK TASKS.jsonl DIR [BATCHES, default 1-5]
 */
import { aboveGold, openDiag } from "./diag-records.js";

const { library, model, skills, tasks, close } = await openDiag(process.argv.slice(2));
const N = skills.length;
const full: Int32Array[] = [];
const lens: number[] = [];
for (const s of skills) {
  const e = library.entry(s.id);
  const sk = await library.texts.get(e.contentHash);
  const t = await model.tokenizeAsync(`${sk.name}\n${sk.description}\n${sk.body}`);
  full.push(t); lens.push(t.length);
}
lens.sort((a, b) => a - b);
console.log(`skill tokens: p10 ${lens[Math.floor(N * 0.1)]} p50 ${lens[Math.floor(N * 0.5)]} p90 ${lens[Math.floor(N * 0.9)]} mean ${(lens.reduce((a, b) => a + b) / N).toFixed(0)}`);
const qs = tasks.map((t) => { const m = new Map<number, number>(); for (const x of model.tokenize(t.text)) m.set(x, (m.get(x) ?? 0) + 1); return m; });
for (const L of [512, 768, 1024, 1536, 2048, 4096, 1e9]) {
  const docs = full.map((d) => d.subarray(0, L));
  const df = new Map<number, number>();
  const tfs = docs.map((d) => { const m = new Map<number, number>(); for (const t of d) m.set(t, (m.get(t) ?? 0) + 1); for (const t of m.keys()) df.set(t, (df.get(t) ?? 0) + 1); return m; });
  const avg = docs.reduce((a, d) => a + d.length, 0) / N;
  const idf = (t: number) => Math.log((N + 1) / ((df.get(t) ?? 0) + 0.5));
  let h1 = 0, r20 = 0, h1b = 0, r20b = 0;
  tasks.forEach((t, i) => {
    const sc = new Float64Array(N), sb = new Float64Array(N);
    for (let s = 0; s < N; s++) {
      let v = 0, w = 0; const m = tfs[s];
      for (const [x, c] of qs[i]) { const f = m.get(x); if (!f) continue; v += c * idf(x) * f * 4 / (f + 3 * docs[s].length / avg); w += c * idf(x); }
      sc[s] = v; sb[s] = w;
    }
    for (const [x, st] of [[sc, 0], [sb, 1]] as [Float64Array, number][]) {
      const above = aboveGold(x, t.gold);
      if (st === 0) { if (above === 0) h1++; if (above < 20) r20++; } else { if (above === 0) h1b++; if (above < 20) r20b++; }
    }
  });
  const n = tasks.length;
  console.log(`L ${L >= 1e9 ? "whole" : L}: bm25 k1 3 b 1 Hit@1 ${(h1 / n).toFixed(3)} R@20 ${(r20 / n).toFixed(3)}; binary Σidf Hit@1 ${(h1b / n).toFixed(3)} R@20 ${(r20b / n).toFixed(3)}`);
}
await close();
