/**
 * Adds abstention's domain score (`domain`, src/lexical/domain.ts) to per-query records: for each
 * record with lexical read-outs, the score of its task under the given projections' domain table, as
 * `lexical.domain` (lab/eval/lexical-fit.ts), so that the abstention fit can read the feature. A task
 * holding none of the table's words gets none (the feature is then absent, as at route time).
 *
 * A record's task is found by its id (any `@library` suffix dropped) in the task files.
 *
 *   npx vite-node scripts/lexical/domain-records.ts -- IN.jsonl[.gz] OUT.jsonl.gz --tasks A.jsonl[,B.jsonl] [--projections P]
 */
import { writeFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { Projections } from "../../src/index.js";
import { DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { readPerQuery } from "../../lab/eval/io.js";
import { loadTaskTexts } from "../../lab/eval/tasks.js";

const argv = process.argv.slice(2).filter((a) => a !== "--");
const opt = (n: string) => { const i = argv.indexOf(n); return i >= 0 ? argv.splice(i, 2)[1] : undefined; };
const projPath = opt("--projections") ?? DEFAULT_PROJECTIONS;
const taskFiles = (opt("--tasks") ?? "").split(",").filter(Boolean);
const [input, output] = argv;
if (!input || !output || taskFiles.length === 0) throw new Error("usage: domain-records.ts IN.jsonl[.gz] OUT.jsonl.gz --tasks A.jsonl[,B] [--projections P]");
const table = (await Projections.load(projPath)).domain;
if (!table) throw new Error(`${projPath} carries no domain table (scripts/lexical/write-domain.ts writes one)`);
const texts = await loadTaskTexts(taskFiles);
const out: string[] = [];
let n = 0;
for (const r of await readPerQuery(input)) {
  const text = texts.get(r.id.split("@")[0]);
  if (text === undefined) throw new Error(`record ${r.id}: no task of that id in ${taskFiles.join(", ")}`);
  if (r.lexical) {
    const d = table.score(text);
    if (d !== undefined) {
      r.lexical.domain = d;
      n++;
    } else delete r.lexical.domain;
  }
  out.push(JSON.stringify(r));
}
writeFileSync(output, gzipSync(out.join("\n") + "\n"));
console.log(`${output}: ${out.length} records, ${n} with a domain score (${table.words} words)`);
