/**
 * Everyday requests routed over an installed bank, warm: the hook's decision (`Router.route` with
 * `verdict: false`, what `gavel serve` answers a `glance` request with) and the full default route:
 * one warm-up round, then `reps` rounds of every prompt in turn (a prompt never follows itself: a
 * request repeated at once would reuse the model's KV cache, and its verdict cost almost nothing);
 * p50 / p95 over every call, how often the verdict ran and its p50, what each picked, and why each
 * declined one was declined (the abstention model's reason).
 *
 *   npm run bench -- route-prompts <bank> <prompts.json[,…]> [--reps 3] [--model F] [--projections F]
 *     [--abstain-off]
 *
 * `prompts.json`: a JSON array of `{ "task": string }` (examples/demo-tasks.json,
 * examples/everyday-tasks.json). The bank is opened read-only with the embedded default pair unless
 * `--model` / `--projections` name another; the glance takes whatever the bank offers (the key IVF an
 * install wrote, on the CPU from GAVEL_KEY_IVF_FROM skills). `--abstain-off`: also the full route with
 * abstention off (`abstain: false`), the pick a route makes whatever abstention says.
 */
import { readFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg } from "node:os";
import { defaultModelPaths } from "../src/defaults.js";
import { Model } from "../src/model/Model.js";
import { Projections } from "../src/projections/projections.js";
import { Router } from "../src/route/Router.js";
import { median, quantile } from "./data.js";

const argv = process.argv.slice(2);
function flag(name: string, fallback: string): string {
  const i = argv.indexOf(name);
  return i >= 0 ? argv.splice(i, 2)[1] : fallback;
}
const reps = Number(flag("--reps", "3"));
const abstainOffAt = argv.indexOf("--abstain-off");
const abstainOff = abstainOffAt >= 0 && argv.splice(abstainOffAt, 1).length > 0;
const defaults = defaultModelPaths();
const modelPath = flag("--model", defaults.model);
const projPath = flag("--projections", defaults.projections);
const [bankDir, promptList] = argv;
if (!bankDir || !promptList) {
  console.error("usage: npm run bench -- route-prompts <bank> <prompts.json[,…]> [--reps 3] [--model F] [--projections F]");
  process.exit(2);
}
const prompts = promptList.split(",").flatMap((f) => (JSON.parse(readFileSync(f, "utf8")) as { task: string }[]).map((p) => p.task));
const model = await Model.load(modelPath, { contextSize: 2048 });
const router = await Router.open(model, { projections: await Projections.load(projPath), bankDir, readOnly: true, skillBudget: 512 });
console.log(`route-prompts: bank ${bankDir} (${router.list().length} skills), ${prompts.length} prompts × ${reps}; ${availableParallelism()} of ${cpus().length} cores (${cpus()[0]?.model}), node ${process.version}, ${new Date().toISOString()}, load ${loadavg()[0].toFixed(1)}`);
const p95 = (xs: number[]) => quantile(xs, 0.95);
const names = new Map(router.list().map((s) => [s.id, s.name]));
const modes: [string, { verdict?: boolean; abstain?: boolean }][] = [["hook's decision (verdict off)", { verdict: false }], ["full route", {}]];
if (abstainOff) modes.push(["full route, abstention off", { abstain: false }]);
for (const [label, options] of modes) {
  const ms: number[] = [];
  const glanceMs: number[] = [];
  const picks: string[] = [];
  const reasons: string[] = [];
  const verdictMs: number[] = [];
  // one warm-up round, then `reps` rounds of every prompt in turn: a prompt never follows itself, so
  // the model's KV cache holds another request's tokens when it comes (a request repeated at once
  // reuses its passes: the verdict's then cost almost nothing)
  for (const p of prompts) await router.route(p, options);
  for (let i = 0; i < reps; i++) {
    for (const p of prompts) {
      const t0 = performance.now();
      const r = await router.route(p, options);
      ms.push(performance.now() - t0);
      glanceMs.push(r.timings.glanceMs);
      if (r.timings.verdictMs > 0) verdictMs.push(r.timings.verdictMs);
      if (i === 0) {
        picks.push(r.abstained || r.skill === null ? "(declined)" : names.get(r.skill) ?? r.skill);
        if (r.abstained && r.abstention) reasons.push(`${p.slice(0, 60)}…: ${r.abstention.reason}`);
      }
    }
  }
  const verdict = verdictMs.length > 0 ? `; the verdict ran on ${verdictMs.length}, p50 ${median(verdictMs).toFixed(1)} ms` : "";
  console.log(`${label}: p50 ${median(ms).toFixed(1)} ms, p95 ${p95(ms).toFixed(1)} ms (glance p50 ${median(glanceMs).toFixed(1)} ms${verdict}; n = ${ms.length}; load ${loadavg()[0].toFixed(1)})`);
  console.log(`  picks: ${picks.join(", ")}`);
  for (const why of reasons) console.log(`  declined: ${why}`);
}
const st = router.stats();
console.log(`memory: RSS ${(process.memoryUsage().rss / 2 ** 30).toFixed(2)} GiB, the bank's keys ${(st.memoryBytes / 2 ** 30).toFixed(2)} GiB (${st.keyType}), ${st.keys} keys`);
await router.close();
await model.dispose();
