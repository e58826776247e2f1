// The public options objects are validated exactly: a misspelt key is refused with the nearest known
// one named (not ignored), a wrong type names the type it got, and known keys set to undefined pass.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model, Router } from "../../src/index.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { suiteModel } from "../helpers/model-suite.js";

describe("options are validated exactly", () => {
  const getModel = suiteModel(DEFAULT_MODEL, { contextSize: 2048, threads: 1 });
  let model: Model;
  let router: Router;
  const dir = mkdtempSync(join(tmpdir(), "gavel-options-"));
  beforeAll(async () => {
    model = getModel();
    router = await Router.open(model, { projections: DEFAULT_PROJECTIONS, bankDir: join(dir, "bank") });
    await router.install([{ id: "sql", name: "sql", description: "Write and optimise SQL queries.", body: "Use EXPLAIN first." }]);
  }, 120_000);
  afterAll(async () => {
    await router?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const refused = (p: Promise<unknown> | (() => unknown), pattern: RegExp) =>
    typeof p === "function" ? expect(p).toThrow(pattern) : expect(p).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(pattern) });

  it("refuses a misspelt key and names the one meant", async () => {
    await refused(Model.load(DEFAULT_MODEL, { contextSzie: 2048 } as never), /unknown option "contextSzie" in Model\.load options \(did you mean contextSize\?\)/);
    await refused(Router.open(model, { projections: DEFAULT_PROJECTIONS, bankDir: join(dir, "b2"), skilBudget: 256 } as never), /"skilBudget".*did you mean skillBudget\?/);
    await refused(router.route("Speed up this SQL query", { abstian: false } as never), /"abstian" in route options \(did you mean abstain\?\)/);
    await refused(router.glance("Speed up this SQL query", { topk: 3 } as never), /did you mean topK\?/);
    await refused(router.rank("Speed up this SQL query", { glancetop: 3 } as never), /did you mean glanceTop\?/);
    await refused(router.install([], { onProgres: () => undefined } as never), /did you mean onProgress\?/);
    refused(() => model.tokenize("hello", { addBOS: true } as never), /did you mean addBos\?/);
    // far from every known key: no suggestion, the list of keys instead
    await refused(router.route("Speed up this SQL query", { temperature: 0.2 } as never), /unknown option "temperature" in route options; the options are .*abstain/);
  });

  it("names the type of a wrong value, and lets known keys through when undefined", async () => {
    await refused(Router.open(model, { projections: DEFAULT_PROJECTIONS, bankDir: join(dir, "b3"), skillBudget: "256" } as never), /skillBudget must be an integer in \[16, 4194304\], got the string "256"/);
    const r = await router.route("Speed up this SQL query", { signal: undefined, explain: undefined, abstain: false });
    expect(r.skill).toBe("sql");
  });

  it("refuses a model that is not a loaded Model, typed", async () => {
    for (const bad of [null, undefined, {}, "gavel-mini.gguf"]) {
      await refused(Router.open(bad as never, { projections: DEFAULT_PROJECTIONS, bankDir: join(dir, "b4") }), /model must be a Model \(from Model.load\)/);
    }
  });
});
