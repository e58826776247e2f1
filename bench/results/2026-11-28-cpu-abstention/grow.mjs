// How the abstention model holds as the small library grows: examples/skills plus the first K skills
// of SWE-Skills-Bench's skills.jsonl (in file order), routed through the real router with the demo's
// settings: the 20 in-domain requests (the demo's and the everyday ones) and the 80 hand-written
// off-domain prompts. Usage (after npx tsup):
//   node bench/results/2026-11-28-cpu-abstention/grow.mjs <projections.gguf> K [K …]
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model, Router, defaultModelPaths } from "../../../dist/index.js";

const [projections, ...ks] = process.argv.slice(2);
const root = new URL("../../../", import.meta.url).pathname;
const read = (f) => JSON.parse(readFileSync(join(root, "examples", f), "utf8"));
const inDomain = [...read("demo-tasks.json"), ...read("everyday-tasks.json")].filter((t) => t.expected !== null);
const offDomain = readFileSync(join(root, "bench/data/off-domain-prompts.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l).text);
const extra = readFileSync(join(root, "../shared/data/swe-skills-bench/skills.jsonl"), "utf8").trim().split("\n");
const model = await Model.load(defaultModelPaths().model, { contextSize: 16_384, sequences: 40, kvLayout: "unified", flashAttention: true, threads: 2 });
console.log(`projections ${projections}`);
for (const k of ks.map(Number)) {
  const dir = mkdtempSync(join(tmpdir(), "gavel-grow-"));
  const router = await Router.open(model, { projections, bankDir: join(dir, "bank"), skillBudget: 1024 });
  await router.install(join(root, "examples", "skills"));
  if (k > 0) {
    writeFileSync(join(dir, "extra.jsonl"), extra.slice(0, k).join("\n") + "\n");
    await router.install(join(dir, "extra.jsonl"));
  }
  let declined = 0, right = 0, triggered = 0;
  const worst = [];
  for (const t of inDomain) {
    const r = await router.route(t.task);
    if (r.abstained) declined++;
    else if (r.skill === t.expected) right++;
    worst.push(r.abstention.score);
  }
  for (const p of offDomain) if (!(await router.route(p)).abstained) triggered++;
  console.log(`${24 + k} skills: in-domain declined ${declined}/${inDomain.length}, right ${right}; off-domain triggers ${triggered}/${offDomain.length} (${(triggered / offDomain.length).toFixed(3)}); highest in-domain logit ${Math.max(...worst).toFixed(2)}`);
  await router.close();
  rmSync(dir, { recursive: true, force: true });
}
await model.dispose();
