/**
 * The default route over examples/skills under a given projections file: the demo's tasks
 * (examples/demo-tasks.json), the everyday requests (examples/everyday-tasks.json) and, with one
 * Helm-rollback skill added, a Helm request (as test/e2e/serve-writes.test.ts installs it). Prints each
 * route's pick, and the counts. A check for a re-ranker that may apply to small libraries.
 *
 *   npx vite-node scripts/select/examples-check.ts -- PROJECTIONS.gguf [--off-domain PROMPTS.jsonl]
 *
 * `--off-domain`: also route those prompts (bench/data/off-domain-prompts.jsonl: hand-written, none
 * served by any skill) over the 24 skills and count the ones that load a skill, by their batch's half
 * (offhw1-5, the abstention's fitting prompts; offhw6-10, held out).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model, Projections, Router } from "../../src/index.js";
import { DEFAULT_MODEL } from "../../src/defaults.js";

const argv = process.argv.slice(2).filter((a) => a !== "--");
const offAt = argv.indexOf("--off-domain");
const offPath = offAt >= 0 ? argv.splice(offAt, 2)[1] : undefined;
const projPath = argv[0];
if (!projPath) throw new Error("usage: examples-check.ts PROJECTIONS.gguf");
const model = await Model.load(DEFAULT_MODEL, { contextSize: 4096 });
const dir = mkdtempSync(join(tmpdir(), "gavel-examples-check-"));
try {
  const router = await Router.open(model, { projections: await Projections.load(projPath), bankDir: join(dir, "bank") });
  await router.install("examples/skills");
  type T = { task: string; expected: string | null };
  const run = async (name: string, tasks: T[], abstain: boolean) => {
    let right = 0, declined = 0;
    for (const t of tasks) {
      const r = await router.route(t.task, { abstain });
      const got = r.abstained ? null : r.skill;
      if (got === t.expected) right++;
      if (r.abstained) declined++;
      console.log(`${got === t.expected ? "ok  " : "MISS"} ${name}: ${JSON.stringify(t.task.slice(0, 70))} → ${got ?? "(declined)"} (expected ${t.expected ?? "a decline"}; verdict ${r.verdict ?? "?"})`);
    }
    console.log(`${name}: ${right} of ${tasks.length} right, ${declined} declined`);
  };
  await run("demo", JSON.parse(readFileSync("examples/demo-tasks.json", "utf8")) as T[], true);
  await run("everyday", JSON.parse(readFileSync("examples/everyday-tasks.json", "utf8")) as T[], true);
  if (offPath) {
    const prompts = readFileSync(offPath, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as { text: string; batch: string });
    for (const half of [[1, 5], [6, 10]] as const) {
      const set = prompts.filter((p) => { const b = Number(/(\d+)$/.exec(p.batch)?.[1]); return b >= half[0] && b <= half[1]; });
      let loaded = 0;
      for (const p of set) {
        const r = await router.route(p.text, { abstain: true });
        if (!r.abstained) { loaded++; console.log(`LOAD off-domain ${half[0]}-${half[1]}: ${JSON.stringify(p.text.slice(0, 70))} → ${r.skill}`); }
      }
      console.log(`off-domain prompts ${half[0]}-${half[1]}: ${loaded} of ${set.length} load a skill`);
    }
  }
  const helm = join(dir, "helm", "helm-rollback");
  mkdirSync(helm, { recursive: true });
  writeFileSync(join(helm, "SKILL.md"), "---\nname: helm-rollback\ndescription: Roll back a failed Helm release on a Kubernetes cluster to an earlier revision. Use when a helm upgrade broke a deployment.\n---\n# helm-rollback\n\nRun `helm history <release>` to list revisions, then `helm rollback <release> <revision> --wait`. Check the pods with kubectl get pods afterwards.\n");
  await router.install(join(dir, "helm"));
  await run("helm", [{ task: "The helm upgrade of our payments chart failed halfway on the Kubernetes cluster; roll the Helm release back to its previous revision.", expected: "helm-rollback" }], false);
  await router.close();
} finally {
  await model.dispose();
  rmSync(dir, { recursive: true, force: true });
}
