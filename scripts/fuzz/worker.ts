/**
 * The fuzz worker: a child process that runs trials one at a time as its parent (harness.ts) sends
 * them on stdin, one JSON line each ({ id, target, seed }), and answers each on stdout with a line
 * `\u0001FUZZ <json outcome>`. A trial that kills this process (a signal, an abort, an exit, an
 * unhandled rejection) or outlives its timeout is classified by the parent, which starts a new worker.
 *   vite-node scripts/fuzz/worker.ts <scratch dir> <cache dir>
 */
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { baseBank, runTrial, TARGETS, type TrialOutcome, type WorkerContext } from "./targets.js";

const [root, cache] = process.argv.slice(2);
const ctx: WorkerContext = { root, cache };
await mkdir(root, { recursive: true });

const answer = (id: number, o: TrialOutcome) => process.stdout.write(`\u0001FUZZ ${JSON.stringify({ id, ...o })}\n`);

let chain = Promise.resolve();
createInterface({ input: process.stdin }).on("line", (line) => {
  const job = JSON.parse(line) as { id: number; target: string; seed: number };
  chain = chain.then(async () => {
    if (job.target === "@setup") {
      await baseBank(ctx);
      answer(job.id, { class: "ok", what: "setup" });
      return;
    }
    const dir = join(root, `t${job.id}`);
    await mkdir(dir, { recursive: true });
    const outcome = await runTrial(TARGETS[job.target], job.seed, dir, ctx);
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
    answer(job.id, outcome);
  });
});
process.stdout.write("\u0001FUZZ {\"ready\":true}\n");
