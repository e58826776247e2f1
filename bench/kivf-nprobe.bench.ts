/**
 * The key IVF's nprobe on an installed bank, against the exact glance: the examples' 22 requests
 * (examples/demo-tasks.json, examples/everyday-tasks.json) and SWE-Skills-Bench task statements,
 * each encoded once as a route does, then `KeyIvf.glance` as a route calls it (k from the vote share,
 * int8 codes and the list bound) at `nprobe: "all"` (the exact glance, bit for bit) and at C/d for each
 * divisor d, with each probe spread (`even`: every row probes C/d lists; `weight`: C/d on average,
 * shared out by the rows' weights, as the route does). Per setting: the top-20 agreement with the exact glance and the same top 1 (requests and
 * tasks apart), the glance's Hit@1 and R@20 on the tasks (their gold skills), the wall time (median
 * and max) and the int8 pairs.
 *
 *   npm run bench -- kivf-nprobe <bank> <tasks.jsonl> [--div 16,32] [--spread even,weight] [--centroids N] [--batches 1-5] [--limit 40] [--rounds 2]
 *
 * `bank`: installed with the embedded pair, large enough to have written its key IVF (3,000 skills).
 */
import { cpus, loadavg } from "node:os";
import { encodeQueries } from "../src/route/context.js";
import { keyIvfForGlance } from "../src/route/glance-index-use.js";
import { KeyIvf } from "../src/bank/key-ivf.js";
import { loadTasks, selectTasks } from "../lab/eval/tasks.js";
import { routeVoteK } from "../src/kernels/kernels.js";
import { median } from "./data.js";
import { exampleRequests, openInstalledBank } from "./installed-bank.js";

