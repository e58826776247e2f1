// The public options objects are validated exactly: a misspelt key is refused with the nearest known
// one named (not ignored), a wrong type names the type it got, and known keys set to undefined pass.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model, Router } from "../../src/index.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { suiteModel } from "../helpers/model-suite.js";
import { expectCode } from "../helpers/gavel-error.js";

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

  it("refuses misspelt keys of the model's forward passes, generate and the live context too", async () => {
    const tokens = model.tokenize("hello world", { addBos: model.info.addBos });
    await refused(model.hiddenStatesAt(tokens, [1], { signl: AbortSignal.abort() } as never), /did you mean signal\?/);
    await refused(model.hiddenStatesMany([tokens], [1], { signl: AbortSignal.abort() } as never), /did you mean signal\?/);
    await refused(model.logits(tokens, { signl: AbortSignal.abort() } as never), /did you mean signal\?/);
    refused(() => model.generate("Once", { maxToken: 3 } as never), /did you mean maxTokens\?/);
    const live = router.live();
    await refused(live.append(new Float32Array(model.info.nEmbd), { signl: undefined } as never), /did you mean signal\?/);
    refused(() => live.scores({ wiat: false } as never), /did you mean wait\?/);
    live.dispose();
  });

  it("refuses values JavaScript can pass that are not what they look like, typed", async () => {
    const tokens = model.tokenize("hello world", { addBos: model.info.addBos });
    // an object that reads like a signal but cannot be listened to
    await refused(model.hiddenStates(tokens, 1, { signal: { aborted: false } } as never), /signal must be an AbortSignal/);
    await refused(router.route("Speed up this SQL query", { signal: { aborted: false } } as never), /signal must be an AbortSignal/);
    // a value without a prototype (String() of it throws) still gets its message
    await refused(Router.open(model, { projections: DEFAULT_PROJECTIONS, bankDir: join(dir, "b5"), truncate: Object.create(null) } as never), /truncate must be "start" or "end", got an object/);
    await refused(Model.load(DEFAULT_MODEL, { kvLayout: Object.create(null) } as never), /kvLayout must be .* got an object/);
    await expectCode(model.hiddenStates(tokens, "1" as never), "LAYER_OUT_OF_RANGE", /layer must be an integer layer index .* got the string "1"/);
    expect(model.meta("general.architecture\0anything")).toBeUndefined();
    expect(model.meta("general.architecture")).toBe("llama");
    await refused(router.verdictInputs("Speed up this SQL query", 5 as never), /skill must be/);
    await refused(router.verdictInputs(5 as never, "sql"), /context must be a task string or an array of chat messages/);
    await refused(router.verdictInputs([{}] as never, "sql"), /context\[0\] must be a chat message/);
  });

  it("refuses a chat context of system prompts alone (no task to route), and routes one with a request", async () => {
    const system = { role: "system", content: "You are a coding agent with tools for files, tests and databases." };
    const alone = /context needs a message besides the system prompt/;
    await refused(router.route([system]), alone);
    await refused(router.route([system, { ...system, content: "Answer briefly." }], { live: false }), alone);
    await refused(router.glance([system]), alone);
    await refused(router.rank([system]), alone);
    await refused(router.verdictInputs([system], "sql"), alone);
    const r = await router.route([system, { role: "user", content: "Speed up this SQL query" }], { abstain: false });
    expect(r.skill).toBe("sql");
  });

  it("refuses a model that is not a loaded Model, typed", async () => {
    // the constructor is not the way in, from JavaScript either
    expect(() => new (Router as unknown as new (...a: unknown[]) => Router)(model, {})).toThrow(/Router\.open\(model/);
    for (const bad of [null, undefined, {}, "gavel-mini.gguf"]) {
      await refused(Router.open(bad as never, { projections: DEFAULT_PROJECTIONS, bankDir: join(dir, "b4") }), /model must be a Model \(from Model.load\)/);
    }
  });
});
