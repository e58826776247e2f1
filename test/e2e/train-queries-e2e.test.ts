// gavel train with generated pseudo-queries on stories260K and a few public skills: the copied text's
// tokens are the rows masked out of the positive; SWE-Skills-Bench task texts never become queries; the
// whole schedule (main run, glance negatives refreshed, W_q fine-tune) run in pieces — each call
// stopped by its time budget and resumed by the next, as time-limited device calls would — writes the
// same projections, bit for bit, as one uninterrupted call; and the CLI does the same with --stop-after.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model, Projections } from "../../src/index.js";
import { RenderEncoder } from "../../src/render/encode.js";
import { loadSkills } from "../../src/skills/index.js";
import { trainProjections, type TrainProjectionsOptions } from "../../lab/train/pipeline.js";
import { candidateQueries } from "../../lab/train/queries/index.js";
import { spanRows } from "../../lab/train/spans.js";
import { repoRoot, sharedDir, storiesPath, needsShared, SHARED } from "../helpers/paths.js";
import { run } from "../helpers/run.js";

const NO_SHARED = needsShared("stories260K, the MIT skills library and SWE-Skills-Bench's tasks to train", SHARED.stories, SHARED.mit, SHARED.benchTasks);

const mitSkills = join(sharedDir, "data", "skills-mit.jsonl.gz");
const benchTasks = join(sharedDir, "data", "swe-skills-bench", "tasks.jsonl");
const cli = join(repoRoot, "dist", "cli", "gavel.js");

describe.skipIf(NO_SHARED)("gavel train --queries on stories260K", () => {
  let model: Model;
  let dir: string;
  beforeAll(async () => {
    model = await Model.load(storiesPath, { contextSize: 512, sequences: 4, threads: 1 });
    dir = mkdtempSync(join(tmpdir(), "gavel-queries-e2e-"));
  });
  afterAll(async () => {
    await model?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("a query's source spans map to the keyed rows that spell its text", async () => {
    const { skills } = await loadSkills(mitSkills, { limit: 40 });
    const encoder = new RenderEncoder(model, 4096);
    const squash = (t: string) => t.replace(/\s+/g, "");
    let checked = 0;
    for (const s of skills) {
      const cloze = candidateQueries(s, ["cloze", "description"], 0);
      for (const q of [...(cloze.get("cloze") ?? []), ...(cloze.get("description") ?? [])].slice(0, 2)) {
        const enc = encoder.encodeSkill(s);
        const rows = enc.keyEnd - enc.keyStart;
        const [ranges] = await spanRows(encoder, s, [q.spans], rows);
        if (enc.truncated || ranges.length === 0) continue;
        expect(ranges.length).toBe(2);
        const masked = model.detokenize(enc.tokens.subarray(enc.keyStart + ranges[0], enc.keyStart + ranges[1]));
        const src = q.kind === "description" ? s.description : q.text;
        // The masked tokens spell the copied text (rounded out to whole tokens: at most a token more each side).
        expect(squash(masked)).toContain(squash(src).slice(1, -1));
        expect(squash(masked).length).toBeLessThanOrEqual(squash(src).length + 24);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(20);
  });

  it("the schedule in time-limited pieces equals one uninterrupted run, bit for bit", async () => {
    const base: TrainProjectionsOptions = {
      library: mitSkills, limit: 40, queries: ["description", "cloze", "triggers", "headings", "composite"], queriesPerSkill: 2, excludeTasks: benchTasks,
      out: join(dir, "full.gguf"), dim: 16, steps: 12, lr: 3e-3, batchTasks: 6, batchTokens: 3000, negatives: 8, hardNegatives: 2,
      glanceNegatives: 2, refreshEvery: 5, glancePool: 5, skillTokens: 192, seed: 3, threads: 1, cache: join(dir, "cache"),
      checkpointEvery: 4, valEvery: 6, finetuneSteps: 4, valFraction: 0.15,
    };
    const full = await trainProjections(model, base);
    expect(full.finished).toBe(true);
    expect(full.kinds && Object.keys(full.kinds).length).toBeGreaterThanOrEqual(4);
    expect(full.val?.recall20).toBeGreaterThanOrEqual(full.val!.recall10);
    console.log(`queries e2e: ${full.trainPairs} train / ${full.valPairs} val, kinds ${JSON.stringify(full.kinds)}, val Hit@1 ${full.val?.hit1.toFixed(2)} R@20 ${full.val?.recall20.toFixed(2)}`);

    const out = join(dir, "cut.gguf");
    let calls = 0;
    let r;
    do {
      r = await trainProjections(model, { ...base, out, resume: true, stopAfterSeconds: 0 });
      calls++;
    } while (!r.finished && calls < 40);
    expect(r.finished).toBe(true);
    expect(calls).toBe(12 + 4 - 1);
    const a = await Projections.load(base.out);
    const b = await Projections.load(out);
    expect(b.wq).toEqual(a.wq);
    expect(b.ws).toEqual(a.ws);
    // two whole trainings, the second in 15 resumed pieces: 120 s was passed on a machine running two
    // suites and more beside them
  }, 600_000);

  it("gavel train --queries … --stop-after 0 exits 75 with a checkpoint; --resume goes on", async () => {
    if (!existsSync(cli)) throw new Error("run npm run build first");
    const out = join(dir, "cli.gguf");
    const args = [cli, "train", "-m", storiesPath, "-l", mitSkills, "--limit", "20", "--queries", "description,cloze,headings", "-o", out,
      "--dim", "8", "--steps", "4", "--batch-tasks", "4", "--negatives", "4", "--glance-negatives", "1", "--refresh-every", "2",
      "--skill-tokens", "128", "--threads", "1", "--context", "512", "--cache", join(dir, "cli-cache"), "--log-file", join(dir, "log.jsonl"), "--val-every", "2"];
    const env = { ...process.env, GAVEL_MODEL: "", GAVEL_PROJECTIONS: "" };
    const first = await run(process.execPath, [...args, "--stop-after", "0"], { timeoutMs: 300_000, env });
    expect(first.code, first.err).toBe(75);
    expect(existsSync(`${out}.ckpt`)).toBe(true);
    expect(existsSync(out)).toBe(false);
    const second = await run(process.execPath, [...args, "--resume"], { timeoutMs: 300_000, env });
    expect(second.code, second.err).toBe(0);
    expect(second.out).toMatch(/wrote .*cli\.gguf.*train \(/);
    expect(second.err).toMatch(/R@20/);
    const log = readFileSync(join(dir, "log.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    expect(log.map((p) => p.step)).toEqual([1, 2, 3, 4]);
    expect(log[1].val.recall20).toBeTypeOf("number");
  }, 650_000); // the two CLI runs may take their 300 s each
});
