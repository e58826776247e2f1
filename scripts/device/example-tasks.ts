/**
 * Writes the small library's in-domain tasks as a tasks JSONL for `gavel eval --tasks` and
 * lexical-records.ts, with the ids and batches of the records in bench/results/2026-11-28-h200-default/examples:
 * the demo's in-domain tasks (examples/demo-tasks.json, those with a skill) as `demo/<i>` in batch
 * `demo1` (fitted on), and the ten everyday requests (examples/everyday-tasks.json) as `everyday/<i>`
 * in batch `everyday6` (held out).
 *
 * Usage: npx vite-node scripts/device/example-tasks.ts -- <out.jsonl>
 */
import { readFileSync, writeFileSync } from "node:fs";

const out = process.argv.slice(2).filter((a) => a !== "--")[0];
if (!out) throw new Error("usage: example-tasks.ts <out.jsonl>");
const read = (f: string) => JSON.parse(readFileSync(new URL(`../../examples/${f}`, import.meta.url), "utf8")) as { task: string; expected: string | null }[];
const demo = read("demo-tasks.json").filter((t) => t.expected !== null);
const everyday = read("everyday-tasks.json");
const tasks = [
  ...demo.map((t, i) => ({ id: `demo/${i}`, text: t.task, gold_skill_ids: [t.expected], batch: "demo1" })),
  ...everyday.map((t, i) => ({ id: `everyday/${i}`, text: t.task, gold_skill_ids: [t.expected], batch: "everyday6" })),
];
writeFileSync(out, tasks.map((t) => JSON.stringify(t)).join("\n") + "\n");
console.log(`${tasks.length} example tasks → ${out}`);
