/**
 * The long fuzz run (issue 17): deals `--inputs` trials over the targets, prints a line per failure
 * (with the seed that replays it), progress every 500 trials, and the counts by target and class.
 *
 *   npx vite-node scripts/fuzz/run.ts -- --inputs 10000 --seed 1234
 *   npx vite-node scripts/fuzz/run.ts -- --inputs 200 --targets skills,model
 *   npx vite-node scripts/fuzz/run.ts -- --replay model:2899312044      (one trial, verbose)
 *
 * Options: --inputs N (default 1000), --seed S (default: fresh, printed), --targets a,b or
 * a=weight,b=weight (default skills=3,model=3,projections=2,bank=1), --timeout ms (20000),
 * --rss MiB (3072), --log FILE (one JSON line per trial). Exit code 1 when any trial failed.
 */
import { appendFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { formatCounts, runFuzz } from "./harness.js";

const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== "--"),
  options: { inputs: { type: "string" }, seed: { type: "string" }, targets: { type: "string" }, timeout: { type: "string" }, rss: { type: "string" }, log: { type: "string" }, replay: { type: "string" } },
});
const seed = values.seed !== undefined ? Number(values.seed) >>> 0 : (Date.now() ^ Math.floor(Math.random() * 2 ** 31)) >>> 0;
const weights: Record<string, number> = {};
for (const part of (values.targets ?? "skills=3,model=3,projections=2,bank=1").split(",")) {
  const [name, w] = part.split("=");
  weights[name] = w === undefined ? 1 : Number(w);
}
const replay = values.replay?.split(",").map((s) => {
  const [target, sd] = s.split(":");
  return { target, seed: Number(sd) >>> 0 };
});
const inputs = replay?.length ?? Number(values.inputs ?? 1000);
console.log(`fuzz: ${inputs} inputs, seed ${seed}, targets ${JSON.stringify(weights)}${replay ? " (replay)" : ""}`);
const started = Date.now();
const report = await runFuzz({
  inputs,
  seed,
  weights,
  trials: replay,
  timeoutMs: values.timeout ? Number(values.timeout) : undefined,
  rssMb: values.rss ? Number(values.rss) : undefined,
  onResult(r, i) {
    if (values.log) appendFileSync(values.log, JSON.stringify(r) + "\n");
    if (replay || !["ok", "typed"].includes(r.class)) {
      console.log(`${r.class.toUpperCase()} ${r.target}:${r.seed} ${r.code ?? ""} ${r.what}${r.detail ? `\n  ${r.detail.replace(/\n/g, "\n  ")}` : ""}`);
    }
    if ((i + 1) % 500 === 0) console.log(`… ${i + 1}/${inputs} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  },
});
console.log(formatCounts(report));
console.log(`seed ${seed}, ${report.seconds.toFixed(0)} s, ${report.failures.length} failing`);
process.exitCode = report.failures.length > 0 ? 1 : 0;
