/**
 * A live chat route over agent trajectories: SWE-Skills-Bench tasks embedded in bash-agent
 * trajectories (lab/gate/trajectories.ts: a system prompt, one to three chore exchanges, then the task
 * as a user request or as a ticket's `cat` output), each given to `router.glance(messages)` and
 * `router.route(messages, { abstain: false })` as chat messages up to the decision point (read live,
 * the default for messages). Hit@1: the first skill is a gold, or a library entry with a gold's name
 * and description (lab/eval/metrics.ts). The vote is whatever the environment says
 * (GAVEL_LIVE_ROW_WEIGHTS, GAVEL_LIVE_VOTE_SHARE: src/config.ts).
 *
 *   npx vite-node scripts/experiments/chat-trajectories.ts -- --bank DIR [--batches 1,2,3,4,5]
 *     [--limit N] [--seed S] [--out records.jsonl]
 *
 * The bank must hold the tasks' golds (`gavel install ../shared/data/swe-skills-bench/skills.jsonl`).
 */
import { parseArgs } from "node:util";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Model } from "../../src/model/Model.js";
import { Router } from "../../src/route/Router.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { loadTasks } from "../../lab/eval/tasks.js";
import { acceptedIds, LibraryIndex } from "../../lab/eval/metrics.js";
import { buildTrajectories } from "../../lab/gate/trajectories.js";

const { values: v } = parseArgs({
  options: { bank: { type: "string" }, batches: { type: "string" }, limit: { type: "string" }, seed: { type: "string" }, out: { type: "string" } },
});
if (!v.bank) throw new Error("--bank <dir> is required");
const batches = (v.batches ?? "1,2,3,4,5").split(",").map(Number);
const tasks = await loadTasks(join("..", "shared", "data", "swe-skills-bench", "tasks.jsonl"));
const model = await Model.load(DEFAULT_MODEL, { contextSize: 2048, threads: 2 });
const router = await Router.open(model, { projections: DEFAULT_PROJECTIONS, bankDir: v.bank, skillBudget: 512, readOnly: true });
const index = new LibraryIndex(router.list());
let positives = buildTrajectories(tasks, { batches, seed: Number(v.seed ?? 1), maxTaskChars: 1500, negatives: 0 }).filter((t) => t.needsSkill && acceptedIds(t.gold, index).size > 0);
if (v.limit) positives = positives.slice(0, Number(v.limit));
const records: string[] = [];
const hits = { glance: 0, route: 0 };
const byScenario: Record<string, { n: number; glance: number; route: number }> = {};
const t0 = performance.now();
for (const t of positives) {
  const accepted = acceptedIds(t.gold, index);
  const glanced = (await router.glance(t.messages, { topK: 1 }))[0]?.skill ?? null;
  const routed = (await router.route(t.messages, { abstain: false })).skill;
  const g = glanced !== null && accepted.has(glanced) ? 1 : 0;
  const r = routed !== null && accepted.has(routed) ? 1 : 0;
  hits.glance += g;
  hits.route += r;
  const s = (byScenario[t.scenario] ??= { n: 0, glance: 0, route: 0 });
  s.n++;
  s.glance += g;
  s.route += r;
  records.push(JSON.stringify({ task: t.task, scenario: t.scenario, glance: glanced, route: routed, glanceHit: g, routeHit: r }));
}
const n = positives.length;
console.log(`GAVEL_LIVE_ROW_WEIGHTS=${process.env.GAVEL_LIVE_ROW_WEIGHTS ?? "(unset)"} GAVEL_LIVE_VOTE_SHARE=${process.env.GAVEL_LIVE_VOTE_SHARE ?? "(unset)"}; batches ${batches.join(",")}; ${n} trajectories over ${index.byId.size} skills; ${((performance.now() - t0) / 1000).toFixed(0)} s`);
console.log(`  chat glance Hit@1 ${hits.glance} (${(hits.glance / n).toFixed(3)}), chat route Hit@1 ${hits.route} (${(hits.route / n).toFixed(3)})`);
for (const [k, s] of Object.entries(byScenario)) console.log(`  ${k}: ${s.n}, glance ${s.glance}, route ${s.route}`);
if (v.out) writeFileSync(v.out, records.join("\n") + "\n");
await router.close();
await model.dispose();
