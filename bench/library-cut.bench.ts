/**
 * What a small library's own abstention cut costs (src/route/library-cut.ts): over libraries of the
 * first n example skills (default 4, 24, and 24 beside 100 public skills when ../shared is there), the
 * first route after an install, which routes the projections' reference prompts over the library (the
 * cut measured), against a warm route with the cut known, and a new router's first route over the
 * same bank, which reads the cut from `<bank>/library-cut.bin`. Each a median of `reps` fresh banks
 * (or routers); the embedded default pair, context 2,048.
 *
 *   npm run bench -- library-cut [--reps 3] [--sizes 4,24,124] [--projections P.gguf]
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { availableParallelism, cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { defaultModelPaths } from "../src/defaults.js";
import { Model } from "../src/model/Model.js";
import { Projections } from "../src/projections/projections.js";
import { Router } from "../src/route/Router.js";
import { median } from "./data.js";

const argv = process.argv.slice(2);
const flag = (name: string, fallback: string) => { const i = argv.indexOf(name); return i >= 0 ? argv.splice(i, 2)[1] : fallback; };
const reps = Number(flag("--reps", "3"));
const publicSkills = "../shared/data/skills-mit.jsonl.gz";
const sizes = flag("--sizes", existsSync(publicSkills) ? "4,24,124" : "4,24").split(",").map(Number);
const { model: modelPath, projections: defaultProjections } = defaultModelPaths();
const projPath = flag("--projections", defaultProjections);
const projections = await Projections.load(projPath);
const ref = projections.abstentionReference;
if (!ref) throw new Error(`${projPath} carries no abstention reference: nothing to measure`);
const model = await Model.load(modelPath, { contextSize: 2048 });
const examples = readdirSync("examples/skills").filter((d) => existsSync(join("examples/skills", d, "SKILL.md"))).sort();
const task = "Write a Dockerfile for our Go service and keep the image small.";
console.log(`library-cut: ${ref.prompts.length} reference prompts, pass ${ref.pass}, under ${ref.below} skills; ${availableParallelism()} of ${cpus().length} cores (${cpus()[0]?.model}), node ${process.version}, ${new Date().toISOString()}, load ${loadavg()[0].toFixed(1)}`);
console.log("| skills | first route after an install (cut measured) | warm route | a new router's first route (cut read from the bank) |\n| --- | --- | --- | --- |");
const work = mkdtempSync(join(tmpdir(), "gavel-library-cut-bench-"));
try {
  // public skills beside the 24 examples, for sizes past 24 (lines from 7,920 of the 30.6K library)
  let extra: string | undefined;
  if (sizes.some((n) => n > examples.length)) {
    const lines = gunzipSync(readFileSync(publicSkills)).toString("utf8").split("\n").slice(7919, 7919 + Math.max(...sizes) - examples.length);
    extra = join(work, "extra.jsonl");
    writeFileSync(extra, lines.map((l) => { const d = JSON.parse(l); return JSON.stringify({ id: d.id, name: d.name, description: d.description, body: d.body }); }).join("\n") + "\n");
  }
  for (const n of sizes) {
    const first: number[] = [], warm: number[] = [], reopened: number[] = [];
    for (let r = 0; r < reps; r++) {
      const bankDir = join(work, `bank-${n}-${r}`);
      const router = await Router.open(model, { projections, bankDir });
      for (const d of examples.slice(0, Math.min(n, examples.length))) await router.install(join("examples/skills", d));
      if (n > examples.length && extra) {
        const lines = readFileSync(extra, "utf8").split("\n").filter(Boolean).slice(0, n - examples.length);
        const part = join(work, `extra-${n}.jsonl`);
        writeFileSync(part, lines.join("\n") + "\n");
        await router.install(part);
      }
      let t = performance.now();
      await router.route(task);
      first.push(performance.now() - t);
      t = performance.now();
      await router.route(task);
      warm.push(performance.now() - t);
      await router.close();
      const again = await Router.open(model, { projections, bankDir });
      t = performance.now();
      await again.route(task);
      reopened.push(performance.now() - t);
      await again.close();
    }
    const ms = (xs: number[]) => `${median(xs).toFixed(0)} ms`;
    console.log(`| ${n} | ${ms(first)} | ${ms(warm)} | ${ms(reopened)} |`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
  await model.dispose();
}
