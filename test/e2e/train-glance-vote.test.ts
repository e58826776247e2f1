// `gavel train --glance-vote R/S` and trainProjections' glanceRowWeights / glanceVoteShare: a bad value
// fails before any work (the model and library paths here do not exist, so any work would fail
// otherwise); the written vote itself is checked by train-e2e.test.ts.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Model } from "../../src/model/Model.js";
import { trainProjections } from "../../lab/train/pipeline.js";
import { repoRoot } from "../helpers/paths.js";
import { run as runCommand } from "../helpers/run.js";
import { expectCode } from "../helpers/gavel-error.js";

const cli = join(repoRoot, "dist", "cli", "gavel.js");
const run = (...args: string[]) => runCommand(process.execPath, [cli, "train", ...args], { timeoutMs: 60_000 });
const base = ["--model", "/nonexistent/model.gguf", "--library", "/nonexistent/library.jsonl", "--queries", "all", "--out", "/nonexistent/p.gguf"];

describe("gavel train --glance-vote", () => {
  it("rejects a malformed vote before any work", async () => {
    for (const v of ["idf", "bm25/0.01", "idf/2", "uniform/-1", "idf/0.01x", "idf/"]) {
      const r = await run(...base, "--glance-vote", v);
      expect(r.code, v).not.toBe(0);
      expect(r.err, v).toMatch(/--glance-vote must be uniform\/SHARE or idf\/SHARE.*INVALID_ARGUMENT/);
      expect(r.err, v).not.toMatch(/FILE_NOT_FOUND|MODEL_LOAD_FAILED/);
    }
  });

  it("takes a well-formed vote and goes on to the work (here: the missing model)", async () => {
    const r = await run(...base, "--glance-vote", "uniform/0");
    expect(r.code).not.toBe(0);
    expect(r.err).not.toMatch(/glance-vote/);
  });

  it("trainProjections rejects a bad vote with INVALID_ARGUMENT before the model is used", async () => {
    const model = new Proxy({}, { get: () => { throw new Error("the model was used"); } }) as unknown as Model;
    const o = { library: "/nonexistent", queries: ["description" as const], out: "/nonexistent/p.gguf" };
    await expectCode(trainProjections(model, { ...o, glanceVoteShare: 1.5 }), "INVALID_ARGUMENT");
    await expectCode(trainProjections(model, { ...o, glanceVoteShare: Number.NaN }), "INVALID_ARGUMENT");
    await expectCode(trainProjections(model, { ...o, glanceRowWeights: "bm25" as "idf" }), "INVALID_ARGUMENT");
  });
});
