// gavel train's extra pairs (pseudo-labelled task statements beside the pseudo-queries): added to the
// training split only, each `extraRepeat` times, screened like the mode's own pairs (a row overlapping a
// SWE-Skills-Bench task text is dropped, a row whose gold is not in the library is dropped), and the
// prepared file's key changes with them.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model } from "../../src/index.js";
import { loadSkills } from "../../src/skills/index.js";
import { trainProjections, type TrainProjectionsOptions } from "../../lab/train/pipeline.js";
import { sharedDir, storiesPath, needsShared, SHARED } from "../helpers/paths.js";

const NO_SHARED = needsShared("stories260K, the MIT skills library and SWE-Skills-Bench's tasks to train", SHARED.stories, SHARED.mit, SHARED.benchTasks);
const mitSkills = join(sharedDir, "data", "skills-mit.jsonl.gz");
const benchTasks = join(sharedDir, "data", "swe-skills-bench", "tasks.jsonl");

describe.skipIf(NO_SHARED)("gavel train --extra-pairs", () => {
  let model: Model;
  let dir: string;
  beforeAll(async () => {
    model = await Model.load(storiesPath, { contextSize: 512, sequences: 4, threads: 1 });
    dir = mkdtempSync(join(tmpdir(), "gavel-extra-pairs-"));
  });
  afterAll(async () => {
    await model?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("adds screened, repeated pairs to the training split and leaves validation alone", async () => {
    const { skills } = await loadSkills(mitSkills, { limit: 30 });
    const task = readFileSync(benchTasks, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as { text: string })[3].text;
    const rows = [
      { query: "Set up a small build script that compiles the project and runs its checks before every commit.", gold_skill_ids: [skills[2].id] },
      { query: "Write a short guide for the release steps of this repository, with the commands in order.", gold_skill_ids: [skills[5].name] },
      { query: task, gold_skill_ids: [skills[7].id] }, // a benchmark task text: screened out
      { query: "A request whose gold skill is not in the library.", gold_skill_ids: ["no/such:skill"] },
    ];
    const extra = join(dir, "extra.jsonl");
    writeFileSync(extra, rows.map((r) => JSON.stringify(r)).join("\n") + "\n");
    const base: TrainProjectionsOptions = {
      library: mitSkills, limit: 30, queries: ["description", "cloze"], queriesPerSkill: 1, excludeTasks: benchTasks,
      out: join(dir, "base.gguf"), dim: 8, steps: 2, batchTasks: 4, batchTokens: 2000, negatives: 4, skillTokens: 128,
      seed: 5, threads: 1, cache: join(dir, "cache"), prepareOnly: true, valFraction: 0.2,
    };
    const plain = await trainProjections(model, base);
    const lines: string[] = [];
    const withExtra = await trainProjections(model, { ...base, extraPairs: extra, extraRepeat: 3, onLog: (l) => lines.push(l) });
    expect(withExtra.trainPairs).toBe(plain.trainPairs + 2 * 3);
    expect(withExtra.valPairs).toBe(plain.valPairs);
    expect(lines.some((l) => /extra pairs: 2 of 4 kept \(1 gold not in the library, 0 excluded skills, 1 overlapping a task text\), ×3/.test(l))).toBe(true);
    expect(withExtra.prepared).toBeDefined();
    expect(withExtra.prepared).not.toBe(plain.prepared);
    await expect(trainProjections(model, { ...base, extraPairs: extra, extraRepeat: 0 })).rejects.toThrow(/extraRepeat/);
  }, 120_000);
});
