// Would the glance's rows gain from a word's idf instead of their token's? A lexical stand-in for the
// ℓ1 glance (docs/EXPERIMENTS.md, "BM25 over the backbone's own tokens"): BM25 saturation over gavel-mini's
// token ids in each skill's first L tokens, each task token weighed by
//   tok      its token's idf over the skills (what the shipped rows use),
//   word     the idf of the lexical word the token lies in (whole texts' word df),
//   word/n   that idf shared among the word's tokens,
//   max      the larger of the two,
//   final    the word's idf on the word's last token only (the ℓ1 state that has read the word),
// on SWE-Skills-Bench validation (batches 1-5) and test (6-10) over the benchmark library.
//
// Usage: NODE_OPTIONS=--max-old-space-size=14000 npx vite-node scripts/experiments/word-rows.ts -- [--budget 1536] [--k1 3] [--b 1]
import { defaultModelPaths } from "../../src/defaults.js";
import { Model } from "../../src/model/Model.js";
import { benchSplits } from "../lexical/bench-splits.js";
import { bm25DocTokens } from "../../src/lexical/postings.js";

const args = process.argv.slice(2).filter((a) => a !== "--");
const opt = (n: string) => { const i = args.indexOf(n); return i >= 0 ? args.splice(i, 2)[1] : undefined; };
const k1 = Number(opt("--k1") ?? 3);
const b = Number(opt("--b") ?? 1);
const budget = Number(opt("--budget") ?? 1536);

const { routable, splits } = await benchSplits();

const model = await Model.load(defaultModelPaths().model, { contextSize: 512 });
const N = routable.length;
const t0 = Date.now();
// word df over whole texts (the lexical expert's words)
const wordDf = new Map<string, number>();
// token postings over each skill's first `budget` tokens
const post = new Map<number, number[]>(); // token -> [doc, tf, doc, tf, ...]
const len = new Float64Array(N);
for (let d = 0; d < N; d++) {
  const s = routable[d];
  for (const w of new Set(bm25DocTokens(s))) wordDf.set(w, (wordDf.get(w) ?? 0) + 1);
  let ids = await model.tokenizeAsync(`${s.name}\n${s.description}\n${s.body ?? ""}`);
  if (budget > 0) ids = ids.subarray(0, budget);
  len[d] = ids.length;
  const tf = new Map<number, number>();
  for (const t of ids) tf.set(t, (tf.get(t) ?? 0) + 1);
  for (const [t, f] of tf) {
    let p = post.get(t);
    if (!p) post.set(t, (p = []));
    p.push(d, f);
  }
}
let avg = 0;
for (const l of len) avg += l;
avg /= N;
const idf = (df: number) => Math.log(1 + (N - df + 0.5) / (df + 0.5));
const tokIdf = (t: number) => idf((post.get(t)?.length ?? 0) / 2);
const wIdf = (w: string) => idf(wordDf.get(w) ?? 0);
console.log(`${N} skills in ${((Date.now() - t0) / 1000).toFixed(0)} s; budget ${budget || "whole"}, k1 ${k1}, b ${b}, mean length ${avg.toFixed(0)}`);

/** Each task token with the lexical word it lies in (undefined for punctuation and space) and that word's token count. */
async function taskTokens(text: string): Promise<{ t: number; word?: string; n: number; last: boolean }[]> {
  const ids = await model.tokenizeAsync(text);
  const lower = text.toLowerCase();
  // word spans by character
  const wordAt = new Int32Array(lower.length).fill(-1);
  const words: string[] = [];
  for (const m of lower.matchAll(/[\p{L}\p{N}]+/gu)) {
    for (let i = m.index!; i < m.index! + m[0].length; i++) wordAt[i] = words.length;
    words.push(m[0]);
  }
  const out: { t: number; w: number }[] = [];
  let pos = 0;
  for (const t of ids) {
    const piece = model.tokenPiece(t).replace(/▁/g, " ").toLowerCase();
    let at = piece.length > 0 ? lower.indexOf(piece, pos) : -1;
    if (at < 0 || at > pos + 8) at = pos; // byte pieces and the like: stay in place
    let w = -1;
    for (let i = at; i < Math.min(lower.length, at + Math.max(1, piece.length)); i++) if (wordAt[i] >= 0) { w = wordAt[i]; break; }
    out.push({ t, w });
    pos = at + piece.length;
  }
  const count = new Map<number, number>();
  for (const o of out) if (o.w >= 0) count.set(o.w, (count.get(o.w) ?? 0) + 1);
  return out.map((o, i) => ({
    t: o.t,
    word: o.w >= 0 ? words[o.w] : undefined,
    n: o.w >= 0 ? count.get(o.w)! : 1,
    last: o.w >= 0 && (i + 1 >= out.length || out[i + 1].w !== o.w),
  }));
}

type Tok = Awaited<ReturnType<typeof taskTokens>>[number];
const variants: Record<string, (x: Tok) => number> = {
  tok: (x) => tokIdf(x.t),
  word: (x) => (x.word ? wIdf(x.word) : tokIdf(x.t)),
  "word/n": (x) => (x.word ? wIdf(x.word) / x.n : tokIdf(x.t)),
  max: (x) => Math.max(tokIdf(x.t), x.word ? wIdf(x.word) : 0),
  final: (x) => (x.word ? (x.last ? wIdf(x.word) : 0) : 0),
  "final+tok": (x) => (x.word && x.last ? Math.max(tokIdf(x.t), wIdf(x.word)) : tokIdf(x.t)),
};
const toks = Object.fromEntries(await Promise.all(Object.entries(splits).map(async ([k, ts]) =>
  [k, await Promise.all(ts.map((t) => taskTokens(t.text)))] as const)));

const norm = (k1 * b) / avg, base = k1 * (1 - b);
const scores = new Float64Array(N);
for (const [name, weight] of Object.entries(variants)) {
  const parts: string[] = [];
  for (const [k, ts] of Object.entries(splits)) {
    let hit1 = 0, r20 = 0;
    ts.forEach((task, i) => {
      scores.fill(0);
      for (const x of toks[k][i]) {
        const w = weight(x) * (k1 + 1);
        if (!(w > 0)) continue;
        const p = post.get(x.t);
        if (!p) continue;
        for (let j = 0; j < p.length; j += 2) scores[p[j]] += (w * p[j + 1]) / (p[j + 1] + base + norm * len[p[j]]);
      }
      const top: number[] = [];
      for (let d = 0; d < N; d++) if (scores[d] > 0) top.push(d);
      top.sort((x, y) => scores[y] - scores[x] || x - y);
      const rank = top.slice(0, 20).findIndex((d) => task.accepted.has(routable[d].id));
      if (rank === 0) hit1++;
      if (rank >= 0) r20++;
    });
    parts.push(`${k} (${ts.length}) Hit@1 ${(hit1 / ts.length).toFixed(3)} R@20 ${(r20 / ts.length).toFixed(3)}`);
  }
  console.log(`${name.padEnd(10)} ${parts.join("  ")}`);
}
await model.dispose();
