/**
 * The verdict's read-outs (L, V) for glance records that lack them, on any machine, without a bank:
 * issue 14's verdict columns (g + αL, g + γV, the full ruling) for a backbone whose glance ran on a GPU
 * and whose verdict pass did not fit the device budget.
 *
 * The verdict reads the backbone alone, never the projections or the keys: for each record, the
 * glance's top `--top` skills (in glance order) go through the Router's own verdict code (`judge`,
 * src/route/verdict.ts) with a stand-in for the bank that hands out each skill's text. What differs
 * from `gavel eval --methods ruling`: r(s) is cut afresh by the encoder instead of at the cut install
 * recorded; both are the same bisection with the same --skill-budget, so the prefixes are the same.
 * Written records have the eval's shape (`verdict` in glance order, `chosen` at the default ruling),
 * so `calibrate`, fusion and the tables read them as they read a device run's.
 *
 *   npx vite-node scripts/backbone/verdict-records.ts -- --model M.gguf --records test-glance.jsonl.gz \
 *     --tasks ../shared/data/swe-skills-bench/tasks.jsonl --library golds.jsonl --library mit.jsonl \
 *     --out test-verdict.jsonl [--top 20] [--context 2048] [--skill-budget 512] [--threads N] [--candidates glance|pool]
 *
 * --candidates pool: judge each record's `verdict` entries instead of its glance's top `--top` (a
 * device run's pool: the glance's best 20 ∪ BM25's best 20, each with g), keeping their order and g,
 * so another backbone's L and V can be replayed over the pool a shipped route re-ranks.
 *
 * Resumable: records already in --out are skipped. Prints progress and the rate to stderr.
 */
import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import { Model } from "../../src/model/Model.js";
import { RenderEncoder } from "../../src/render/encode.js";
import { judge } from "../../src/route/verdict.js";
import { chooseByRuling } from "../../src/route/ruling.js";
import { PROJECTION_DEFAULTS } from "../../src/projections/meta.js";
import { appendPerQuery, loadLibrary, readPerQuery } from "../../lab/eval/io.js";
import { loadTasks } from "../../lab/eval/tasks.js";
import { type RouterParts, taskBudgets } from "../../src/route/parts.js";
import type { Skill } from "../../src/skills/index.js";
import { args, opt } from "./args.js";

const model = opt("model", "");
const recordsPath = opt("records", "");
const out = opt("out", "");
const tasksPath = opt("tasks", "../shared/data/swe-skills-bench/tasks.jsonl");
const libraries = args.flatMap((a, i) => (a === "--library" && i + 1 < args.length ? [args[i + 1]] : []));
const top = Number(opt("top", "20"));
const contextSize = Number(opt("context", "2048"));
const skillBudget = Number(opt("skill-budget", "512"));
const threads = Number(opt("threads", String(availableParallelism())));
const candidates = opt("candidates", "glance");
if (candidates !== "glance" && candidates !== "pool") {
  console.error(`--candidates is glance or pool, not ${candidates}`);
  process.exit(2);
}
if (!model || !recordsPath || !out || libraries.length === 0) {
  console.error("usage: verdict-records.ts --model M.gguf --records R.jsonl[.gz] --out O.jsonl --library L.jsonl [--library …] [--tasks T] [--top 20]");
  process.exit(2);
}

const records = await readPerQuery(recordsPath);
const done = new Set(existsSync(out) ? (await readPerQuery(out, { tornTail: true })).map((r) => r.id) : []);
const tasks = new Map((await loadTasks(tasksPath)).map((t) => [t.id, t]));
/** The candidates judged for a record: its glance's top `top`, or (--candidates pool) its recorded pool. */
const candidatesOf = (r: (typeof records)[number]): { skill: string; g: number }[] =>
  candidates === "pool" ? (r.verdict ?? []).map((v) => ({ skill: v.skill, g: v.g })) : (r.glance ?? []).slice(0, top);
const wanted = new Set(records.flatMap((r) => candidatesOf(r).map((h) => h.skill)));
const skills = new Map<string, Skill>();
for (const s of (await loadLibrary(libraries)).skills) if (wanted.has(s.id)) skills.set(s.id, s);
const missing = [...wanted].filter((id) => !skills.has(id));
if (missing.length) throw new Error(`${missing.length} glanced skills are in no --library (first: ${missing[0]})`);

// The eval's router settings (train-full.sh: --context 2048 --skill-budget 512); sequences: one per
// candidate, so a task's verdict is one scoreMany wave.
const widest = Math.max(2, ...records.map((r) => candidatesOf(r).length));
const m = await Model.load(model, { contextSize, threads, sequences: Math.min(candidates === "pool" ? widest : Math.max(2, top), 32), batchSize: Math.min(2048, contextSize) });
const encoder = new RenderEncoder(m, skillBudget);
// What judge reads of a bank: each candidate's entry (no recorded cut: cut afresh) and its text.
const library = {
  entry: (id: string) => ({ id }),
  text: async (e: { id: string }) => skills.get(e.id)!,
};
const parts = { model: m, encoder, library, ...taskBudgets(contextSize, skillBudget, encoder), keep: "end" } as unknown as RouterParts;

// `chosen` at the paper's defaults (calibration on validation records fits α, γ and Δ afterwards)
const { alpha, gamma, delta } = PROJECTION_DEFAULTS;
const ruling = { alpha, gamma, delta, maxShortlist: candidates === "pool" ? widest : top, beta: 0 };
const todo = records.filter((r) => !done.has(r.id) && candidatesOf(r).length);
console.error(`${model}: ${records.length} records, ${done.size} done, ${todo.length} to judge, top ${top}, ${skills.size} skills, ${threads} threads`);
const t0 = performance.now();
let n = 0;
for (const r of todo) {
  const task = tasks.get(r.id);
  if (!task) throw new Error(`task ${r.id} is not in ${tasksPath}`);
  const pool = candidatesOf(r).map((h) => ({ skill: h.skill, name: skills.get(h.skill)!.name, g: h.g }));
  const judged = await judge(parts, task.text, pool);
  const verdict = judged.map(({ skill, g, L, V }) => ({ skill, g, L, V }));
  const rec = {
    ...r,
    verdict,
    chosen: {
      ruling: chooseByRuling(verdict, ruling),
      rulingNoB: chooseByRuling(verdict, ruling),
      gL: chooseByRuling(verdict, { ...ruling, gamma: 0 }),
      gV: chooseByRuling(verdict, { ...ruling, alpha: 0 }),
    },
  };
  await appendPerQuery(out, rec);
  n++;
  const s = (performance.now() - t0) / 1000;
  console.error(`${n}/${todo.length} ${r.id}: ${s.toFixed(0)} s, ${(s / n).toFixed(1)} s a task`);
}
await m.dispose();
