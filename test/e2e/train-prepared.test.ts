// The states pass keeps its derived inputs (each query's masked rows, each task's BM25 look-alikes)
// beside the states: a second run reads them instead of recomputing, and trains the same projections
// bit for bit; a damaged file is recomputed, again to the same projections.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model, Projections } from "../../src/index.js";
import { trainProjections, type TrainProjectionsOptions } from "../../src/train/pipeline.js";
import { sharedDir, storiesPath } from "../helpers/paths.js";

const mitSkills = join(sharedDir, "data", "skills-mit.jsonl.gz");

describe("the states pass's prepared inputs", () => {
  let model: Model;
  let dir: string;
  beforeAll(async () => {
    model = await Model.load(storiesPath, { contextSize: 512, sequences: 4, threads: 1 });
    dir = mkdtempSync(join(tmpdir(), "gavel-prepared-"));
  });
  afterAll(async () => {
    await model?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("are read back by a later run, and recomputed when damaged, to the same projections", async () => {
    const cache = join(dir, "cache");
    const run = async (name: string) => {
      const lines: string[] = [];
      const r = await trainProjections(model, {
        library: mitSkills, limit: 30, queries: ["description", "cloze", "headings", "composite"], queriesPerSkill: 2,
        out: join(dir, `${name}.gguf`), dim: 8, steps: 3, batchTasks: 4, batchTokens: 2000, negatives: 4, hardNegatives: 2,
        skillTokens: 160, seed: 5, threads: 1, cache, valFraction: 0, onLog: (l) => lines.push(l),
      } satisfies TrainProjectionsOptions);
      expect(r.finished).toBe(true);
      // the weights, as bytes (the file's created_at differs between runs)
      const p = await Projections.load(join(dir, `${name}.gguf`));
      return { lines, bytes: Buffer.concat([Buffer.from(p.wq.buffer, p.wq.byteOffset, p.wq.byteLength), Buffer.from(p.ws.buffer, p.ws.byteOffset, p.ws.byteLength)]) };
    };
    const first = await run("a");
    expect(first.lines.some((l) => l.startsWith("states: masks mapped"))).toBe(true);
    expect(first.lines.some((l) => /^hard negatives: BM25 look-alikes for \d+/.test(l))).toBe(true);
    const second = await run("b");
    expect(second.lines.some((l) => l.startsWith("states: masks read from the cache"))).toBe(true);
    expect(second.lines.some((l) => l.startsWith("hard negatives: BM25 look-alikes read from the cache"))).toBe(true);
    expect(second.bytes.equals(first.bytes)).toBe(true);
    // damage every prepared file: the third run recomputes them
    const stack = [cache];
    let damaged = 0;
    while (stack.length) {
      const d = stack.pop()!;
      for (const e of readdirSync(d, { withFileTypes: true })) {
        if (e.isDirectory()) stack.push(join(d, e.name));
        else if (e.name.startsWith("prepared-")) {
          writeFileSync(join(d, e.name), "{ not json");
          damaged++;
        }
      }
    }
    expect(damaged).toBe(1);
    const third = await run("c");
    expect(third.lines.some((l) => l.startsWith("states: masks mapped"))).toBe(true);
    expect(third.bytes.equals(first.bytes)).toBe(true);
  });
});
