/**
 * Adds abstention's reference coverage (`gcov`, src/lexical/reference-idf.ts), `gcov2` and `skillWords` to
 * per-query records: for each record, the coverage of every skill of its verdict pool, by the
 * reference idf of the given projections, as `lexical.gcov` (each word weighed by its idf) and
 * `lexical.gcov2` (by its idf squared), and ln of each one's distinct words as
 * `lexical.skillWords` (lab/eval/lexical-fit.ts), so that the abstention fit can replay the features for
 * whichever skill the ruling picks.
 *
 * A record's task is found by its id (any `@library` suffix dropped) in the task files; a skill's text
 * is examples/skills/<id>/SKILL.md when that folder exists, else the skill of that id in
 * ../shared/data/skills-mit.jsonl.gz (read only when needed). `--oneline` cuts each example skill to one
 * line as scripts/device/tiny-records.sh ONELINE=1 does (its description's first sentence; its body's
 * first line), for records made over such libraries. The words are those the bank's BM25 index holds
 * for the skill (name, description and body, src/lexical/postings.ts `bm25DocTokens`).
 *
 *   npx vite-node scripts/select/reference-coverage.ts -- IN.jsonl[.gz] OUT.jsonl.gz --tasks A.jsonl[,B.jsonl]
 *     [--oneline] [--projections P]
 */
import { writeFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { existsSync } from "node:fs";
import { Projections } from "../../src/index.js";
import { DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { bm25DocTokens, bm25Tokens } from "../../src/lexical/postings.js";
import { loadLibrary, readPerQuery } from "../../lab/eval/io.js";
import { loadTaskTexts } from "../../lab/eval/tasks.js";

const argv = process.argv.slice(2).filter((a) => a !== "--");
const opt = (n: string) => { const i = argv.indexOf(n); return i >= 0 ? argv.splice(i, 2)[1] : undefined; };
const flag = (n: string) => { const i = argv.indexOf(n); return i >= 0 && argv.splice(i, 1).length > 0; };
const projPath = opt("--projections") ?? DEFAULT_PROJECTIONS;
const taskFiles = (opt("--tasks") ?? "").split(",").filter(Boolean);
const oneline = flag("--oneline");
const [input, output] = argv;
if (!input || !output || taskFiles.length === 0) throw new Error("usage: reference-coverage.ts IN.jsonl[.gz] OUT.jsonl.gz --tasks A.jsonl[,B] [--oneline] [--projections P]");
const ref = (await Projections.load(projPath)).referenceIdf;
if (!ref) throw new Error(`${projPath} carries no reference idf (scripts/lexical/reference-idf.ts writes one)`);

const texts = await loadTaskTexts(taskFiles);

type Doc = { name: string; description: string; body?: string };
/** One line of an example skill, as tiny-records.sh ONELINE=1 cuts it. */
const cut = (d: Doc): Doc => ({
  name: d.name,
  description: d.description.split(/(?<=\.) /)[0],
  body: (d.body ?? "").split("\n").find((l) => l.trim() !== "")?.replace(/^#+ */, "") ?? "",
});
const examples = new Map((await loadLibrary(["examples/skills"])).skills.map((s) => [s.id, s as Doc]));
let publicSkills: Map<string, Doc> | undefined;
const words = new Map<string, Set<string>>();
async function wordsOf(id: string): Promise<Set<string>> {
  let w = words.get(id);
  if (w) return w;
  let doc: Doc | undefined = existsSync(`examples/skills/${id}/SKILL.md`) ? examples.get(id) : undefined;
  if (doc && oneline) doc = cut(doc);
  if (!doc) {
    publicSkills ??= new Map((await loadLibrary(["../shared/data/skills-mit.jsonl.gz"])).skills.map((s) => [s.id, s as Doc]));
    doc = publicSkills.get(id);
  }
  if (!doc) throw new Error(`skill ${id}: neither in examples/skills nor in skills-mit`);
  w = new Set(bm25DocTokens(doc));
  words.set(id, w);
  return w;
}

const out: string[] = [];
let n = 0;
for (const r of await readPerQuery(input)) {
  const text = texts.get(r.id.split("@")[0]);
  if (text === undefined) throw new Error(`record ${r.id}: no task of that id in ${taskFiles.join(", ")}`);
  if (r.lexical) {
    const task = bm25Tokens(text);
    const gcov: Record<string, number> = {};
    const gcov2: Record<string, number> = {};
    const skillWords: Record<string, number> = {};
    for (const v of r.verdict ?? []) {
      const held = await wordsOf(v.skill);
      gcov[v.skill] = Math.round(ref.coverage(task, (x) => held.has(x)) * 1e6) / 1e6;
      gcov2[v.skill] = Math.round(ref.coverage(task, (x) => held.has(x), 2) * 1e6) / 1e6;
      skillWords[v.skill] = Math.round(Math.log(Math.max(1, held.size)) * 1e6) / 1e6;
    }
    r.lexical.gcov = gcov;
    r.lexical.gcov2 = gcov2;
    r.lexical.skillWords = skillWords;
    n++;
  }
  out.push(JSON.stringify(r));
}
writeFileSync(output, gzipSync(out.join("\n") + "\n"));
console.log(`${output}: ${out.length} records, ${n} with gcov (reference: ${ref.documents} documents, ${ref.words} words)`);
