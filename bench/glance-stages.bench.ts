/**
 * Where a route's glance spends its time over an installed bank whose glance reads the key IVF:
 * the hook's decision (`Router.route` with `verdict: false`) on every prompt, warm, with the key
 * IVF's own stage times (its native sync, centroid scores, probe, scan, vote) beside the route's
 * glance time; what remains is the task's encoding (tokens, forward pass, projection, row weights)
 * and the JavaScript around the index (the ranking of every skill).
 *
 *   npm run bench -- glance-stages <bank> <prompts.json[,…]> [--reps 2]
 *
 * Prompts as route-prompts reads them. Medians over `reps` rounds of every prompt in turn, after one
 * warm-up round.
 */
import { readFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg } from "node:os";
import { defaultModelPaths } from "../src/defaults.js";
import { Model } from "../src/model/Model.js";
import { Projections } from "../src/projections/projections.js";
import { Router } from "../src/route/Router.js";
import { KeyIvf, type KeyIvfGlance } from "../src/bank/key-ivf.js";
import { median } from "./data.js";

const argv = process.argv.slice(2);
function flag(name: string, fallback: string): string {
  const i = argv.indexOf(name);
  return i >= 0 ? argv.splice(i, 2)[1] : fallback;
}
const reps = Number(flag("--reps", "2"));
const [bankDir, promptList] = argv;
if (!bankDir || !promptList) {
  console.error("usage: npm run bench -- glance-stages <bank> <prompts.json[,…]> [--reps 2]");
  process.exit(2);
}
const prompts = promptList.split(",").flatMap((f) => (JSON.parse(readFileSync(f, "utf8")) as { task: string }[]).map((p) => p.task));

// every key IVF glance's own figures and wall time, in call order
const seen: { r: KeyIvfGlance; ms: number }[] = [];
const nqOf = new WeakMap<KeyIvfGlance, number>();
let voteK = 0;
const original = KeyIvf.prototype.glance;
KeyIvf.prototype.glance = async function (this: KeyIvf, ...args: Parameters<KeyIvf["glance"]>) {
  const t = performance.now();
  const r = await original.apply(this, args);
  nqOf.set(r, args[1].length / this.dim);
  voteK = args[2]?.k ?? 0;
  seen.push({ r, ms: performance.now() - t });
  return r;
};

const defaults = defaultModelPaths();
const model = await Model.load(defaults.model, { contextSize: 2048 });
const router = await Router.open(model, { projections: await Projections.load(defaults.projections), bankDir, readOnly: true, skillBudget: 512 });
console.log(`glance-stages: bank ${bankDir} (${router.list().length} skills), ${prompts.length} prompts × ${reps}; ${availableParallelism()} of ${cpus().length} cores (${cpus()[0]?.model}), node ${process.version}, ${new Date().toISOString()}, load ${loadavg()[0].toFixed(1)}`);
for (const p of prompts) await router.route(p, { verdict: false });
seen.length = 0;
const rows: Record<string, number[]> = { route: [], glance: [], ivfCall: [], sync: [], centroid: [], probe: [], scan: [], vote: [], code: [], outside: [], rows: [], coded: [], refined: [], scored: [], lists: [] };
for (let i = 0; i < reps; i++) {
  for (const p of prompts) {
    const before = seen.length;
    const t0 = performance.now();
    const res = await router.route(p, { verdict: false });
    rows.route.push(performance.now() - t0);
    rows.glance.push(res.timings.glanceMs);
    const calls = seen.slice(before);
    if (calls.length !== 1) throw new Error(`expected one key IVF glance a route, saw ${calls.length}: does the bank read its key IVF?`);
    const { r, ms } = calls[0];
    rows.ivfCall.push(ms);
    rows.sync.push(r.sync.ms);
    rows.centroid.push(r.centroidMs);
    rows.probe.push(r.probeMs);
    rows.scan.push(r.scanMs);
    rows.vote.push(r.voteMs);
    rows.code.push(r.codeMs);
    rows.outside.push(res.timings.glanceMs - ms);
    rows.coded.push(r.coded);
    rows.refined.push(r.refined);
    rows.scored.push(r.scored);
    rows.lists.push(r.lists);
    rows.rows.push(nqOf.get(r) ?? 0);
  }
}
const fmt = (xs: number[]) => `${median(xs).toFixed(1)}`;
console.log(`medians over n = ${rows.route.length}, ms: hook's decision ${fmt(rows.route)}; its glance ${fmt(rows.glance)} = the key IVF call ${fmt(rows.ivfCall)} (sync ${fmt(rows.sync)}, centroids ${fmt(rows.centroid)}, probe ${fmt(rows.probe)}, scan ${fmt(rows.scan)}, vote ${fmt(rows.vote)}, coding ${fmt(rows.code)}) + outside it ${fmt(rows.outside)}; per glance: task rows ${fmt(rows.rows)}, vote k ${voteK}, lists ${fmt(rows.lists)}, pairs in int8 ${fmt(rows.coded)}, refined ${fmt(rows.refined)}, float32 ${fmt(rows.scored)} of ${seen[0]?.r.bankRows} keys; load ${loadavg()[0].toFixed(1)}`);
await router.close();
await model.dispose();
