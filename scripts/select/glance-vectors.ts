/**
 * The glance's whole g per task (every routable skill, not a top list) with the lexical expert's
 * BM25 beside it, over a real installed bank, for studying what a skill's size does to its vote
 * (scripts/select/skill-norm-fit.ts). The route's own encoding and glance with the shipped
 * projections (or `--variant WEIGHTS/SHARE`).
 *
 *   npx vite-node scripts/select/glance-vectors.ts -- BANK TASKS.jsonl OUT_DIR [--batches 1-5] [--limit N] [--variant idf/0.01]
 *
 * Writes OUT_DIR/skills.json (per column: id, nKeys, distinct key tokens) once and appends one line
 * per task to OUT_DIR/tasks.jsonl (gold columns, rows, g and BM25 as base64 float32; resumable).
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { defaultModelPaths } from "../../src/defaults.js";
import { Model } from "../../src/model/Model.js";
import { Projections } from "../../src/projections/projections.js";
import { Library } from "../../src/bank/library.js";
import { RenderEncoder } from "../../src/render/encode.js";
import { encodeQueries, rowWeights } from "../../src/route/context.js";
import { glanceLibrary } from "../../src/route/glance.js";
import { type RouterParts, taskBudgets } from "../../src/route/parts.js";
import { loadTasks, selectTasks } from "../../lab/eval/tasks.js";

const argv = process.argv.slice(2).filter((a) => a !== "--");
const opt = (n: string, d: string): string => { const i = argv.indexOf(n); return i >= 0 ? argv.splice(i, 2)[1] : d; };
const batches = opt("--batches", "1-5");
const limit = Number(opt("--limit", "Infinity"));
const variant = opt("--variant", "");
const [bankDir, tasksPath, outDir] = argv;
if (!bankDir || !tasksPath || !outDir) throw new Error("usage: glance-vectors.ts BANK TASKS.jsonl OUT_DIR [--batches 1-5] [--limit N] [--variant idf/0.01]");
mkdirSync(outDir, { recursive: true });

const { projections: projPath, model: modelPath } = defaultModelPaths();
let projections = await Projections.load(projPath);
if (variant) {
  const [w, share] = variant.split("/");
  if ((w !== "uniform" && w !== "idf") || !(Number(share) >= 0 && Number(share) <= 1)) throw new Error(`bad variant ${variant}`);
  projections = projections.withCalibration({ glanceRowWeights: w, glanceVoteShare: Number(share) });
}
const library = await Library.openSnapshot(bankDir, projections);
const model = await Model.load(modelPath, { contextSize: 2048 });
const encoder = new RenderEncoder(model, 512);
const parts = { model, projections, encoder, library, ...taskBudgets(2048, 512, encoder), keep: "end" } as unknown as RouterParts;
const lex = library.lexicon.index;
const lexCol = new Map(lex.ids().map((id, i) => [id, i]));
const routable = library.routable();
const ids = Array.from(routable, (h) => library.idOf(h));
const col = new Map(ids.map((id, i) => [id, i]));
if (!existsSync(`${outDir}/skills.json`)) {
  const skills = ids.map((id) => { const e = library.entry(id); return { id, name: e.name, description: e.description, nKeys: e.nKeys, distinct: new Set(e.keyTokens).size }; });
  writeFileSync(`${outDir}/skills.json`, JSON.stringify(skills));
}
const byText = new Map<string, number[]>();
ids.forEach((id, c) => { const e = library.entry(id); const key = `${e.name}\u0000${e.description}`; byText.set(key, [...(byText.get(key) ?? []), c]); });

const out = `${outDir}/tasks.jsonl`;
const done = new Set<string>();
if (existsSync(out)) for (const l of readFileSync(out, "utf8").split("\n")) if (l) done.add((JSON.parse(l) as { id: string }).id);
const tasks = selectTasks(await loadTasks(tasksPath), { batches, limit });
console.log(`glance vectors: ${bankDir}, ${ids.length} routable skills; batches ${batches}; ${tasks.length} tasks, ${done.size} done; ` +
  `${projections.glanceRowWeights}/${projections.glanceVoteShare}; ${cpus().length} cores, load ${loadavg().map((x) => x.toFixed(1)).join(" ")}, ${new Date().toISOString()}`);
const b64 = (a: ArrayLike<number>): string => Buffer.from(Float32Array.from(a).buffer).toString("base64");
const t0 = Date.now();
let n = 0;
for (const t of tasks) {
  if (done.has(t.id)) continue;
  const gold = new Set<number>();
  for (const id of t.gold_skill_ids) {
    if (!col.has(id)) continue;
    const e = library.entry(id);
    for (const c of byText.get(`${e.name}\u0000${e.description}`) ?? []) gold.add(c);
  }
  if (gold.size === 0) continue;
  const s = lex.scores(t.text, { k1: 3, b: 1 });
  const q = await encodeQueries(parts, t.text, false);
  const weights = rowWeights(parts, q.tokens);
  const { ranked } = await glanceLibrary(parts, async () => ({ ...q, weights }));
  const g = new Float32Array(ids.length);
  for (const r of ranked) g[col.get(r.skill)!] = r.g;
  const bm = new Float32Array(ids.length);
  ids.forEach((id, c) => { const i = lexCol.get(id); bm[c] = i === undefined ? 0 : s[i]; });
  appendFileSync(out, JSON.stringify({ id: t.id, batch: t.batch, gold: [...gold], rows: q.tokens.length, g: b64(g), bm25: b64(bm) }) + "\n");
  n++;
  if (n % 20 === 0) console.log(`  ${n} tasks, ${((Date.now() - t0) / n / 1000).toFixed(2)} s a task`);
}
console.log(`done: ${n} tasks in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
await library.close();
await model.dispose();
