// Does a route give the same answer twice? The embedded pair over examples/skills, the verdict forced
// on every route (the re-ranker's floor and margin lifted), abstention off: the demo's and the
// everyday requests routed once in order, then again in reverse (so the verdict's cached skill
// prefixes are warm for some and evicted for others); prints each request whose pick, L, V or R
// differ between the two passes. Needs `npx tsup` (reads dist/).
//
//   node scripts/experiments/route-repeat.mjs [cold | vs-cold] [host-logprobs]
//
// cold: the model's prefix cache cleared before every route, so every verdict decodes its skills'
// prefixes (as a first route does); vs-cold: the first pass cold, the second as the cache stands (a
// verdict must not depend on whether its prefixes were cached); host-logprobs: Model.load with
// logprobsInGraph false (the log-probs reduced on the host from copied logits, not on the device).
import { Model, Router, Projections, defaultModelPaths } from "../../dist/index.js";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const { model: modelPath, projections: projPath } = defaultModelPaths();
const base = await Projections.load(projPath);
const projections = base.withCalibration({ rerank: { ...base.rerank, verdictMinSkills: 0, verdictMargin: 1e9 } });
const vsCold = process.argv.includes("vs-cold");
const cold = !vsCold && process.argv.includes("cold");
const hostLogprobs = process.argv.includes("host-logprobs");
const model = await Model.load(modelPath, { contextSize: 2048, ...(hostLogprobs ? { logprobsInGraph: false } : {}) });
const bankDir = mkdtempSync(join(tmpdir(), "gavel-route-repeat-"));
const router = await Router.open(model, { projections, bankDir, skillBudget: 512 });
try {
  await router.install("examples/skills");
  const read = (f) => JSON.parse(readFileSync(f, "utf8")).map((t) => t.task ?? t);
  const tasks = [...read("examples/demo-tasks.json"), ...read("examples/everyday-tasks.json")];
  const snap = (r) => JSON.stringify({ skill: r.skill, verdict: r.verdict, shortlist: (r.shortlist ?? []).map((c) => [c.skill, c.L, c.V, c.R]) });
  const first = [];
  let clear = cold || vsCold;
  const route = async (t) => {
    if (clear) await model.clearCache();
    return router.route(t, { abstain: false });
  };
  for (const t of tasks) first.push(snap(await route(t)));
  clear = cold;
  let differ = 0, verdicts = 0;
  for (let i = tasks.length - 1; i >= 0; i--) {
    const again = snap(await route(tasks[i]));
    if (JSON.parse(again).verdict === "ran") verdicts++;
    if (again !== first[i]) {
      differ++;
      console.log(`differs: ${tasks[i]}\n  ${first[i]}\n  ${again}`);
    }
  }
  console.log(`${tasks.length} requests routed twice${cold ? " (cold cache)" : vsCold ? " (first pass cold, second warm)" : ""}${hostLogprobs ? " (host log-probs)" : ""}, the verdict ran on ${verdicts} of the second pass; ${differ} differ`);
} finally {
  await router.close();
  await model.dispose();
  rmSync(bankDir, { recursive: true, force: true });
}
