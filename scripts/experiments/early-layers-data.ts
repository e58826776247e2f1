/**
 * Token data for the early-layer experiment (scripts/experiments/early-layers.py): does training
 * gavel-mini's first two blocks, not only the glance's linear maps, teach the glance task text?
 *
 * Writes, under OUT (default .device/early, git-ignored), little-endian arrays and one JSON:
 * - skills.u16 / skills.i32: every skill's r(s) at the skill budget (512, as an install renders it),
 *   rows [offset, length, keyStart, keyEnd]; the 49 SWE-Skills-Bench golds first, then the public
 *   library (skills-mit), in the order `gavel install` reads them;
 * - tasks.u16 / tasks.i32: every SWE-Skills-Bench task rendered as the glance reads it (the task whole,
 *   up to the context), rows [offset, length, taskStart, taskEnd, batch, goldFrom, goldCount], and
 *   gold.i32: the gold skills' indices (lab/eval/metrics.ts acceptedIds: a gold and every skill with
 *   its name and description);
 * - stmts.u16 / stmts.i32 / stmts.f32: the unlabeled public statements of scripts/distill rendered the
 *   same way, rows [offset, length, taskStart, taskEnd, top1 … top5] (skill indices of BM25's five
 *   best over the public library, label.ts's labels.jsonl) and f32 rows of their b (log posterior);
 * - meta.json: counts, the model, the budgets.
 *
 *   npx vite-node scripts/experiments/early-layers-data.ts -- [--out DIR] [--labels .device/distill/k3/labels.jsonl]
 *     [--stmts .device/distill/tasks.jsonl]
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { defaultModelPaths } from "../../src/defaults.js";
import { Model } from "../../src/model/Model.js";
import { RenderEncoder } from "../../src/render/encode.js";
import { loadLibrary } from "../../lab/eval/io.js";
import { loadTasks, batchNumber } from "../../lab/eval/tasks.js";
import { acceptedIds, libraryIndex } from "../../lab/eval/metrics.js";

const argv = process.argv.slice(2).filter((a) => a !== "--");
const opt = (n: string, d: string): string => { const i = argv.indexOf(n); return i >= 0 ? argv[i + 1] : d; };
const out = opt("--out", ".device/early");
const labelsPath = opt("--labels", ".device/distill/k3/labels.jsonl");
const stmtsPath = opt("--stmts", ".device/distill/tasks.jsonl");
const shared = ["../shared/data", "/work/shared/data"].find((d) => existsSync(d)) ?? "../shared/data";
const CONTEXT = 2048, SKILL_BUDGET = 512;

mkdirSync(out, { recursive: true });
const model = await Model.load(defaultModelPaths().model, { contextSize: CONTEXT });
const enc = new RenderEncoder(model, SKILL_BUDGET);
const glanceBudget = CONTEXT - enc.taskOverhead;

class Stream {
  toks: number[] = [];
  rows: number[] = [];
  push(tokens: Int32Array, extra: number[]): void {
    for (const t of tokens) if (t < 0 || t > 65535) throw new Error(`token ${t} does not fit u16`);
    this.rows.push(this.toks.length, tokens.length, ...extra);
    for (const t of tokens) this.toks.push(t);
  }
  write(name: string): void {
    writeFileSync(`${out}/${name}.u16`, Buffer.from(Uint16Array.from(this.toks).buffer));
    writeFileSync(`${out}/${name}.i32`, Buffer.from(Int32Array.from(this.rows).buffer));
  }
}

const lib = await loadLibrary([`${shared}/swe-skills-bench/skills.jsonl`, `${shared}/skills-mit.jsonl.gz`]);
const skills = lib.skills;
const index = new Map(skills.map((s, i) => [s.id, i]));
const libIndex = libraryIndex(skills);
const t0 = Date.now();
const sk = new Stream();
const skipSkills = argv.includes("--stmts-only");
for (let i = 0; i < (skipSkills ? 0 : skills.length); i++) {
  const e = enc.encodeSkill(skills[i]);
  sk.push(e.tokens, [e.keyStart, e.keyEnd]);
  if ((i + 1) % 5000 === 0) console.log(`  ${i + 1} skills, ${((Date.now() - t0) / 1000).toFixed(0)} s`);
}
if (!skipSkills) sk.write("skills");

const tasks = await loadTasks(`${shared}/swe-skills-bench/tasks.jsonl`);
const ts = new Stream();
const gold: number[] = [];
let nTasks = 0;
for (const t of tasks) {
  // a gold and every library copy of it with its name and description, as `gavel eval` scores
  const g = new Set([...acceptedIds(t.gold_skill_ids, libIndex)].map((id) => index.get(id)!));
  if (g.size === 0) continue;
  const e = enc.encodeTask(t.text, glanceBudget, "end");
  ts.push(e.tokens, [e.taskStart, e.taskEnd, batchNumber(t.batch) ?? 0, gold.length, g.size]);
  gold.push(...g);
  nTasks++;
}
if (!skipSkills) ts.write("tasks");
if (!skipSkills) writeFileSync(`${out}/gold.i32`, Buffer.from(Int32Array.from(gold).buffer));

const texts = new Map<string, string>();
const lines = (p: string): unknown[] => readFileSync(p, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as unknown);
for (const r of lines(stmtsPath) as { id: string; text: string }[]) texts.set(r.id, r.text);
const st = new Stream();
const bs: number[] = [];
let nSt = 0;
for (const r of lines(labelsPath) as { id: string; top: { id: string; b: number }[] }[]) {
  const text = texts.get(r.id);
  if (!text || r.top.length === 0) continue;
  const top = r.top.slice(0, 5).map((x) => index.get(x.id) ?? -1);
  if (top[0] < 0) continue;
  while (top.length < 5) top.push(-1);
  const e = enc.encodeTask(text, glanceBudget, "end");
  st.push(e.tokens, [e.taskStart, e.taskEnd, ...top]);
  const b = r.top.slice(0, 5).map((x) => x.b);
  while (b.length < 5) b.push(-1e9);
  bs.push(...b);
  nSt++;
}
st.write("stmts");
writeFileSync(`${out}/stmts.f32`, Buffer.from(Float32Array.from(bs).buffer));
const meta = { skills: skills.length, golds: 49, tasks: nTasks, stmts: nSt, context: CONTEXT, skillBudget: SKILL_BUDGET, glanceBudget, model: defaultModelPaths().model, createdAt: new Date().toISOString() };
writeFileSync(`${out}/meta.json`, JSON.stringify(meta, null, 2) + "\n");
console.log(JSON.stringify(meta), `${((Date.now() - t0) / 1000).toFixed(0)} s`);
await model.dispose();
