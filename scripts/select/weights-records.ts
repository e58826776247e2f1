/**
 * First-stage records under several glance settings (row weights, vote share), over a real installed
 * bank, for choosing them and refitting the fusion g + βB on validation (scripts/select/weights-fit.ts).
 * Per task, encoded once as a route does (context 2048, skill budget 512) and glanced through the
 * route's own glance (`glanceLibrary`) once per variant; a variant is `WEIGHTS/SHARE`, e.g.
 * `uniform/0` (the paper's vote), `idf/0.003333` (idf rows, each token voting for round(N/300)
 * skills, at least the paper's k):
 * - the candidates: the union of the best `--top` skills by each variant's g and by the lexical
 *   expert's BM25 (k1 3, b 1, the bank's lexicon over the full texts), each with every g and BM25;
 * - the floors: the `--top`-th value of each (a skill outside the union scores at most these, so a
 *   fused ranking over the union is exact when its best clears g floor + c · BM25 floor);
 * - log Σ exp(BM25 / T) over the library (B = BM25 / T − that), T the shipped temperature.
 *
 *   npx vite-node scripts/select/weights-records.ts -- BANK TASKS.jsonl OUT.jsonl.gz [--batches 1-5] [--top 50] [--limit N]
 *     [--variants uniform/0,idf/0] [--projections F]   (F: the bank's projections; default the embedded pair)
 *
 * A task counts when one of its gold skills is in the bank (by id, or a bank entry with the gold's
 * name and description). Appends per task (resumable: tasks already in OUT are skipped).
 */
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { gunzipSync, gzipSync } from "node:zlib";
import { cpus, loadavg } from "node:os";
import { defaultModelPaths } from "../../src/defaults.js";
import { Model } from "../../src/model/Model.js";
import { Projections } from "../../src/projections/projections.js";
import { Library } from "../../src/bank/library.js";
import { RenderEncoder } from "../../src/render/encode.js";
import { encodeQueries, rowWeights } from "../../src/route/context.js";
import { glanceLibrary } from "../../src/route/glance.js";
import { type RouterParts, taskBudgets } from "../../src/route/parts.js";
import { logPartition } from "../../src/lexical/posterior.js";
import { loadTasks, selectTasks } from "../../lab/eval/tasks.js";

const argv = process.argv.slice(2).filter((a) => a !== "--");
const opt = (n: string, d: string): string => { const i = argv.indexOf(n); return i >= 0 ? argv.splice(i, 2)[1] : d; };
const batches = opt("--batches", "1-5");
const top = Number(opt("--top", "50"));
const limit = Number(opt("--limit", "Infinity"));
const variants = opt("--variants", "uniform/0,idf/0").split(",").map((v) => {
  const [w, share] = v.split("/");
  if ((w !== "uniform" && w !== "idf") || !(Number(share) >= 0 && Number(share) <= 1)) throw new Error(`bad variant ${v}`);
  return { name: v, weights: w as "uniform" | "idf", share: Number(share) };
});
const projPath = opt("--projections", defaultModelPaths().projections);
const [bankDir, tasksPath, out] = argv;
if (!bankDir || !tasksPath || !out) throw new Error("usage: weights-records.ts BANK TASKS.jsonl OUT.jsonl.gz [--batches 1-5] [--top 50] [--limit N]");

const modelPath = defaultModelPaths().model;
const projections = await Projections.load(projPath);
const T = projections.lexicalTemperature;
const library = await Library.openSnapshot(bankDir, projections);
const manifest = JSON.parse(readFileSync(`${bankDir}/manifest.json`, "utf8")) as { entries: { id: string; name: string; description: string }[] };
const byId = new Map(manifest.entries.map((e) => [e.id, e]));
const byText = new Map<string, string[]>();
for (const e of manifest.entries) byText.set(`${e.name}\u0000${e.description}`, [...(byText.get(`${e.name}\u0000${e.description}`) ?? []), e.id]);
const model = await Model.load(modelPath, { contextSize: 2048 });
const encoder = new RenderEncoder(model, 512);
const partsOf = (share: number) => ({ model, projections: projections.withCalibration({ glanceVoteShare: share }), encoder, library, ...taskBudgets(2048, 512, encoder), keep: "end" }) as unknown as RouterParts;
const parts = partsOf(0);
const lex = library.lexicon.index;
const lexIds = lex.ids();
const lexCol = new Map(lexIds.map((id, i) => [id, i]));

const done = new Set<string>();
if (existsSync(out)) for (const l of gunzipSync(readFileSync(out)).toString().split("\n")) if (l) done.add((JSON.parse(l) as { id: string }).id);
const tasks = selectTasks(await loadTasks(tasksPath), { batches, limit });
console.log(`weights records: ${bankDir}, ${library.keys.size} skills, ${library.keys.keys} keys; batches ${batches}; ${tasks.length} tasks, ${done.size} done; ` +
  `${cpus().length} cores (${cpus()[0]?.model}), load ${loadavg().map((x) => x.toFixed(1)).join(" ")}, node ${process.version}, ${new Date().toISOString()}`);
const t0 = Date.now();
let n = 0;
for (const t of tasks) {
  if (done.has(t.id)) continue;
  const gold = new Set<string>();
  for (const id of t.gold_skill_ids) {
    const e = byId.get(id);
    if (e) for (const same of byText.get(`${e.name}\u0000${e.description}`) ?? []) gold.add(same);
  }
  if (gold.size === 0) continue;
  const s = lex.scores(t.text, { k1: 3, b: 1 });
  const q = await encodeQueries(parts, t.text, false);
  const gs: Map<string, number>[] = [];
  for (const v of variants) {
    const weights = rowWeights(parts, q.tokens, v.weights);
    const { ranked } = await glanceLibrary(partsOf(v.share), async () => ({ ...q, weights }));
    gs.push(new Map(ranked.map((r) => [r.skill, r.g])));
  }
  const ids = new Set<string>();
  const floors: number[] = [];
  for (const g of gs) {
    const order = [...g.entries()].sort((a, b) => b[1] - a[1]);
    order.slice(0, top).forEach(([id]) => ids.add(id));
    floors.push(order.length >= top ? order[top - 1][1] : 0);
  }
  const sOrder = Array.from(s.keys()).sort((a, b) => s[b] - s[a] || a - b);
  sOrder.slice(0, top).forEach((i) => ids.add(lexIds[i]));
  floors.push(s[sOrder[Math.min(top, sOrder.length) - 1]]);
  const cand = [...ids].map((id) => ({ skill: id, g: gs.map((g) => g.get(id) ?? 0), s: lexCol.has(id) ? s[lexCol.get(id)!] : 0 }));
  const rec = { id: t.id, batch: t.batch, size: library.keys.size, rows: q.tokens.length, gold: [...gold], logZ: logPartition(s, T), T, variants: variants.map((v) => v.name), floors, cand };
  appendFileSync(out, gzipSync(JSON.stringify(rec) + "\n"));
  n++;
  if (n % 20 === 0) console.log(`  ${n} tasks, ${((Date.now() - t0) / n / 1000).toFixed(2)} s a task`);
}
console.log(`done: ${n} tasks in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
await library.close();
await model.dispose();
