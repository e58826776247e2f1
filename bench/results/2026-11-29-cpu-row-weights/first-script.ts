// Experiment: the glance's row weights uniform vs the task token's idf over the skills' key tokens.
import { readFileSync } from "node:fs";
import { defaultModelPaths } from "../../src/defaults.js";
import { Model } from "../../src/model/Model.js";
import { Projections } from "../../src/projections/projections.js";
import { Library } from "../../src/bank/library.js";
import { RenderEncoder } from "../../src/render/encode.js";
import { encodeQueries } from "../../src/route/context.js";
import type { RouterParts } from "../../src/route/parts.js";
import { keyIvfOf, keyIvfGlance } from "../../src/route/glance-index-use.js";
import { voteK } from "../../src/kernels/kernels.js";
import { loadTasks, selectTasks } from "../../lab/eval/tasks.js";

const [bankDir, tasksPath, batches = "1-5", limitS = "1000"] = process.argv.slice(2);
const { projections: projPath, model: modelPath } = defaultModelPaths();
const projections = await Projections.load(projPath);
const library = await Library.openSnapshot(bankDir, projections);
const man = JSON.parse(readFileSync(`${bankDir}/manifest.json`, "utf8"));
const N = man.entries.length;
const df = new Map<number, number>();
const nameDesc = new Map<string, string[]>();
for (const e of man.entries) {
  for (const t of new Set<number>(e.keyTokens)) df.set(t, (df.get(t) ?? 0) + 1);
  const k = `${e.name}\u0000${e.description}`;
  nameDesc.set(k, [...(nameDesc.get(k) ?? []), e.id]);
}
const byId = new Map<string, { name: string; description: string }>(man.entries.map((e: { id: string; name: string; description: string }) => [e.id, e]));
const idf = (t: number) => Math.log((N + 1) / ((df.get(t) ?? 0) + 1));
const tasks = selectTasks(await loadTasks(tasksPath), { batches, limit: Number(limitS) });
const model = await Model.load(modelPath, { contextSize: 2048, threads: 2 });
const encoder = new RenderEncoder(model, 512);
const parts = { model, projections, encoder, library, taskBudget: 2048 - 512 - encoder.verdictOverhead, keep: "end" } as unknown as RouterParts;
const index = await keyIvfOf(library);
const handles = library.keys.handles();
const k = voteK(library.keys.size);
const variants: Record<string, (toks: Int32Array | Uint32Array | number[]) => Float32Array> = {
  uniform: (t) => new Float32Array(t.length).fill(1),
  idf: (t) => Float32Array.from(t, (x) => idf(x)),
  idf2: (t) => Float32Array.from(t, (x) => idf(x) ** 2),
};
const acc: Record<string, { h1: number; r20: number; r5: number }> = {};
for (const v of [...Object.keys(variants), "bm25 (1.2, 0.75)", "bm25 (3, 1)"]) acc[v] = { h1: 0, r20: 0, r5: 0 };
const lex = library.lexicon.index;
const lexIds = lex.ids();
const tally = (v: string, rank: number) => {
  if (rank === 0) acc[v].h1++;
  if (rank >= 0 && rank < 5) acc[v].r5++;
  if (rank >= 0 && rank < 20) acc[v].r20++;
};
let n = 0;
for (const t of tasks) {
  const gold = new Set<string>();
  for (const g of t.gold_skill_ids) {
    const e = byId.get(g);
    if (!e) continue;
    for (const id of nameDesc.get(`${e.name}\u0000${e.description}`) ?? []) gold.add(id);
  }
  if (gold.size === 0) continue;
  n++;
  const q = await encodeQueries(parts, t.text, false);
  for (const [v, params] of [["bm25 (1.2, 0.75)", { k1: 1.2, b: 0.75 }], ["bm25 (3, 1)", { k1: 3, b: 1 }]] as const) {
    const sc = lex.scores(t.text, params);
    const order = Array.from(sc.keys()).sort((a, b) => sc[b] - sc[a] || a - b);
    tally(v, order.findIndex((i) => gold.has(lexIds[i])));
  }
  for (const [v, wf] of Object.entries(variants)) {
    const w = wf(Array.from(q.tokens));
    const res = await keyIvfGlance(library, index, q.queries, w, k);
    const cols = Array.from(res.g.keys()).sort((a, b) => res.g[b] - res.g[a] || a - b);
    const rank = cols.findIndex((c) => gold.has(library.idOf(res.handles ? res.handles[c] : handles[c])));
    tally(v, rank);
  }
}
console.log(`${bankDir}: ${N} skills, batches ${batches}, ${n} tasks with a gold in the bank`);
for (const [v, a] of Object.entries(acc)) console.log(`  ${v}: Hit@1 ${(a.h1 / n).toFixed(3)}, R@5 ${(a.r5 / n).toFixed(3)}, R@20 ${(a.r20 / n).toFixed(3)}`);
await model.dispose();
