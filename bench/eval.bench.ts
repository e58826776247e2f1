/**
 * `gavel eval`'s time per task by verdict pool, on this CPU: evaluate() over examples/skills with the
 * embedded default pair (24 skills installed for real), the demo's tasks, first with the route's own
 * shortlist (the default: each task routed by `router.route`, the verdict only on the skills it
 * shortlists), then with the wide pool of calibration studies (`pool: N`, `gavel eval --pool N`: the
 * glance's top N each get a verdict whatever Δ; 20 was eval's only pool before).
 *
 *   npm run bench -- eval [tasks] [--pool N]
 *
 * `tasks`: the first this many demo tasks (default all 12, off-domain ones included); `--pool N`
 * (default 20). Methods bm25, glance, ruling, gL, gV, as `gavel eval` runs by default. Prints, per
 * mode, seconds a task, the verdict passes (counted at Model.scoreMany) and the ruling's Hit@1.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { defaultModelPaths } from "../src/defaults.js";
import { Model } from "../src/model/Model.js";
import { Router } from "../src/route/Router.js";
import { evaluate } from "../lab/eval/evaluate.js";
import type { EvalTask } from "../lab/eval/tasks.js";
import { loadLibrary } from "../lab/eval/io.js";

const root = resolve(".");
const argv = process.argv.slice(2);
const pi = argv.indexOf("--pool");
const pool = pi >= 0 ? Number(argv.splice(pi, 2)[1]) : 20;
const limit = Number(argv[0] ?? Infinity);

async function main() {
  const demo = JSON.parse(readFileSync(join(root, "examples", "demo-tasks.json"), "utf8")) as { task: string; expected: string | null }[];
  const tasks: EvalTask[] = demo.slice(0, limit).map((t, i) => ({ id: `demo-${i}`, text: t.task, gold_skill_ids: t.expected ? [t.expected] : [], ...(t.expected ? {} : { off_domain: true }) }));
  const { model: modelPath, projections } = defaultModelPaths();
  const model = await Model.load(modelPath, { contextSize: 4096 });
  let passes = 0;
  const scoreMany = model.scoreMany.bind(model);
  model.scoreMany = (prefixes, continuation, options) => {
    passes += prefixes.length;
    return scoreMany(prefixes, continuation, options);
  };
  const bankDir = mkdtempSync(join(tmpdir(), "gavel-eval-bench-"));
  try {
    const router = await Router.open(model, { projections, bankDir });
    try {
      await router.install(join(root, "examples", "skills"));
      const library = (await loadLibrary([join(root, "examples", "skills")])).skills;
      console.log(`eval bench: ${library.length} skills, ${tasks.length} demo tasks, ${cpus().length} cores (${cpus()[0]?.model}), load ${loadavg().map((x) => x.toFixed(1)).join(" ")}, node ${process.version}, ${new Date().toISOString().slice(0, 10)}`);
      await router.route(tasks[0].text); // warm-up: graph built, lexicon laid out
      for (const mode of ["route", pool] as const) {
        passes = 0;
        const t0 = performance.now();
        const res = await evaluate({ router, tasks, library, ...(mode === "route" ? {} : { pool: mode }) });
        const s = (performance.now() - t0) / 1000;
        const ruling = res.table.find((r) => r.method === "ruling")!;
        const label = mode === "route" ? "route's own shortlist (default)" : `wide pool --pool ${mode}`;
        console.log(`  ${label.padEnd(32)} ${(s / tasks.length).toFixed(2)} s a task (${s.toFixed(1)} s in all)   verdict passes ${passes} (${(passes / tasks.length).toFixed(1)} a task)   ruling Hit@1 ${ruling.hitAt1.toFixed(3)} (n = ${ruling.n})   load ${loadavg()[0].toFixed(1)}`);
      }
    } finally {
      await router.close();
    }
  } finally {
    await model.dispose();
    rmSync(bankDir, { recursive: true, force: true });
  }
}
await main();
