// Adds the lexical expert's inputs to `gavel eval --per-query` records, on the CPU (issue 13): BM25
// over the full library (the benchmark's gold skills + skills-mit, full text, as the BM25 row of
// issue 5's table) for each task, and for each record
//   - `s` (the raw BM25 score) on every glance and verdict entry,
//   - `lexical`: BM25's top 50 with scores (rounded to 1e-4), the best score of an accepted skill, and
//     log Σ_library exp(BM25/T) at each T of a grid (the normaliser of B = BM25/T − logZ(T)).
// `gavel calibrate` and score-per-query.ts read these fields; records without them read as B = 0.
//
//   - `bm25`: BM25's own top 20 over that library (records of a run whose BM25 read another text are
//     brought to the full text), and `s` on `also` entries (BM25's leaders read out by --lexical-pool).
// Usage: npx vite-node scripts/device/lexical-records.ts -- <tasks.jsonl[,more.jsonl]> <out-dir> <records.jsonl[.gz]> [more …]
//        [--k1 X] [--b Y] [--library F]… (default: the benchmark's skills.jsonl, then skills-mit.jsonl.gz)
// Each input a.jsonl.gz is written to <out-dir>/a.jsonl.gz.
import { writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { gzipSync } from "node:zlib";
import { loadLibrary, readPerQuery } from "../../lab/eval/io.js";
import { loadTasks } from "../../lab/eval/tasks.js";
import { Bm25Index } from "../../src/lexical/bm25.js";
import { lexicalReadouts } from "../../lab/eval/lexical-fit.js";

const args = process.argv.slice(2).filter((a) => a !== "--");
const libraries: string[] = [];
for (let i = args.indexOf("--library"); i >= 0; i = args.indexOf("--library")) libraries.push(args.splice(i, 2)[1]);
if (libraries.length === 0) libraries.push("../shared/data/swe-skills-bench/skills.jsonl", "../shared/data/skills-mit.jsonl.gz");
// --k1 X --b Y: BM25's constants (default Lucene's 1.2 / 0.75), as a projections file's lexical_k1 / _b
const opt = (name: string) => { const i = args.indexOf(name); return i >= 0 ? Number(args.splice(i, 2)[1]) : undefined; };
const k1 = opt("--k1");
const b = opt("--b");
const [tasksPath, outDir, ...files] = args;
const tasks = new Map((await Promise.all(tasksPath.split(",").map((p) => loadTasks(p)))).flat().map((t) => [t.id, t]));
const t0 = Date.now();
const { skills } = await loadLibrary(libraries);
const routable = skills.filter((s) => !s.disableModelInvocation);
const index = new Bm25Index(routable, { ...(k1 !== undefined ? { k1 } : {}), ...(b !== undefined ? { b } : {}) });
console.log(`BM25 over ${index.size} skills in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
const row = new Map(index.ids.map((id, i) => [id, i]));
for (const f of files) {
  const out: string[] = [];
  for (const r of await readPerQuery(f)) {
    const task = tasks.get(r.id);
    if (!task) throw new Error(`${f}: task ${r.id} is not in ${tasksPath}`);
    const { lexical, scoreOf } = lexicalReadouts(index, row, task.text, r.accepted);
    const withS = <T extends { skill: string }>(list: T[] | undefined) => list?.map((c) => ({ ...c, s: scoreOf(c.skill) }));
    const bm25 = lexical.top.slice(0, 20).map((c) => c.skill);
    out.push(JSON.stringify({ ...r, ...(r.bm25 ? { bm25 } : {}), glance: withS(r.glance), ...(r.also ? { also: withS(r.also) } : {}), verdict: withS(r.verdict), lexical }));
  }
  const name = join(outDir, basename(f).replace(/\.gz$/, "") + ".gz");
  await writeFile(name, gzipSync(out.join("\n") + "\n"));
  console.log(`${name}: ${out.length} records`);
}