const argv = process.argv.slice(2);
function flag(name: string, fallback: string): string {
  const i = argv.indexOf(name);
  return i >= 0 ? argv.splice(i, 2)[1] : fallback;
}
const divs = flag("--div", "16,32").split(",").map(Number);
const spreads = flag("--spread", "even,weight").split(",") as ("even" | "weight")[];
if (spreads.some((s) => s !== "even" && s !== "weight")) throw new Error(`--spread takes even and weight, got ${spreads.join(",")}`);
const centroids = Number(flag("--centroids", "0"));
const batches = flag("--batches", "1-5");
const limit = Number(flag("--limit", "40"));
const rounds = Number(flag("--rounds", "2"));
const [bankDir, tasksPath] = argv;
if (!bankDir || !tasksPath) {
  console.error("usage: npm run bench -- kivf-nprobe <bank> <tasks.jsonl> [--div 16,32] [--spread even,weight] [--centroids N] [--batches 1-5] [--limit 40] [--rounds 2]");
  process.exit(2);
}
const bank = await openInstalledBank(bankDir);
const { projections, library, parts } = bank;
const requests = exampleRequests();
const all = selectTasks(await loadTasks(tasksPath), { batches });
const tasks = Array.from({ length: Math.min(limit, all.length) }, (_, i) => all[(97 * i) % all.length]);
// --centroids N: a fresh index of N centroids trained here (in memory) instead of the installed one
const t0 = performance.now();
const ivf = centroids > 0 ? await KeyIvf.build(library.keys, { centroids }) : await keyIvfForGlance(library);
if (!ivf) throw new Error(`${bankDir} has no key IVF (installs write one from 3,000 skills)`);
if (centroids > 0) console.log(`trained ${ivf.stats().centroids} centroids in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
const C = ivf.stats().centroids;
// the route's k (src/route/glance.ts)
const k = routeVoteK(library.keys.size, projections.glanceVoteShare);
console.log(`kivf-nprobe: ${bankDir}, ${library.keys.size} skills, ${library.keys.keys} keys, ${C} centroids, k ${k}; ` +
  `${requests.length} requests, ${tasks.length} tasks (batches ${batches}); ${cpus().length} cores (${cpus()[0]?.model}), ` +
  `load ${loadavg().map((x) => x.toFixed(1)).join(" ")}, node ${process.version}, ${new Date().toISOString()}`);
const qs: Awaited<ReturnType<typeof encodeQueries>>[] = [];
for (const p of [...requests, ...tasks.map((t) => t.text)]) qs.push(await encodeQueries(parts, p, false));
const nReq = requests.length;
function top(g: Float32Array, n: number): number[] {
  return Array.from(g.keys()).sort((a, b) => g[b] - g[a] || a - b).slice(0, n);
}
const goldCols = tasks.map((t) => ({ gold: new Set(t.gold_skill_ids), cols: new Set<number>() }));
const glance = (i: number, nprobe: number | "all", probeSpread: "even" | "weight" = "even") =>
  ivf.glance(library.keys, qs[i].queries, { weights: qs[i].weights, k, nprobe, i8: true, prune: true, probeSpread });
await glance(0, Math.floor(C / divs[0]));
const exact: number[][] = [];
let handles: Int32Array | undefined;
for (let i = 0; i < qs.length; i++) {
  const r = await glance(i, "all");
  handles ??= r.handles;
  exact.push(top(r.g, 20));
}
// a task's gold columns, by the glance's handles
for (const gc of goldCols) for (let c = 0; c < handles!.length; c++) if (gc.gold.has(library.label(handles![c]).id)) gc.cols.add(c);
const mean = (a: number[]) => a.reduce((x, y) => x + y, 0) / Math.max(1, a.length);
const fmt = (a: number[], f: (a: number[]) => number, digits: number, scale = 1) => (a.length ? (f(a) / scale).toFixed(digits) : "–");
const max = (a: number[]) => Math.max(...a);
const exactSets = exact.map((t) => new Set(t));
const report = (name: string, tops: number[][], ms: number[], int8: number[], stages: number[][] = []) => {
  const ag = tops.map((t, i) => t.filter((x) => exactSets[i].has(x)).length / 20);
  const same1 = tops.map((t, i): number => (t[0] === exact[i][0] ? 1 : 0));
  const hit1 = tops.slice(nReq).map((t, j): number => (goldCols[j].cols.has(t[0]) ? 1 : 0));
  const r20 = tops.slice(nReq).map((t, j): number => (t.some((x) => goldCols[j].cols.has(x)) ? 1 : 0));
  const reqMs = ms.slice(0, nReq), taskMs = ms.slice(nReq);
  console.log(`  ${name}: requests agree ${fmt(ag.slice(0, nReq), mean, 3)} (min ${fmt(ag.slice(0, nReq), (a) => Math.min(...a), 2)}), ` +
    `top-1 ${same1.slice(0, nReq).reduce((a, b) => a + b, 0)}/${nReq}, ms ${fmt(reqMs, median, 1)} (max ${fmt(reqMs, max, 1)}), ` +
    `int8 ${fmt(int8.slice(0, nReq), median, 2, 1e6)}M; tasks agree ${fmt(ag.slice(nReq), mean, 3)} (min ${fmt(ag.slice(nReq), (a) => Math.min(...a), 2)}), ` +
    `top-1 ${same1.slice(nReq).reduce((a, b) => a + b, 0)}/${tasks.length}, Hit@1 ${fmt(hit1, mean, 3)}, R@20 ${fmt(r20, mean, 3)}, ` +
    `ms ${fmt(taskMs, median, 0)} (max ${fmt(taskMs, max, 0)}), int8 ${fmt(int8.slice(nReq), median, 1, 1e6)}M`);
  // the native stages' medians (centroid scores, probe, scan, vote), requests and tasks apart
  if (stages.length) {
    const split = (a: number[][]) => (a.length ? ["centroids", "probe", "scan", "vote"].map((n, j) => `${n} ${median(a.map((x) => x[j])).toFixed(1)}`).join(", ") : "–");
    console.log(`    stages (ms, medians): requests ${split(stages.slice(0, nReq))}; tasks ${split(stages.slice(nReq))}`);
  }
};
report("exact (nprobe all)", exact, [], []);
for (let round = 0; round < rounds; round++)
  for (const d of divs) for (const spread of spreads) {
    const tops: number[][] = [], ms: number[] = [], int8: number[] = [], stages: number[][] = [];
    for (let i = 0; i < qs.length; i++) {
      const t0 = performance.now();
      const r = await glance(i, Math.floor(C / d), spread);
      ms.push(performance.now() - t0);
      tops.push(top(r.g, 20));
      int8.push(r.coded);
      stages.push([r.centroidMs, r.probeMs, r.scanMs, r.voteMs]);
    }
    report(`round ${round + 1}, C/${d} (nprobe ${Math.floor(C / d)}), ${spread}`, tops, ms, int8, stages);
  }
await bank.close();
