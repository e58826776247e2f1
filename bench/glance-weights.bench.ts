/**
 * The glance's row weights on an installed bank: the paper's uniform vote against each task token
 * weighted by its idf over the routable skills' key tokens (`GAVEL_GLANCE_ROW_WEIGHTS=idf`,
 * src/route/context.ts rowWeights, Library.tokenIdf), beside BM25 over the bank's texts (Lucene's
 * constants and the lexical expert's) as anchors: glance Hit@1, R@5 and R@20 on SWE-Skills-Bench
 * task statements. Each task is encoded once (as a route does: context 2048, skill budget 512) and
 * glanced through the route's own glance (`glanceLibrary`: the exact glance, or the key IVF from
 * 3,000 skills) once per weighting.
 *
 *   npm run bench -- glance-weights <bank> <tasks.jsonl> [--batches 1-5] [--limit N]
 *
 * `bank`: installed with the embedded default model and projections; a task counts when one of its
 * gold skills is in the bank (by id, or a bank entry with the gold's name and description).
 */
import { readFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { defaultModelPaths } from "../src/defaults.js";
import { Model } from "../src/model/Model.js";
import { Projections } from "../src/projections/projections.js";
import { Library } from "../src/bank/library.js";
import { RenderEncoder } from "../src/render/encode.js";
import { encodeQueries, rowWeights } from "../src/route/context.js";
import { glanceLibrary } from "../src/route/glance.js";
import { type RouterParts, taskBudgets } from "../src/route/parts.js";
import { loadBinding } from "../src/native/binding.js";
import { loadTasks, selectTasks } from "../lab/eval/tasks.js";

const argv = process.argv.slice(2);
function flag(name: string, fallback: string): string {
  const i = argv.indexOf(name);
  return i >= 0 ? argv.splice(i, 2)[1] : fallback;
}
const batches = flag("--batches", "1-5");
const limit = Number(flag("--limit", "Infinity"));
const [bankDir, tasksPath] = argv;
if (!bankDir || !tasksPath) {
  console.error("usage: npm run bench -- glance-weights <bank> <tasks.jsonl> [--batches 1-5] [--limit N]");
  process.exit(2);
}

interface Tally { h1: number; r5: number; r20: number }
const METHODS = ["BM25, k1 1.2, b 0.75", "BM25, k1 3, b 1 (the lexical expert)", "glance, uniform rows", "glance, idf rows"] as const;

async function main(): Promise<void> {
  const { projections: projPath, model: modelPath } = defaultModelPaths();
  const projections = await Projections.load(projPath);
  const library = await Library.openSnapshot(bankDir, projections);
  const manifest = JSON.parse(readFileSync(`${bankDir}/manifest.json`, "utf8")) as { entries: { id: string; name: string; description: string }[] };
  const byId = new Map(manifest.entries.map((e) => [e.id, e]));
  const byText = new Map<string, string[]>();
  for (const e of manifest.entries) byText.set(`${e.name}\u0000${e.description}`, [...(byText.get(`${e.name}\u0000${e.description}`) ?? []), e.id]);
  const tasks = selectTasks(await loadTasks(tasksPath), { batches, limit });
  const model = await Model.load(modelPath, { contextSize: 2048 });
  const encoder = new RenderEncoder(model, 512);
  const parts = { model, projections, encoder, library, ...taskBudgets(2048, 512, encoder), keep: "end" } as unknown as RouterParts;
  const lex = library.lexicon.index;
  const lexIds = lex.ids();
  console.log(`glance row weights: ${bankDir}, ${library.keys.size} skills, ${library.keys.keys} keys; batches ${batches}; ` +
    `${cpus().length} cores (${cpus()[0]?.model}), ${loadBinding().kernelIsa()}, load ${loadavg().map((x) => x.toFixed(1)).join(" ")}, node ${process.version}, ${new Date().toISOString()}`);
  const acc = new Map<string, Tally>(METHODS.map((m) => [m, { h1: 0, r5: 0, r20: 0 }]));
  const tally = (m: string, rank: number): void => {
    const a = acc.get(m)!;
    if (rank === 0) a.h1++;
    if (rank >= 0 && rank < 5) a.r5++;
    if (rank >= 0 && rank < 20) a.r20++;
  };
  let n = 0;
  const t0 = performance.now();
  for (const t of tasks) {
    const gold = new Set<string>();
    for (const g of t.gold_skill_ids) {
      const e = byId.get(g);
      if (e) for (const id of byText.get(`${e.name}\u0000${e.description}`) ?? []) gold.add(id);
    }
    if (gold.size === 0) continue;
    n++;
    for (const [m, params] of [[METHODS[0], { k1: 1.2, b: 0.75 }], [METHODS[1], { k1: 3, b: 1 }]] as const) {
      const sc = lex.scores(t.text, params);
      const order = Array.from(sc.keys()).sort((a, b) => sc[b] - sc[a] || a - b);
      tally(m, order.findIndex((i) => gold.has(lexIds[i])));
    }
    const q = await encodeQueries(parts, t.text, false);
    for (const [m, mode] of [[METHODS[2], "uniform"], [METHODS[3], "idf"]] as const) {
      const weights = rowWeights(parts, q.tokens, mode);
      const { ranked } = await glanceLibrary(parts, async () => ({ ...q, weights }));
      tally(m, ranked.findIndex((r) => gold.has(r.skill)));
    }
  }
  console.log(`  ${n} of ${tasks.length} tasks have a gold in the bank (${((performance.now() - t0) / 1e3).toFixed(0)} s)`);
  console.log(`  | method | Hit@1 | R@5 | R@20 |`);
  for (const [m, a] of acc) console.log(`  | ${m} | ${(a.h1 / n).toFixed(3)} | ${(a.r5 / n).toFixed(3)} | ${(a.r20 / n).toFixed(3)} |`);
  await model.dispose();
}

await main();
