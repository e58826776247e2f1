/**
 * Requests over the benchmark's 30,593 skills: each one's lexical reach and what the large band of
 * each projections file decides for it, from the reach, the library's size and the domain score (what
 * the large band reads, so the decision is the route's own).
 *
 *   NODE_OPTIONS=--max-old-space-size=12000 npx vite-node scripts/lexical/domain-examples.ts -- BEFORE.gguf [AFTER.gguf] [--tasks F1,F2]
 *
 * AFTER defaults to models/gavel-mini.projections.gguf. Without --tasks: the demo's and the everyday
 * requests (examples/*.json). --tasks reads request files as scripts/select/requests.ts does (.jsonl
 * of {text, gold_skill_ids}, none for an off-domain prompt, or the examples' .json files).
 */
import { loadLibrary } from "../../lab/eval/io.js";
import { Bm25Index } from "../../src/lexical/bm25.js";
import { lexicalReach } from "../../src/lexical/postings.js";
import { Projections } from "../../src/projections/projections.js";
import { abstentionFeatures, decideAbstention } from "../../src/route/abstention.js";
import { readRequests } from "../select/requests.js";

const argv = process.argv.slice(2).filter((a) => a !== "--");
const ti = argv.indexOf("--tasks");
const taskFiles = ti >= 0 ? argv[ti + 1]!.split(",") : ["examples/demo-tasks.json", "examples/everyday-tasks.json"];
const files = argv.filter((_, i) => ti < 0 || (i !== ti && i !== ti + 1));
if (files.length < 1) throw new Error("usage: domain-examples.ts BEFORE.gguf [AFTER.gguf] [--tasks F1,F2]");
if (files.length < 2) files.push("models/gavel-mini.projections.gguf");


const lib = await loadLibrary(["../shared/data/swe-skills-bench/skills.jsonl", "../shared/data/skills-mit.jsonl.gz"]);
const idx = new Bm25Index(lib.skills.map((s) => ({ id: s.id, name: s.name, description: s.description, body: s.body })), { k1: 3, b: 1 });
const N = lib.skills.length;
const tasks = taskFiles.flatMap(readRequests).map((r) => ({ text: r.task, label: r.expected ?? "OFF", off: r.expected === null }));
const ps = await Promise.all(files.map((f) => Projections.load(f)));
console.log("N", N, "projections", files.join(" → "));
const dec = files.map(() => 0);
const through = files.map(() => 0);
let nin = 0;
for (const t of tasks) {
  const s = idx.scores(t.text);
  let top = 0;
  for (const x of s) if (x > top) top = x;
  const reach = lexicalReach(top, N);
  const out = ps.map((p) => {
    const d = p.domain?.score(t.text);
    return decideAbstention(p.abstention, abstentionFeatures([{ S: 1, g: 0, V: NaN }], { reach, logN: Math.log(N), ...(d !== undefined ? { domain: d } : {}) })).abstain;
  });
  if (!t.off) nin++;
  out.forEach((a, i) => { if (!t.off && a) dec[i]++; if (t.off && !a) through[i]++; });
  const doms = ps.map((p) => p.domain?.score(t.text)?.toFixed(2) ?? "–").join(" → ");
  console.log(t.label, reach.toFixed(3), doms, out.map((a) => (a ? "declined" : "routed")).join(" → "), t.text.slice(0, 60));
}
console.log(`in-domain declined (of ${nin}): ${dec.join(" → ")}; off-domain let through (of ${tasks.length - nin}): ${through.join(" → ")}`);
