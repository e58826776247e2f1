/**
 * What the glance's vote size costs the key IVF on an installed bank: the examples' 22 requests
 * (examples/demo-tasks.json, examples/everyday-tasks.json), each encoded once as a route does, then
 * `KeyIvf.glance` as a route calls it (int8 codes and the bound) at each vote size k in turn, `--rounds`
 * times over; medians over the requests of the wall time, the lists read, the (row, key) pairs scored in
 * int8, refined (those past the int8 bound; 0 from a build without the refinement) and scored in
 * float32, and the native stages.
 *
 *   npm run bench -- vote-k <bank> [--ks 10,102,306] [--rounds 2] [--tasks tasks.jsonl --batches 1-5 --limit 20]
 *
 * `--tasks`: SWE-Skills-Bench task statements instead (long: hundreds of rows), in the stride order
 * 97·i mod n.
 *
 * `bank`: installed with the embedded pair, large enough to have written its key IVF (3,000 skills).
 */
import { cpus, loadavg } from "node:os";
import { encodeQueries } from "../src/route/context.js";
import { keyIvfForGlance } from "../src/route/glance-index-use.js";
import { median } from "./data.js";
import { exampleRequests, openInstalledBank } from "./installed-bank.js";
import { loadTasks, selectTasks } from "../lab/eval/tasks.js";

const argv = process.argv.slice(2);
function flag(name: string, fallback: string): string {
  const i = argv.indexOf(name);
  return i >= 0 ? argv.splice(i, 2)[1] : fallback;
}
const ks = flag("--ks", "10,102,306").split(",").map(Number);
const rounds = Number(flag("--rounds", "2"));
const tasksPath = flag("--tasks", "");
const batches = flag("--batches", "1-5");
const limit = Number(flag("--limit", "20"));
const [bankDir] = argv;
if (!bankDir) {
  console.error("usage: npm run bench -- vote-k <bank> [--ks 10,102,306] [--rounds 2] [--tasks tasks.jsonl --batches 1-5 --limit 20]");
  process.exit(2);
}
const bank = await openInstalledBank(bankDir);
const { library, parts } = bank;
const all = tasksPath ? selectTasks(await loadTasks(tasksPath), { batches }) : [];
const prompts = tasksPath
  ? Array.from({ length: Math.min(limit, all.length) }, (_, i) => all[(97 * i) % all.length].text)
  : exampleRequests();
const ivf = await keyIvfForGlance(library);
if (!ivf) throw new Error(`${bankDir} has no key IVF (installs write one from 3,000 skills)`);
console.log(`vote-k: ${bankDir}, ${library.keys.size} skills, ${library.keys.keys} keys; ${prompts.length} ${tasksPath ? `tasks (batches ${batches})` : "requests"}; ` +
  `${cpus().length} cores (${cpus()[0]?.model}), load ${loadavg().map((x) => x.toFixed(1)).join(" ")}, node ${process.version}, ${new Date().toISOString()}`);
const qs = [];
for (const p of prompts) qs.push(await encodeQueries(parts, p, false));
// the first glance codes every list it reads; not timed
await ivf.glance(library.keys, qs[0].queries, { weights: qs[0].weights, k: Math.max(...ks), i8: true, prune: true });
for (let round = 0; round < rounds; round++) {
  for (const k of ks) {
    const acc: Record<string, number[]> = {};
    for (const q of qs) {
      const t0 = performance.now();
      const r = await ivf.glance(library.keys, q.queries, { weights: q.weights, k, i8: true, prune: true });
      const ms = performance.now() - t0;
      for (const [n, v] of Object.entries({ ms, lists: r.lists, int8: r.coded, refined: r.refined ?? 0, float32: r.scored, centroidMs: r.centroidMs, probeMs: r.probeMs, scanMs: r.scanMs })) (acc[n] ??= []).push(v);
    }
    console.log(`  round ${round + 1}, k ${k}: ` + Object.entries(acc).map(([n, a]) => `${n} ${median(a).toFixed(n.endsWith("Ms") || n === "ms" ? 1 : 0)}`).join(", "));
  }
}
await bank.close();
