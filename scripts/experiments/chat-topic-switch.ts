/**
 * A probe of a conversation that changes subject: SWE-Skills-Bench tasks (validation by default) inside agent
 * trajectories (lab/gate/trajectories.ts, the user-request scenario), each routed three ways over a
 * bank that holds their golds, abstention off: the trajectory alone (system prompt, chores, the task);
 * the same after K earlier trajectories' exchanges (other tasks, other golds: the conversation moved
 * on), as chat messages read live (what `context: "conversation"` routes in the adapters); and the
 * latest user message alone (the adapters' default, `"last-user"`). Hit@1 of each, and of the chat
 * glance's first for the first two (`router.glance(messages)`); a development
 * probe, no rule, nothing shipped from it.
 *
 *   npx vite-node scripts/experiments/chat-topic-switch.ts -- --bank DIR [--before 2] [--limit 100] [--offset 0] [--seed 1] [--batches 1,2,3,4,5] [--out records.jsonl]
 *
 * `--offset`: skip that many trajectories first; `--seed`: the trajectories' draw
 * (lab/gate/trajectories.ts); `--batches`: the benchmark's batches (test is 6-10); `--switched-only`:
 * only the route after the switch (no glance, the other two routes not run: their columns read 0).
 * What the lexical readers read follows GAVEL_LIVE_LEXICAL (src/config.ts).
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

const { values: v } = parseArgs({ options: { bank: { type: "string" }, before: { type: "string" }, limit: { type: "string" }, offset: { type: "string" }, seed: { type: "string" }, batches: { type: "string" }, out: { type: "string" }, "switched-only": { type: "boolean" } } });
if (!v.bank) throw new Error("--bank <dir> is required");
const before = Number(v.before ?? 2);
const tasks = await loadTasks(join("..", "shared", "data", "swe-skills-bench", "tasks.jsonl"));
const model = await Model.load(DEFAULT_MODEL, { contextSize: 2048, threads: 2 });
const router = await Router.open(model, { projections: DEFAULT_PROJECTIONS, bankDir: v.bank, skillBudget: 512, readOnly: true });
const index = new LibraryIndex(router.list());
const all = buildTrajectories(tasks, { batches: (v.batches ?? "1,2,3,4,5").split(",").map(Number), seed: Number(v.seed ?? 1), maxTaskChars: 1500, negatives: 0, scenarios: ["user-request"] }).filter((t) => t.needsSkill && acceptedIds(t.gold, index).size > 0);
const offset = Number(v.offset ?? 0);
const chosen = all.slice(offset, offset + Number(v.limit ?? 100));
const hits = { alone: 0, switched: 0, lastUser: 0, glanceAlone: 0, glanceSwitched: 0 };
const records: string[] = [];
for (const [c, t] of chosen.entries()) {
  const i = offset + c;
  const accepted = acceptedIds(t.gold, index);
  // K earlier trajectories of other golds, their exchanges without their system prompts
  const earlier = [];
  for (let j = 1; earlier.length < before && j < all.length; j++) {
    const o = all[(i + j * 37) % all.length];
    if (!o.gold.some((g) => t.gold.includes(g))) earlier.push(o);
  }
  const [system, ...rest] = t.messages;
  const switched = [system, ...earlier.flatMap((o) => o.messages.slice(1)), ...rest];
  const lastUser = [...t.messages].reverse().find((m) => m.role === "user")!;
  const pick = async (context: Parameters<Router["route"]>[0]) => (await router.route(context, { abstain: false })).skill;
  const only = v["switched-only"] === true;
  const r = { alone: only ? null : await pick(t.messages), switched: await pick(switched), lastUser: only ? null : await pick(lastUser.content) };
  const hit = (s: string | null) => (s !== null && accepted.has(s) ? 1 : 0);
  for (const k of ["alone", "switched", "lastUser"] as const) hits[k] += hit(r[k]);
  const glanced = only ? { alone: null, switched: null } : { alone: (await router.glance(t.messages, { topK: 1 }))[0]?.skill ?? null, switched: (await router.glance(switched, { topK: 1 }))[0]?.skill ?? null };
  hits.glanceAlone += hit(glanced.alone);
  hits.glanceSwitched += hit(glanced.switched);
  records.push(JSON.stringify({ task: t.task, earlier: earlier.map((o) => o.task), ...r, glanced, hits: [hit(r.alone), hit(r.switched), hit(r.lastUser)] }));
}
if (v["switched-only"]) console.log(`GAVEL_LIVE_LEXICAL=${process.env.GAVEL_LIVE_LEXICAL ?? "all"}; --switched-only: the alone and latest-message routes and the glances not run`);
console.log(`${chosen.length} user-request trajectories (seed ${v.seed ?? 1}, from ${offset}) over ${index.byId.size} skills, ${before} earlier trajectories before the switch; route Hit@1 (abstention off):`);
console.log(`  the trajectory alone ${hits.alone}; after the switch, read live ${hits.switched}; the latest user message alone ${hits.lastUser}`);
console.log(`  the chat glance's first: the trajectory alone ${hits.glanceAlone}, after the switch ${hits.glanceSwitched}`);
if (v.out) writeFileSync(v.out, records.join("\n") + "\n");
await router.close();
await model.dispose();
