/**
 * The demo's and the everyday requests (examples/*.json) over the benchmark's 30,593 skills: their
 * lexical reach and what the large band of two projections files decides for each (BEFORE.gguf, then
 * models/gavel-mini.projections.gguf), from the reach, the library's size and the domain score.
 *
 *   NODE_OPTIONS=--max-old-space-size=12000 npx vite-node scripts/lexical/domain-examples.ts -- BEFORE.gguf
 */
import { readFileSync } from "node:fs";
import { loadLibrary } from "../../lab/eval/io.js";
import { Bm25Index } from "../../src/lexical/bm25.js";
import { lexicalReach } from "../../src/lexical/postings.js";
import { Projections } from "../../src/projections/projections.js";
import { abstentionFeatures, decideAbstention } from "../../src/route/abstention.js";
const lib = await loadLibrary(["../shared/data/swe-skills-bench/skills.jsonl", "../shared/data/skills-mit.jsonl.gz"]);
const idx = new Bm25Index(lib.skills.map((s) => ({ id: s.id, name: s.name, description: s.description, body: s.body })), { k1: 3, b: 1 });
const N = lib.skills.length;
const tasks = [...JSON.parse(readFileSync("examples/demo-tasks.json", "utf8")), ...JSON.parse(readFileSync("examples/everyday-tasks.json", "utf8"))];
const ps = await Promise.all([process.argv.slice(2).filter((a) => a !== "--")[0], "models/gavel-mini.projections.gguf"].map((f) => Projections.load(f)));
console.log("N", N);
const dec = [0, 0]; let nin = 0;
for (const t of tasks) {
  const s = idx.scores(t.task); let top = 0; for (const x of s) if (x > top) top = x;
  const reach = lexicalReach(top, N);
  const out = ps.map((p) => { const d = p.domain?.score(t.task); return decideAbstention(p.abstention, abstentionFeatures([{ S: 1, g: 0, V: NaN }], { reach, logN: Math.log(N), ...(d !== undefined ? { domain: d } : {}) })).abstain; });
  if (t.expected) { nin++; out.forEach((a, i) => (dec[i] += a ? 1 : 0)); }
  console.log(t.expected ?? "OFF", reach.toFixed(3), out.map((a) => (a ? "declined" : "routed")).join(" → "), t.task.slice(0, 60));
}
console.log(`in-domain declined: before ${dec[0]} of ${nin}, now ${dec[1]}`);
