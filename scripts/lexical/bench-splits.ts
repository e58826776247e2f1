// The benchmark library and its task splits as the lexical experiments read them: SWE-Skills-Bench's
// golds mixed into the public skills (routable ones only), and validation (batches 1-5) and test
// (6-10) as task text with the ids accepted as right (a gold, or a library copy of it with the same
// name and description, as `gavel eval` scores), tasks without one left out.
import { loadLibrary } from "../../lab/eval/io.js";
import { loadTasks } from "../../lab/eval/tasks.js";
import { acceptedIds, libraryIndex } from "../../lab/eval/metrics.js";

export async function benchSplits(shared = "../shared") {
  const all = await loadTasks(`${shared}/data/swe-skills-bench/tasks.jsonl`);
  const { skills } = await loadLibrary([`${shared}/data/swe-skills-bench/skills.jsonl`, `${shared}/data/skills-mit.jsonl.gz`]);
  const routable = skills.filter((s) => !s.disableModelInvocation);
  const lib = libraryIndex(routable);
  const split = (test: boolean) => all.filter((t) => {
    const n = Number(String(t.batch).replace(/\D/g, ""));
    return test ? n >= 6 : n <= 5;
  }).map((t) => ({ text: t.text, accepted: acceptedIds(t.gold_skill_ids, lib) })).filter((t) => t.accepted.size > 0);
  return { routable, splits: { validation: split(false), test: split(true) } };
}
