// A refusal of one option's value names the option as data (GavelError.option), not only in its
// message: the range checks of Model.load's and Router.open's numeric options, the KV cache a context
// needs, a budget that leaves no room (route/budgets.ts, checked in router-budgets.test.ts), a render
// over the skill budget (model/key-budget.test.ts). An error that refuses an option keeps it when
// its message is clipped again, serialises it, carries it over the serve wire, and can be worded with
// other names for the options (the CLI's flags). Refused before any model file is read.
import { describe, expect, it } from "vitest";
import { GavelError, clipQuote, messageNaming, optionError } from "../../src/errors.js";
import { Model } from "../../src/model/Model.js";
import { Router } from "../../src/route/Router.js";
import { wireInstallReport } from "../../src/serve/writes.js";
import type { InstallReport } from "../../src/route/types.js";

/** What `f` throws or rejects with. */
async function refusal(f: () => unknown): Promise<GavelError> {
  try {
    await f();
  } catch (err) {
    return err as GavelError;
  }
  throw new Error("no error");
}

const upper = (o: string) => o.toUpperCase();

describe("GavelError.option", () => {
  it("names the option of each range refusal of Model.load and Router.open, before the file is read", async () => {
    const missing = "/no/such/model.gguf";
    for (const [option, value] of [["contextSize", 8], ["threads", 0], ["gpuLayers", -2], ["batchSize", 0], ["sequences", 1]] as const) {
      const err = await refusal(() => Model.load(missing, { [option]: value }));
      expect(err, option).toBeInstanceOf(GavelError);
      expect(err, option).toMatchObject({ code: "INVALID_ARGUMENT", option });
      expect(messageNaming(err, upper), option).toBe(err.message.replace(option, option.toUpperCase()));
    }
    // a context whose KV cache would be too large: the context, the first option to change
    const kv = await refusal(() => Model.load(missing, { contextSize: 1 << 22, sequences: 8, kvLayout: "streams" }));
    expect(kv).toMatchObject({ code: "INVALID_ARGUMENT", option: "contextSize" });
    expect(messageNaming(kv, upper)).toMatch(/^the KV cache would hold 33554432 cells \(CONTEXTSIZE × SEQUENCES with kvLayout "streams"\); at most 16777216$/);
    const model = {} as Model;
    for (const [option, value] of [["skillBudget", 8], ["keyBudget", 2 ** 21]] as const) {
      const err = await refusal(() => Router.open(model, { projections: "/no/such.projections.gguf", bankDir: "/no/such/bank", [option]: value }));
      expect(err, option).toMatchObject({ code: "INVALID_ARGUMENT", option });
      expect(err.message, option).toMatch(new RegExp(`^${option} must be an integer in \\[16, \\d+\\], got ${value}$`));
    }
  });

  it("is absent on other errors, serialises with the error, and outlives a clip", () => {
    const plain = new GavelError("no installed skill pdf", "SKILL_NOT_FOUND");
    expect(plain.option).toBeUndefined();
    expect(Object.keys(plain)).not.toContain("option");
    expect(JSON.parse(JSON.stringify(plain))).toEqual({ name: "GavelError", code: "SKILL_NOT_FOUND", message: "no installed skill pdf" });
    expect(messageNaming(plain, upper)).toBe("no installed skill pdf");
    const given = new GavelError("threads must be an integer in [1, 1024], got 0", "INVALID_ARGUMENT", { option: "threads" });
    expect(JSON.parse(JSON.stringify(given))).toEqual({ name: "GavelError", code: "INVALID_ARGUMENT", message: given.message, option: "threads" });
    const long = "x".repeat(5000);
    const quoting = optionError((n) => `${n("skillBudget")} of skill ${long} is too small`, "SKILL_INVALID", "skillBudget");
    const clipped = clipQuote(quoting, long) as GavelError;
    expect(clipped).not.toBe(quoting);
    expect(clipped).toMatchObject({ code: "SKILL_INVALID", option: "skillBudget" });
  });

  it("crosses the serve wire with an install's failures, their messages worded with the server's names", () => {
    const overflow = optionError((n) => `skill "a": too long; the skill budget is ${n("skillBudget")}: raise ${n("skillBudget")}`, "SKILL_INVALID", "skillBudget");
    const report = { installed: [], unchanged: [], failed: [{ where: "/s/a/SKILL.md", error: overflow }, { where: "/s/b/SKILL.md", error: new GavelError("bad YAML", "SKILL_INVALID") }] } as unknown as InstallReport;
    const named = wireInstallReport(report, upper).failed;
    expect(named).toEqual([
      { where: "/s/a/SKILL.md", error: { code: "SKILL_INVALID", message: `skill "a": too long; the skill budget is SKILLBUDGET: raise SKILLBUDGET`, option: "skillBudget" } },
      { where: "/s/b/SKILL.md", error: { code: "SKILL_INVALID", message: "bad YAML" } },
    ]);
    // without names, the API's
    expect(wireInstallReport(report).failed[0].error).toEqual({ code: "SKILL_INVALID", message: overflow.message, option: "skillBudget" });
    expect(overflow.message).toBe(`skill "a": too long; the skill budget is skillBudget: raise skillBudget`);
  });
});
