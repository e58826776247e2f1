/**
 * What the two diagnostics over glance-vectors.ts's records share (key-bm25-diag.ts, budget-diag.ts):
 * their arguments `BANK TASKS.jsonl DIR [BATCHES]`, the bank and the embedded model (for its
 * tokenizer), the records' skill columns and each recorded task's gold columns, and how many other
 * skills a score ranks above a task's best gold.
 */
import { readFileSync } from "node:fs";
import { defaultModelPaths } from "../../src/defaults.js";
import { Model } from "../../src/model/Model.js";
import { Projections } from "../../src/projections/projections.js";
import { Library } from "../../src/bank/library.js";
import { loadTasks, selectTasks, type EvalTask } from "../../lab/eval/tasks.js";

export interface Diag {
  library: Library;
  model: Model;
  /** The records' columns. */
  skills: { id: string }[];
  /** The recorded tasks of BATCHES, each with its gold columns. */
  tasks: (EvalTask & { gold: Set<number> })[];
  close(): Promise<void>;
}

export async function openDiag(argv: string[]): Promise<Diag> {
  const [bankDir, tasksPath, dir, batches = "1-5"] = argv.filter((a) => a !== "--");
  if (!bankDir || !tasksPath || !dir) throw new Error("usage: BANK TASKS.jsonl DIR [BATCHES]");
  const { projections: projPath, model: modelPath } = defaultModelPaths();
  const library = await Library.openSnapshot(bankDir, await Projections.load(projPath));
  const model = await Model.load(modelPath, { contextSize: 512 });
  const skills = JSON.parse(readFileSync(`${dir}/skills.json`, "utf8")) as { id: string }[];
  const golds = new Map(readFileSync(`${dir}/tasks.jsonl`, "utf8").split("\n").filter(Boolean).map((l) => {
    const r = JSON.parse(l) as { id: string; gold: number[] };
    return [r.id, new Set(r.gold)];
  }));
  const tasks = selectTasks(await loadTasks(tasksPath), { batches }).filter((t) => golds.has(t.id)).map((t) => ({ ...t, gold: golds.get(t.id)! }));
  return { library, model, skills, tasks, close: async () => { await library.close(); await model.dispose(); } };
}

/** How many non-gold skills score above the best gold. */
export function aboveGold(scores: ArrayLike<number>, gold: Set<number>): number {
  let best = -Infinity;
  for (const c of gold) best = Math.max(best, scores[c]);
  let above = 0;
  for (let s = 0; s < scores.length; s++) if (!gold.has(s) && scores[s] > best) above++;
  return above;
}
