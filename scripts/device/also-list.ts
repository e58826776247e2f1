// BM25's leaders over the full library text for each task, as `gavel eval --also F` reads them: the
// device evaluates over a packed library (bodies cut past the install render), so the lexical pool it
// would draw itself differs from what a user's bank (full text) ranks first.
// Usage: npx vite-node scripts/device/also-list.ts -- <tasks.jsonl[,more]> <out.jsonl> [--k N] [--k1 X] [--b Y] [--library F]…
import { writeFile } from "node:fs/promises";
import { loadLibrary } from "../../lab/eval/io.js";
import { loadTasks } from "../../lab/eval/tasks.js";
import { Bm25Index } from "../../src/lexical/bm25.js";

const args = process.argv.slice(2).filter((a) => a !== "--");
const opt = (name: string) => { const i = args.indexOf(name); return i >= 0 ? args.splice(i, 2)[1] : undefined; };
const libraries: string[] = [];
for (let i = args.indexOf("--library"); i >= 0; i = args.indexOf("--library")) libraries.push(args.splice(i, 2)[1]);
if (libraries.length === 0) libraries.push("../shared/data/swe-skills-bench/skills.jsonl", "../shared/data/skills-mit.jsonl.gz");
const k = Number(opt("--k") ?? 20);
const k1 = Number(opt("--k1") ?? 1.2);
const b = Number(opt("--b") ?? 0.75);
const [tasksPath, out] = args;
const tasks = (await Promise.all(tasksPath.split(",").map((p) => loadTasks(p)))).flat();
const { skills } = await loadLibrary(libraries);
const index = new Bm25Index(skills.filter((s) => !s.disableModelInvocation), { k1, b });
const lines = tasks.map((t) => JSON.stringify({ id: t.id, skills: index.search(t.text, k).map((h) => h.id) }));
await writeFile(out, lines.join("\n") + "\n");
console.log(`${out}: ${lines.length} tasks, BM25 (k1 ${k1}, b ${b}) top ${k} over ${index.size} skills`);
