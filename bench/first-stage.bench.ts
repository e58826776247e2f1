/**
 * What the lexical expert adds to a route at library scale (issue 13's ≤ 5 ms target), on this CPU:
 * for each task of SWE-Skills-Bench batches 6–10 over the benchmark library (~30.6K skills, full
 * text), the steps `decide` (src/route/decide.ts) runs once the glance is done: BM25 of the whole
 * library (the one scoring loop the bank's lexicon shares with Bm25Index), the normaliser log Σ
 * exp(BM25/T), B by glance column, and the first stage's Δ-shortlist by g + βB. The glance's g is
 * random here (its cost is the glance's, not B's); T, β, Δ are the ℓ7 candidate's calibrated ones.
 *
 *   npm run bench -- first-stage
 */
import { join } from "node:path";
import { loadLibrary } from "../lab/eval/io.js";
import { loadTasks, selectTasks } from "../lab/eval/tasks.js";
import { Bm25Index } from "../src/lexical/bm25.js";
import { logPartition } from "../src/lexical/posterior.js";
import { firstStageShortlist } from "../src/route/ruling.js";

const shared = join(process.cwd(), "..", "shared", "data");
const { skills } = await loadLibrary([join(shared, "swe-skills-bench", "skills.jsonl"), join(shared, "skills-mit.jsonl.gz")]);
const routable = skills.filter((s) => !s.disableModelInvocation);
const index = new Bm25Index(routable);
const tasks = selectTasks(await loadTasks(join(shared, "swe-skills-bench", "tasks.jsonl")), { batches: "6-10" });
const T = 38.0546, beta = 0.1, delta = 0.008858;
const N = index.size;
// a glance's ranking: columns in a shuffled order of the library, g descending
const column = Int32Array.from({ length: N }, (_, i) => i).sort(() => Math.random() - 0.5);
const ranked = Array.from({ length: N }, (_, i) => ({ column: column[i], skill: index.ids[column[i]], g: Math.random() * 0.1 })).sort((a, b) => b.g - a.g);
index.scores(tasks[0].text); // lays out the postings
const total: number[] = [], query: number[] = [];
for (const t of tasks) {
  const t0 = performance.now();
  const s = index.scores(t.text);
  const t1 = performance.now();
  const z = logPartition(s, T);
  const B = new Float64Array(N);
  for (let c = 0; c < N; c++) B[c] = s[c] / T - z;
  firstStageShortlist(ranked, delta, 20, beta, (c) => B[c.column]);
  total.push(performance.now() - t0);
  query.push(t1 - t0);
}
const q = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.floor(p * (xs.length - 1))].toFixed(2);
console.log(`${tasks.length} tasks over ${N} skills: B's whole route-time part median ${q(total, 0.5)} ms, p90 ${q(total, 0.9)} ms, max ${q(total, 1)} ms; of which the BM25 query median ${q(query, 0.5)} ms`);
