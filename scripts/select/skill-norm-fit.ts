/**
 * What a skill's size and its general pull do to the glance's ranking, from the whole-g records of
 * scripts/select/glance-vectors.ts: Hit@1 / R@5 / R@20 of the glance, and of the first stage
 * g + βB, under each correction of g:
 * - `len b`: g / (1 − b + b · n / avg n), n the skill's kept keys (BM25's length normalisation);
 * - `hub a REF`: g − a · μ(s), μ(s) the skill's mean g over the reference tasks of REF (another
 *   records folder; the same folder: leave-one-out);
 * - `z`: each task's g standardised per skill over the reference tasks ((g − μ) / σ).
 *
 *   npx vite-node scripts/select/skill-norm-fit.ts -- DIR [--ref REFDIR] [--beta 0.1] [--T 53.8]
 */
import { readFileSync } from "node:fs";

const argv = process.argv.slice(2).filter((a) => a !== "--");
const opt = (n: string, d: string): string => { const i = argv.indexOf(n); return i >= 0 ? argv.splice(i, 2)[1] : d; };
const refDir = opt("--ref", "");
const beta = Number(opt("--beta", "0.1"));
const T = Number(opt("--T", "53.8"));
const [dir] = argv;
if (!dir) throw new Error("usage: skill-norm-fit.ts DIR [--ref REFDIR]");

interface Task { id: string; gold: number[]; g: Float32Array; bm25: Float32Array }
const f32 = (s: string): Float32Array => { const b = Buffer.from(s, "base64"); return new Float32Array(b.buffer, b.byteOffset, b.length / 4).slice(); };
const load = (d: string): Task[] => readFileSync(`${d}/tasks.jsonl`, "utf8").split("\n").filter(Boolean).map((l) => {
  const r = JSON.parse(l) as { id: string; gold: number[]; g: string; bm25: string };
  return { id: r.id, gold: r.gold, g: f32(r.g), bm25: f32(r.bm25) };
});
const skills = JSON.parse(readFileSync(`${dir}/skills.json`, "utf8")) as { id: string; nKeys: number; distinct: number }[];
const tasks = load(dir);
const ref = refDir ? load(refDir) : tasks;
const N = skills.length;
const avgN = skills.reduce((a, s) => a + s.nKeys, 0) / N;
const sum = new Float64Array(N), sq = new Float64Array(N);
for (const t of ref) for (let s = 0; s < N; s++) { sum[s] += t.g[s]; sq[s] += t.g[s] * t.g[s]; }
const loo = !refDir;
const mu = (t: Task, s: number): number => loo ? (sum[s] - t.g[s]) / (ref.length - 1) : sum[s] / ref.length;
const sd = (t: Task, s: number): number => {
  const n = loo ? ref.length - 1 : ref.length;
  const m = mu(t, s);
  const e2 = (loo ? sq[s] - t.g[s] * t.g[s] : sq[s]) / n;
  return Math.sqrt(Math.max(e2 - m * m, 1e-12));
};

function metrics(score: (t: Task) => Float64Array): string {
  let h1 = 0, r5 = 0, r20 = 0;
  for (const t of tasks) {
    const x = score(t);
    let best = -Infinity;
    for (const c of t.gold) best = Math.max(best, x[c]);
    const gold = new Set(t.gold);
    let above = 0;
    for (let s = 0; s < N; s++) if (!gold.has(s) && x[s] > best) above++;
    if (above === 0) h1++;
    if (above < 5) r5++;
    if (above < 20) r20++;
  }
  const n = tasks.length;
  return `${(h1 / n).toFixed(3)} / ${(r5 / n).toFixed(3)} / ${(r20 / n).toFixed(3)}`;
}
const variants: [string, (t: Task, s: number) => number][] = [["glance as is", (t, s) => t.g[s]]];
for (const b of [0.25, 0.5, 0.75, 1]) variants.push([`len b ${b}`, (t, s) => t.g[s] / (1 - b + b * skills[s].nKeys / avgN)]);
for (const a of [0.25, 0.5, 0.75, 1]) variants.push([`hub a ${a}`, (t, s) => t.g[s] - a * mu(t, s)]);
variants.push(["z", (t, s) => (t.g[s] - mu(t, s)) / sd(t, s)]);
console.log(`${dir}: ${tasks.length} tasks, ${N} skills (avg ${avgN.toFixed(1)} keys); reference ${refDir || "leave-one-out"} (${ref.length}); first stage β ${beta}, T ${T}`);
console.log("| correction | glance Hit@1 / R@5 / R@20 | g' + βB Hit@1 / R@5 / R@20 |\n| --- | --- | --- |");
console.log(`| BM25 alone | ${metrics((t) => Float64Array.from(t.bm25))} | – |`);
for (const [name, f] of variants) {
  const g = (t: Task) => { const x = new Float64Array(N); for (let s = 0; s < N; s++) x[s] = f(t, s); return x; };
  const fused = (t: Task) => { const x = g(t); for (let s = 0; s < N; s++) x[s] += beta * t.bm25[s] / T; return x; };
  console.log(`| ${name} | ${metrics(g)} | ${metrics(fused)} |`);
}
