/**
 * Routing mid-rollout, in the spirit of the paper's SkillTraj (section 4.4), on SWE-Skills-Bench's
 * test batches 6–10: each task is embedded in a bash-agent trajectory (lab/gate/trajectories.ts:
 * one to three chore exchanges of noise, then the task as a user request or as a ticket's `cat`
 * output), and the router is scored at the decision point (the end of the message that carries the
 * need) against the same tasks given as written tasks.
 *
 * Rows (Hit@1: the committed skill is a gold, or a library entry with a gold's name and description):
 *  - written task, glance / route: `router.glance(text)` / `router.route(text)` of the task's text as
 *    the trajectory carries it (cut to --max-task-chars);
 *  - live, glance / route: a `router.live()` context fed the trajectory's ℓ* rows (decay 2^(−a/64)),
 *    its leader / `selectLive` (the verdict on the live shortlist, abstention off);
 *  - full context as text: `router.glance(messages, { live: false })`, the whole conversation read as
 *    "role: content" lines with no decay (what a retriever that swallows the context sees);
 *  - with --gate: the gate over every position of the test trajectories and as many negatives
 *    (chore tickets at the decision point): on-time firings, early ones, false fires, latency, and
 *    Hit@1 of the live leader at the firing token.
 *
 * Run (from the package root, after installing the library into the bank):
 *
 *   npm run bench -- live-routing --bank /tmp/gate-bench/bank [--gate gate.json] [--limit N]
 *     [--negatives N] [--seed S] [--max-task-chars C] [--threads T] [--out result.json] [--gate-only]
 *
 * Model and projections: the embedded gavel-mini's unless --model / --projections say otherwise.
 */
import { parseArgs } from "node:util";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Model } from "../src/model/Model.js";
import { Router } from "../src/route/Router.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../src/defaults.js";
import { loadTasks } from "../lab/eval/tasks.js";
import { acceptedIds, LibraryIndex } from "../lab/eval/metrics.js";
import { buildTrajectories, cutTaskText } from "../lab/gate/trajectories.js";
import { collectGateFeatures, firstFiring, firingMetrics, tokenizeTrajectory } from "../lab/gate/gate-train.js";
import { loadGate } from "../src/route/gate.js";
import { selectLive } from "../src/route/firing.js";

const { values: v } = parseArgs({
  options: {
    bank: { type: "string" }, gate: { type: "string" }, limit: { type: "string" }, negatives: { type: "string" },
    seed: { type: "string" }, "max-task-chars": { type: "string" }, threads: { type: "string" }, context: { type: "string" },
    "skill-budget": { type: "string" }, model: { type: "string" }, projections: { type: "string" }, out: { type: "string" },
    tasks: { type: "string" }, "gate-only": { type: "boolean" },
  },
});
if (!v.bank) throw new Error("--bank <dir> is required (install the library first)");
const seed = Number(v.seed ?? 1);
const maxChars = Number(v["max-task-chars"] ?? 1500);
const tasksPath = v.tasks ?? join("..", "shared", "data", "swe-skills-bench", "tasks.jsonl");
const tasks = await loadTasks(tasksPath);
const model = await Model.load(v.model ?? DEFAULT_MODEL, { contextSize: Number(v.context ?? 2048), threads: Number(v.threads ?? 1) });
const router = await Router.open(model, { projections: v.projections ?? DEFAULT_PROJECTIONS, bankDir: v.bank, skillBudget: Number(v["skill-budget"] ?? 512), readOnly: true });
const index = new LibraryIndex(router.list());
const all = buildTrajectories(tasks, { batches: [6, 7, 8, 9, 10], seed, maxTaskChars: maxChars, negatives: Number(v.negatives ?? 100) });
const byTask = new Map(tasks.map((t) => [t.id, t]));
let positives = all.filter((t) => t.needsSkill && acceptedIds(t.gold, index).size > 0);
if (v.limit) positives = positives.slice(0, Number(v.limit));
const negatives = all.filter((t) => !t.needsSkill);
console.error(`library ${index.byId.size} skills; ${positives.length} test trajectories (batches 6-10) with a gold in the library, ${negatives.length} negatives`);

