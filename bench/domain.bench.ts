/**
 * What the abstention's domain score (src/lexical/domain.ts) adds to a route: the shipped table's
 * `score` over SWE-Skills-Bench's test task statements (batches 6-10, the long tasks a 30K-skill route
 * reads) and the examples' short requests, beside what every route over a large library already
 * does with the same text, BM25 of the whole benchmark library (~30.6K routable skills) under the
 * lexical expert's constants, timed in the same run.
 *
 *   npm run bench -- domain [reps=5]
 *
 * Each text is scored once before timing; then `reps` rounds, each text once a round. Prints p50 /
 * p95 per text in ms and the ratio of the domain score's p50 to BM25's.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { loadLibrary } from "../lab/eval/io.js";
import { loadTasks, selectTasks } from "../lab/eval/tasks.js";
import { Bm25Index } from "../src/lexical/bm25.js";
import { Projections } from "../src/projections/projections.js";
import { DEFAULT_PROJECTIONS } from "../src/defaults.js";
import { median, quantile } from "./data.js";

const reps = Number(process.argv[2] ?? 5);
if (!Number.isInteger(reps) || reps < 1) throw new Error(`reps must be a positive integer, got ${process.argv[2]}`);
const shared = join(process.cwd(), "..", "shared", "data");
const projections = await Projections.load(DEFAULT_PROJECTIONS);
const table = projections.domain;
if (!table) throw new Error(`${DEFAULT_PROJECTIONS} carries no domain table`);
const long = selectTasks(await loadTasks(join(shared, "swe-skills-bench", "tasks.jsonl")), { batches: "6-10" }).map((t) => t.text);
const short = ["examples/demo-tasks.json", "examples/everyday-tasks.json"].flatMap((f) => (JSON.parse(readFileSync(f, "utf8")) as { task: string }[]).map((t) => t.task));
const { skills } = await loadLibrary([join(shared, "swe-skills-bench", "skills.jsonl"), join(shared, "skills-mit.jsonl.gz")]);
const routable = skills.filter((s) => !s.disableModelInvocation);
const t0 = performance.now();
const bm25 = new Bm25Index(routable.map((s) => ({ id: s.id, name: s.name, description: s.description, body: s.body })), { k1: projections.lexicalK1, b: projections.lexicalB });
console.log(`${routable.length} routable skills indexed in ${((performance.now() - t0) / 1000).toFixed(1)} s; the table holds ${table.words} words`);

function times(texts: readonly string[], f: (text: string) => unknown): number[] {
  for (const t of texts) f(t);
  const out: number[] = [];
  for (let r = 0; r < reps; r++) {
    for (const t of texts) {
      const s = performance.now();
      f(t);
      out.push(performance.now() - s);
    }
  }
  return out;
}
const fmt = (v: number) => (v < 0.1 ? v.toFixed(4) : v.toFixed(2));
console.log("texts\tn\tdomain p50 / p95 ms\tBM25 over the library p50 / p95 ms\tdomain / BM25 (p50)");
for (const [name, texts] of [["test task statements", long], ["the examples' requests", short]] as const) {
  const d = times(texts, (t) => table.score(t));
  const b = times(texts, (t) => bm25.scores(t));
  console.log(`${name}\t${texts.length}\t${fmt(median(d))} / ${fmt(quantile(d, 0.95))}\t${fmt(median(b))} / ${fmt(quantile(b, 0.95))}\t${(median(d) / median(b)).toExponential(2)}`);
}
