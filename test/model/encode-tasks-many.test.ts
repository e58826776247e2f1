// encodeTasksMany (src/route/context.ts), with which a small library measures its own cut: the
// written tasks' forward passes decoded together, against encodeQueries of each task alone with the
// embedded pair: the same tokens, weights and task text, and queries within the tolerance of
// hiddenStatesMany (test/model/hidden-states-many.test.ts), over the shipped reference prompts and
// fresh random texts, some long enough that the tasks take more than one pass.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model } from "../../src/index.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { Library } from "../../src/bank/library.js";
import { Projections } from "../../src/projections/projections.js";
import { RenderEncoder } from "../../src/render/encode.js";
import { encodeQueries, encodeTasksMany } from "../../src/route/context.js";
import { taskBudgets, type RouterParts } from "../../src/route/parts.js";
import { freshSeed, maxAbsDiff, rng } from "../helpers/random.js";
import { expectCode } from "../helpers/gavel-error.js";

const TOL = 1e-4;
const WORDS = ["deploy", "the", "service", "recipe", "garden", "query", "index", "tomorrow", "migrate", "weather", "photo", "budget", "why", "how", "table", "music"];

describe("encodeTasksMany", () => {
  let model: Model;
  let library: Library;
  let dir: string;
  let parts: RouterParts;
  beforeAll(async () => {
    model = await Model.load(DEFAULT_MODEL, { contextSize: 4096, threads: 2 });
    const projections = await Projections.load(DEFAULT_PROJECTIONS);
    dir = mkdtempSync(join(tmpdir(), "gavel-encode-many-"));
    library = await Library.open(dir, projections, { create: true });
    const encoder = new RenderEncoder(model, 512);
    parts = { model, projections, encoder, library, ...taskBudgets(model.info.contextSize, 512, encoder), keyBudget: 512, keep: "end" };
  });
  afterAll(async () => {
    await library?.close();
    await model?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("gives each task's queries as encodeQueries does alone, within the batched passes' tolerance", async () => {
    expect(model.batchesStates).toBe(true);
    const seed = freshSeed();
    const r = rng(seed);
    const reference = parts.projections.abstentionReference!.prompts.slice(0, 30);
    const random = Array.from({ length: 12 }, (_, i) => Array.from({ length: i % 4 === 0 ? 1500 + Math.floor(r() * 1000) : 3 + Math.floor(r() * 20) }, () => WORDS[Math.floor(r() * WORDS.length)]).join(" "));
    const tasks = [...reference, ...random];
    const many = await encodeTasksMany(parts, tasks);
    expect(many).toHaveLength(tasks.length);
    let longest = 0;
    for (const [i, t] of tasks.entries()) {
      const alone = await encodeQueries(parts, t, false);
      const got = many[i];
      expect(got.taskText, `task ${i} (seed ${seed})`).toBe(alone.taskText);
      expect([...got.tokens], `task ${i} (seed ${seed})`).toEqual([...alone.tokens]);
      expect([...got.weights], `task ${i} (seed ${seed})`).toEqual([...alone.weights]);
      expect(got.queries.length, `task ${i} (seed ${seed})`).toBe(alone.queries.length);
      expect(got.queries.length).toBe(got.tokens.length * parts.projections.dim);
      expect(maxAbsDiff(got.queries, alone.queries), `task ${i} (seed ${seed})`).toBeLessThanOrEqual(TOL);
      expect(got.truncation).toEqual(alone.truncation);
      longest += got.tokens.length;
    }
    // the random long texts put more than one pass's 4,096 tokens into the call
    expect(longest).toBeGreaterThan(4096);
  }, 300_000);

  it("stops with ABORTED when the signal aborts", async () => {
    const ctl = new AbortController();
    ctl.abort();
    await expectCode(encodeTasksMany(parts, ["one task", "another"], ctl.signal), "ABORTED");
  });
});