const rows = ["written task, glance", "written task, route", "written task, route + abstention", "live, glance", "live, route (selectLive)", "live, route + abstention", "full context as text, glance"] as const;
const hits = Object.fromEntries(rows.map((r) => [r, 0])) as Record<(typeof rows)[number], number>;
const byScenario: Record<string, { n: number; written: number; live: number }> = {};
let skipped = 0;
const t0 = performance.now();
for (const [i, t] of (v["gate-only"] ? [] : positives).entries()) {
  const accepted = acceptedIds(t.gold, index);
  const hit = (id: string | null | undefined) => (id != null && accepted.has(id) ? 1 : 0);
  const tt = tokenizeTrajectory(model, t);
  if (tt.tokens.length > model.info.contextSize) {
    skipped++;
    continue;
  }
  const written = cutTaskText(byTask.get(t.task!)!.text, maxChars);
  // One pass per context: the glance's leader is the shortlist's highest g (the shortlist holds every
  // skill within Δ of it); abstention (the projections' calibrated model) reads the same shortlist.
  const leader = (short: { skill: string; g: number }[]) => short.reduce((a, b) => (b.g > a.g ? b : a), short[0])?.skill;
  const wr = await router.route(written, { abstain: false });
  const wg = hit(leader(wr.shortlist));
  hits["written task, glance"] += wg;
  hits["written task, route"] += hit(wr.skill);
  hits["written task, route + abstention"] += hit((await router.route(written)).skill);
  const live = router.live();
  await live.append(await model.hiddenStates(tt.tokens, live.layer));
  const lr = await selectLive(live, t.messages, { abstain: false });
  const lg = hit(leader(lr.shortlist));
  hits["live, glance"] += lg;
  hits["live, route (selectLive)"] += hit(lr.skill);
  hits["live, route + abstention"] += hit((await selectLive(live, t.messages)).skill);
  hits["full context as text, glance"] += hit((await router.glance(t.messages, { live: false, topK: 1 }))[0]?.skill);
  const s = (byScenario[t.scenario] ??= { n: 0, written: 0, live: 0 });
  s.n++;
  s.written += wg;
  s.live += lg;
  if ((i + 1) % 10 === 0) console.error(`${i + 1}/${positives.length} (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
}
const n = v["gate-only"] ? 0 : positives.length - skipped;
const result: Record<string, unknown> = {
  date: new Date().toISOString(), model: model.path, projections: router.projections.hash.slice(0, 12), library: index.byId.size,
  trajectories: n, skipped, seed, maxTaskChars: maxChars,
  hitAt1: Object.fromEntries(rows.map((r) => [r, hits[r] / n])),
  byScenario: Object.fromEntries(Object.entries(byScenario).map(([k, s]) => [k, { n: s.n, writtenGlance: s.written / s.n, liveGlance: s.live / s.n }])),
  seconds: (performance.now() - t0) / 1000,
};
if (n > 0) console.log(`Hit@1 over ${n} trajectories (${index.byId.size} skills):`);
if (n > 0) for (const r of rows) console.log(`  ${r.padEnd(32)} ${(hits[r] / n).toFixed(3)}`);
for (const [k, s] of Object.entries(byScenario)) console.log(`  ${k}: ${s.n} trajectories, written glance ${(s.written / s.n).toFixed(3)}, live glance ${(s.live / s.n).toFixed(3)}`);

if (v.gate) {
  const gate = await loadGate(v.gate, { router });
  const set = [...positives, ...negatives];
  const t1 = performance.now();
  const { features, skipped: gs } = await collectGateFeatures(router, set, { stateLayer: gate.info!.stateLayer, allPositions: true, onProgress: (d, total) => d % 25 === 0 && console.error(`gate ${d}/${total}`) });
  const f = firingMetrics(gate, features);
  // Hit@1 of the live leader at the firing token, over on-time firings
  let fireHits = 0;
  const byId = new Map(set.map((t) => [t.id, t]));
  for (const feat of features) {
    if (!feat.needsSkill) continue;
    const at = firstFiring(gate, feat);
    if (at === null || at < feat.needStart) continue;
    const t = byId.get(feat.id)!;
    const tt = tokenizeTrajectory(model, t);
    const live = router.live();
    await live.append(await model.hiddenStates(tt.tokens.subarray(0, at + 1), live.layer));
    fireHits += acceptedIds(t.gold, index).has(live.top(1)[0].skill) ? 1 : 0;
  }
  // the gate's own cost per token (scores copy, features, the logit), over the first trajectory's rows
  const probe = tokenizeTrajectory(model, positives[0]);
  const pl = router.live();
  const hs = await model.hiddenStates(probe.tokens, pl.layer);
  const stepMs: number[] = [];
  const nEmbd = model.info.nEmbd;
  for (let p = 0; p < Math.min(200, probe.tokens.length); p++) {
    await pl.append(hs.subarray(p * nEmbd, (p + 1) * nEmbd));
    const ts = performance.now();
    gate.stepLive(pl, hs.subarray(p * nEmbd, (p + 1) * nEmbd));
    stepMs.push(performance.now() - ts);
  }
  stepMs.sort((a, b) => a - b);
  const gateStepMs = stepMs[Math.floor(stepMs.length / 2)];
  console.log(`  gate.stepLive per token (median over ${stepMs.length}): ${gateStepMs.toFixed(3)} ms at ${index.byId.size} skills`);
  result.gate = { gateStepMs, file: v.gate, stateLayer: gate.info!.stateLayer, trainedOn: gate.info!.librarySize, skipped: gs.length, ...f, hitAt1AtFiring: f.onTime ? fireHits / f.onTime : null, seconds: (performance.now() - t1) / 1000 };
  console.log(`gate: ${f.onTime}/${f.positives} on time (recall ${f.recall.toFixed(3)}), ${f.early} early, ${f.missed} missed; ${f.falseFires}/${f.negatives} negatives fired; precision ${f.precision.toFixed(3)}`);
  console.log(`  latency: median ${f.medianFromNeedStart} tokens after the need's message starts, ${f.medianBeforeDecision} before its end; Hit@1 of the live leader at the firing: ${f.onTime ? (fireHits / f.onTime).toFixed(3) : "–"}`);
}
if (v.out) writeFileSync(v.out, JSON.stringify(result, null, 2) + "\n");
await router.close();
await model.dispose();
