// A library's own cut past the small band, measured live: the shipped route over a library of 125
// skills or more decides abstention by the large band (a threshold on the lexical reach), and the
// library cut (src/route/library-cut.ts) does not apply there. This routes, over one library, the
// projections' abstention reference (the hand-written off-domain prompts of batches 1-5), then the
// request files and the held-out prompts (batches 6-10), each once with the shipped route (abstention
// on, no library cut: what a route does there now), and reports each with the cut a library-cut of
// the large band would set: the (pass + 1)-th highest reach among the reference prompts, a route
// abstaining when its reach is at or under it (pass of the reference prompts would load a skill).
//
// Usage: npx vite-node scripts/experiments/large-band-cut.ts -- REQUESTS[,MORE] --skills DIR[,LIBRARY.jsonl]
//   [--prompts bench/data/off-domain-prompts.jsonl] [--pass N (default the projections')]
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model, Projections, Router } from "../../src/index.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { bandFor } from "../../src/projections/abstention-model.js";
import { readRequests } from "../select/requests.js";

const argv = process.argv.slice(2).filter((a) => a !== "--");
const opt = (n: string) => { const i = argv.indexOf(n); return i >= 0 ? argv.splice(i, 2)[1] : undefined; };
const sources = (opt("--skills") ?? "examples/skills").split(",").filter(Boolean);
const promptsFile = opt("--prompts") ?? "bench/data/off-domain-prompts.jsonl";
const passOpt = opt("--pass");
const files = (argv[0] ?? "").split(",").filter(Boolean);
const projections = await Projections.load(DEFAULT_PROJECTIONS);
const ref = projections.abstentionReference!;
const pass = passOpt === undefined ? ref.pass : Number(passOpt);
const prompts = readFileSync(promptsFile, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as { text: string; batch: string });
const heldOut = prompts.filter((p) => Number(p.batch.replace(/\D+/g, "")) > 5).map((p) => p.text);
const model = await Model.load(DEFAULT_MODEL, { contextSize: 2048 });
const dir = mkdtempSync(join(tmpdir(), "large-band-cut-"));
try {
  const router = await Router.open(model, { projections, bankDir: join(dir, "bank") });
  for (const s of sources) await router.install(s);
  const n = router.list().length;
  const band = bandFor(projections.abstention!, Math.log(n));
  console.log(`${n} skills (${sources.join(", ")}); the deciding band: ${band.kind}${band.kind === "threshold" ? ` (${band.feature} < ${band.threshold.toFixed(3)})` : ""}`);
  if (band.kind !== "threshold") throw new Error("this library is decided by the small band: the shipped library cut applies there already");
  /** The route as shipped: its pick (null: declined) and its reach (the band's feature; −∞ when nothing was scored). */
  const route = async (t: string) => {
    const r = await router.route(t, { abstain: true, libraryCut: false });
    const x = r.abstention && Number.isFinite(r.abstention.score) ? r.abstention.score : -Infinity;
    return { skill: r.abstained ? null : r.skill, reach: x };
  };
  const refReach: number[] = [];
  for (const p of ref.prompts) refReach.push((await route(p)).reach);
  const sorted = [...refReach].sort((a, b) => b - a);
  const cut = sorted[pass];
  console.log(`reference: ${ref.prompts.length} prompts, ${refReach.filter((x) => x >= band.threshold).length} let through by the band; reaches, highest first: ${sorted.slice(0, 8).map((x) => x.toFixed(3)).join(", ")} …; the cut at pass ${pass}: reach ≤ ${cut.toFixed(3)} abstains (the band: < ${band.threshold.toFixed(3)})`);
  const sets = [...files.map((f) => ({ file: f, tasks: readRequests(f) })), { file: `${promptsFile} (held out, batches 6-10)`, tasks: heldOut.map((task) => ({ task, expected: null })) }];
  console.log("file\tright (shipped)\tdeclined (shipped)\tright (cut)\tdeclined (cut)\tof");
  for (const { file, tasks } of sets) {
    let right = 0, declined = 0, rightCut = 0, declinedCut = 0;
    for (const t of tasks) {
      const r = await route(t.task);
      const cutDeclines = r.skill !== null && r.reach <= cut;
      if (r.skill === null) declined++;
      if (r.skill === t.expected) right++;
      if (r.skill === null || cutDeclines) declinedCut++;
      if ((cutDeclines ? null : r.skill) === t.expected) rightCut++;
      if (cutDeclines) console.log(`  cut declines ${JSON.stringify(t.task.slice(0, 70))} (reach ${r.reach.toFixed(3)}, ${r.skill}; expected ${t.expected ?? "a decline"})`);
    }
    console.log(`${file}\t${right}\t${declined}\t${rightCut}\t${declinedCut}\t${tasks.length}`);
  }
  await router.close();
} finally {
  await model.dispose();
  rmSync(dir, { recursive: true, force: true });
}
