// The CI-sized fuzz run (issue 17): 320 mutated inputs over the four targets (SKILL.md folders,
// GGUF models, projections, bank files), each run through the real entry point in a worker process
// under a timeout (scripts/fuzz/). Fails on any crash, untyped exception, hang, memory blow-up or
// silent wrong result, printing the seed of each; replay one with
//   npx vite-node scripts/fuzz/run.ts -- --replay <target>:<seed>
// The run's seed is fresh each time (printed in the test name) unless GAVEL_FUZZ_SEED is set.
import { describe, expect, it } from "vitest";
import { formatCounts, runFuzz } from "../../scripts/fuzz/harness.js";
import { freshSeed } from "../helpers/random.js";

const seed = process.env.GAVEL_FUZZ_SEED !== undefined ? Number(process.env.GAVEL_FUZZ_SEED) >>> 0 : freshSeed();
const inputs = Number(process.env.GAVEL_FUZZ_INPUTS ?? 320);

describe(`fuzz, CI size (seed ${seed})`, () => {
  it(`${inputs} mutated inputs: no crash, hang or silent wrong result`, async () => {
    const report = await runFuzz({ inputs, seed, weights: { skills: 3, model: 3, projections: 2, bank: 2 }, timeoutMs: 30_000 });
    console.log(`fuzz seed ${seed}, ${report.seconds.toFixed(0)} s\n${formatCounts(report)}`);
    const failures = report.failures.map((f) => `${f.class} ${f.target}:${f.seed} ${f.code ?? ""} ${f.what} ${f.detail ?? ""}`.slice(0, 600));
    expect(failures, `replay: npx vite-node scripts/fuzz/run.ts -- --replay <target>:<seed>`).toEqual([]);
    const n = Object.values(report.counts).reduce((a, c) => a + Object.values(c).reduce((x, y) => x + y, 0), 0);
    expect(n).toBe(inputs);
  }, 300_000);
});
