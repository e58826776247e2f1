// Do a route with abstention on and the same route with it off read the same first stage and
// re-ranker? The embedded pair over examples/skills (or BANK, an installed bank), the demo's and the
// everyday requests each routed twice in a row, `route(t)` then `route(t, { abstain: false })`;
// prints each request whose shortlist (skill, g, B, R) differs, to the bit (the pick may differ
// where abstention declines). Needs `npx tsup` (reads
// dist/).
//
//   node scripts/experiments/route-passes.mjs [BANK]
import { Model, Router, defaultModelPaths } from "../../dist/index.js";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const { model: modelPath, projections } = defaultModelPaths();
const given = process.argv[2];
const bankDir = given ?? mkdtempSync(join(tmpdir(), "gavel-route-passes-"));
const model = await Model.load(modelPath, { contextSize: 2048 });
const router = await Router.open(model, { projections, bankDir, ...(given ? { readOnly: true } : {}) });
try {
  if (!given) await router.install("examples/skills");
  const read = (f) => JSON.parse(readFileSync(f, "utf8")).map((t) => t.task ?? t);
  const tasks = [...read("examples/demo-tasks.json"), ...read("examples/everyday-tasks.json")];
  // the shortlist only: a declined route's skill is null by design
  const snap = (r) => JSON.stringify(r.shortlist.map((c) => [c.skill, c.g, c.B, c.R]));
  let differ = 0;
  for (const t of tasks) {
    const on = snap(await router.route(t));
    const off = snap(await router.route(t, { abstain: false }));
    if (on !== off) {
      differ++;
      console.log(`differs: ${t}\n  ${on}\n  ${off}`);
    }
  }
  console.log(`${tasks.length} requests routed with abstention on, then off, over ${router.list().length} skills; ${differ} differ`);
} finally {
  await router.close();
  await model.dispose();
  if (!given) rmSync(bankDir, { recursive: true, force: true });
}
