/**
 * Per-query records of the demo's in-domain tasks (examples/demo-tasks.json) over examples/skills
 * with the embedded default pair, every skill of the library in the verdict's pool (g, L, V, BM25):
 * extra fit rows for the re-ranker (rerank.ts --extra-records), as the abstention model was fitted on
 * the demo's tasks beside validation. The everyday requests (examples/everyday-tasks.json) stay out.
 *
 *   npx vite-node scripts/select/demo-records.ts -- OUT.jsonl.gz
 *
 * The demo's own settings (src/cli/commands/demo.ts): context 16384 in one unified pool, flash
 * attention, skill budget 1024.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { Model, Projections, Router } from "../../src/index.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { evaluate, loadLibrary, type EvalTask } from "../../lab/eval/index.js";

const out = process.argv.slice(2).filter((a) => a !== "--")[0];
if (!out) throw new Error("usage: demo-records.ts OUT.jsonl.gz");
const demo = JSON.parse(readFileSync("examples/demo-tasks.json", "utf8")) as { task: string; expected: string | null }[];
const tasks: EvalTask[] = demo.filter((t) => t.expected !== null).map((t, i) => ({ id: `demo/${i}`, text: t.task, gold_skill_ids: [t.expected!] }));
const model = await Model.load(DEFAULT_MODEL, { contextSize: 16_384, sequences: 40, kvLayout: "unified", flashAttention: true });
const bankDir = mkdtempSync(join(tmpdir(), "gavel-demo-records-"));
try {
  // the ruling's own projections without a re-ranker: the records hold every skill's read-outs
  const projections = (await Projections.load(DEFAULT_PROJECTIONS)).withCalibration({ rerank: null });
  const router = await Router.open(model, { projections, bankDir, skillBudget: 1024 });
  const installed = await router.install("examples/skills");
  if (installed.failed.length) throw new Error(`install failed: ${JSON.stringify(installed.failed)}`);
  const library = (await loadLibrary(["examples/skills"])).skills;
  const n = library.length;
  const res = await evaluate({ router, tasks, library, methods: ["bm25", "glance", "ruling"], pool: n, lexicalPool: n });
  writeFileSync(out, gzipSync(res.perQuery.map((r) => JSON.stringify(r)).join("\n") + "\n"));
  console.log(`wrote ${out}: ${res.perQuery.length} tasks, ${res.perQuery[0]?.verdict?.length} skills read each`);
  await router.close();
} finally {
  await model.dispose();
  rmSync(bankDir, { recursive: true, force: true });
}
