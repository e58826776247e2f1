/**
 * Install throughput, cover compression, bank size and route latency of the Router on this machine.
 *
 *   npm run bench -- install [skills=300] [dim=768] [context=4096] [budget=default] [jobs=8]
 *
 * stories260K with random projections (dim as given): the figures measure the machinery (one
 * forward pass per skill, projection, ε-cover, storage), not routing quality. stories260K's forward
 * pass is nearly free, so this is the regime of a GPU install: what the JS thread does bounds it. Skills come from
 * ../shared/data/skills-mit.jsonl.gz (the first N).
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Model } from "../src/model/Model.js";
import { Projections } from "../src/projections/projections.js";
import { Router } from "../src/route/Router.js";

const [nSkills, dim, context, budget, jobs] = [300, 768, 4096, 0, 8].map((d, i) => Number(process.argv[2 + i] ?? d));
const shared = resolve("..", "shared");

function dirBytes(dir: string): number {
  let n = 0;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p);
    n += st.isDirectory() ? dirBytes(p) : st.size;
  }
  return n;
}

const model = await Model.load(join(shared, "models", "stories260Ktok512.gguf"), { contextSize: context });
const projections = await Projections.random(model, { seed: 1, dim });
const bankDir = mkdtempSync(join(tmpdir(), "gavel-bench-"));
const router = await Router.open(model, { projections, bankDir, ...(budget > 0 ? { skillBudget: budget } : {}) });
console.log(`machine: ${cpus().length} × ${cpus()[0].model}; model ${model.info.description}, context ${model.info.contextSize}, skill budget ${router.skillBudget} tokens, dim ${dim}, ε ${projections.eps}, ${jobs} skills in flight`);

const elu0 = performance.eventLoopUtilization();
const report = await router.install(join(shared, "data", "skills-mit.jsonl.gz"), { limit: nSkills, concurrency: jobs });
// How busy the JS thread was: near 100% means it, not the model, bounds the install.
const elu = performance.eventLoopUtilization(elu0);
const n = report.installed.length;
console.log(`install: ${n} skills (${report.failed.length} failed, ${report.truncated.length} truncated) in ${report.seconds.toFixed(1)} s`);
console.log(`  ${(n / report.seconds).toFixed(2)} skills/s, ${(report.tokens / report.seconds).toFixed(0)} tokens/s (${report.tokens} tokens, ${(report.tokens / n).toFixed(0)} per skill)`);
console.log(`  cover: ${report.rawKeys} keys → ${report.keys} kept, ${(report.rawKeys / report.keys).toFixed(2)}× compression`);
console.log(`  JS thread busy ${(100 * elu.utilization).toFixed(0)}% of the install (event-loop utilisation)`);
console.log(`  stages, summed over skills in flight (s): ${JSON.stringify(Object.fromEntries(Object.entries(report.stages).map(([k, v]) => [k, +v.toFixed(2)])))}`);
const bytes = dirBytes(bankDir);
console.log(`  bank on disk: ${(bytes / 2 ** 20).toFixed(1)} MiB, ${(bytes / n / 1024).toFixed(1)} KiB per skill (keys ${((report.keys * dim * 4) / n / 1024).toFixed(1)} KiB of it); in memory ${(router.stats().memoryBytes / 2 ** 20).toFixed(1)} MiB`);

const tasks = ["Write a Dockerfile for a Node.js service", "Extract the tables from report.pdf", "Fix the flaky tests in CI", "Optimise this slow SQL query", "Draft release notes from the git log"];
const glanceMs: number[] = [];
const routeMs: number[] = [];
const verdictN: number[] = [];
for (const t of tasks) {
  let t0 = performance.now();
  await router.glance(t);
  glanceMs.push(performance.now() - t0);
  t0 = performance.now();
  const r = await router.route(t);
  routeMs.push(performance.now() - t0);
  verdictN.push(r.shortlist.length);
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`glance (task render + forward + projection + vote over ${n}): median ${med(glanceMs).toFixed(0)} ms`);
console.log(`route (glance + verdict on ${med(verdictN)} candidates, median): median ${med(routeMs).toFixed(0)} ms`);
await router.close();
await model.dispose();
rmSync(bankDir, { recursive: true, force: true });
