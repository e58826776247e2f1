// Pseudo-relevance feedback on a lexical match: does expanding the task with its first-pass leaders'
// salient terms raise R@20 beyond the plain match? A proxy for a feedback glance: the ℓ1 glance is
// close to a weighted match over gavel-mini's tokens ("BM25 over the backbone's own tokens" in
// docs/EXPERIMENTS.md), whose ceiling a plain match cannot pass. Validation only (SWE-Skills-Bench batches 1-5);
// test is read with --test.
//
// Expansion (RM3-like): the first pass's best m skills, each weighted by softmax(score / temperature);
// a term's weight is Σ_d p(d)·tf(t,d)/|d| × idf(t); the best E terms, scaled to sum to 1, are scored
// as a second query, and the final score is s(q) + λ·max s(q)·s_E(d)/max s_E.
//
// Usage: npx vite-node scripts/experiments/prf.ts -- [--tokens] [--budget 1536] [--test]
//   [--m 3,5,10] [--e 10,30] [--lambda 0.25,0.5,1] [--k1 3] [--b 1]
//   --tokens: terms are gavel-mini's token ids (each skill's first --budget tokens), not words.
import { defaultModelPaths } from "../../src/defaults.js";
import { Model } from "../../src/model/Model.js";
import { benchSplits } from "../lexical/bench-splits.js";
import { Bm25Index, bm25Tokens } from "../../src/lexical/bm25.js";

const args = process.argv.slice(2).filter((a) => a !== "--");
const opt = (n: string) => { const i = args.indexOf(n); return i >= 0 ? args.splice(i, 2)[1] : undefined; };
const list = (n: string, d: string) => (opt(n) ?? d).split(",").map(Number);
const tokens = args.includes("--tokens");
const readTest = args.includes("--test");
const budget = Number(opt("--budget") ?? 1536);
const k1 = Number(opt("--k1") ?? 3), b = Number(opt("--b") ?? 1);
const Ms = list("--m", "3,5,10"), Es = list("--e", "10,30"), lambdas = list("--lambda", "0.25,0.5,1");
const temp = Number(opt("--temp") ?? 1);

const { routable, splits } = await benchSplits();
const model = tokens ? await Model.load(defaultModelPaths().model, { contextSize: 512 }) : undefined;
const termsOf = async (text: string): Promise<string[]> => (model ? Array.from(await model.tokenizeAsync(text), (x) => `t${x}`) : bm25Tokens(text));
const t0 = Date.now();
const docs: string[][] = [];
for (const s of routable) {
  const t = await termsOf(`${s.name}\n${s.description}\n${s.body ?? ""}`);
  docs.push(tokens && budget > 0 ? t.slice(0, budget) : t);
}
const index = new Bm25Index(routable.map((s, i) => ({ id: s.id, name: "", description: "", body: docs[i].join(" ") })), { k1, b });
const df = new Map<string, number>();
for (const d of docs) for (const t of new Set(d)) df.set(t, (df.get(t) ?? 0) + 1);
const N = docs.length;
const idf = (t: string) => Math.log(1 + (N - (df.get(t) ?? 0) + 0.5) / ((df.get(t) ?? 0) + 0.5));
console.log(`${tokens ? `gavel-mini tokens, first ${budget}` : "words"}: ${N} skills indexed in ${((Date.now() - t0) / 1000).toFixed(0)} s; k1 ${k1} b ${b}`);

const top = (s: Float64Array, k: number) => {
  const idx: number[] = [];
  for (let i = 0; i < s.length; i++) {
    if (idx.length === k && s[i] <= s[idx[k - 1]]) continue;
    let j = idx.length < k ? idx.length : k - 1;
    if (idx.length < k) idx.push(i);
    while (j > 0 && s[idx[j - 1]] < s[i]) { idx[j] = idx[j - 1]; j--; }
    idx[j] = i;
  }
  return idx;
};

const splitNames = readTest ? ["validation", "test"] : ["validation"];
for (const name of splitNames) {
  const tasks = (splits as Record<string, { text: string; accepted: Set<string> }[]>)[name];
  const first = await Promise.all(tasks.map(async (t) => index.scores((await termsOf(t.text)).join(" "))));
  const rankOf = (s: Float64Array, acc: Set<string>) => top(s, 20).findIndex((i) => acc.has(routable[i].id));
  const report = (label: string, ranks: number[]) =>
    console.log(`${name} ${label.padEnd(34)} Hit@1 ${(ranks.filter((r) => r === 0).length / ranks.length).toFixed(3)} R@5 ${(ranks.filter((r) => r >= 0 && r < 5).length / ranks.length).toFixed(3)} R@20 ${(ranks.filter((r) => r >= 0).length / ranks.length).toFixed(3)}`);
  report("plain", first.map((s, i) => rankOf(s, tasks[i].accepted)));
  for (const m of Ms) for (const E of Es) {
    // the expansion of each task (independent of λ)
    const exp = first.map((s) => {
      const lead = top(s, m);
      const mx = s[lead[0]];
      const p = lead.map((i) => Math.exp((s[i] - mx) / (temp * Math.max(mx, 1e-9) / 10)));
      const ps = p.reduce((a, x) => a + x, 0);
      const w = new Map<string, number>();
      lead.forEach((i, k) => {
        const tf = new Map<string, number>();
        for (const t of docs[i]) tf.set(t, (tf.get(t) ?? 0) + 1);
        for (const [t, c] of tf) w.set(t, (w.get(t) ?? 0) + (p[k] / ps) * (c / docs[i].length) * idf(t));
      });
      const best = [...w.entries()].sort((x, y) => y[1] - x[1]).slice(0, E);
      const sE = new Float64Array(N);
      const tot = best.reduce((a, [, v]) => a + v, 0);
      for (const [t, v] of best) { const st = index.scores(t); for (let i = 0; i < N; i++) sE[i] += (v / tot) * st[i]; }
      let me = 0; for (let i = 0; i < N; i++) if (sE[i] > me) me = sE[i];
      return { sE, me, mx };
    });
    for (const lambda of lambdas) {
      const ranks = first.map((s, i) => {
        const { sE, me, mx } = exp[i];
        const f = new Float64Array(N);
        for (let j = 0; j < N; j++) f[j] = s[j] + (me > 0 ? lambda * mx * sE[j] / me : 0);
        return rankOf(f, tasks[i].accepted);
      });
      report(`m ${m} E ${E} λ ${lambda}`, ranks);
    }
  }
}
await model?.dispose();
