import { loadLibrary } from "../../lab/eval/io.js";
import { loadTasks, selectTasks } from "../../lab/eval/tasks.js";
import { Bm25Index } from "../../src/lexical/bm25.js";
import { logPartition } from "../../src/lexical/posterior.js";
const { skills } = await loadLibrary(["../shared/data/swe-skills-bench/skills.jsonl", "../shared/data/skills-mit.jsonl.gz"]);
let t = performance.now();
const idx = new Bm25Index(skills.filter((s) => !s.disableModelInvocation));
console.log("index", idx.size, "skills", ((performance.now() - t) / 1000).toFixed(2), "s");
const tasks = selectTasks(await loadTasks("../shared/data/swe-skills-bench/tasks.jsonl"), { batches: "6-10" });
const ms: number[] = [];
for (const rep of [0, 1]) for (const task of tasks) {
  t = performance.now();
  const s = idx.scores(task.text);
  logPartition(s, 53.8174);
  if (rep) ms.push(performance.now() - t);
}
ms.sort((a, b) => a - b);
console.log(`B for one task over the library: median ${ms[ms.length >> 1].toFixed(2)} ms, p90 ${ms[Math.floor(ms.length * 0.9)].toFixed(2)} ms, max ${ms.at(-1)!.toFixed(2)} ms (${ms.length} tasks)`);
