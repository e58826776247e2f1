// The shared router flags are checked before a command reaches a running server, which ignores the
// model's flags: a bad value fails the same way whether a server or the command answers.
import { describe, expect, it } from "vitest";
import { checkRouterArgs, flagOf, withFlags } from "../../src/cli/commands/common.js";
import { GavelError } from "../../src/errors.js";
import { Model } from "../../src/model/Model.js";
import { resolveBudgets } from "../../src/route/budgets.js";
import type { Projections } from "../../src/projections/projections.js";

/** What `f` throws or rejects with. */
async function refusal(f: () => unknown): Promise<GavelError> {
  try {
    await f();
  } catch (err) {
    return err as GavelError;
  }
  throw new Error("no error");
}

describe("checkRouterArgs", () => {
  it("refuses bad numbers and truncate values by flag name, and passes good ones and absent flags", () => {
    expect(() => checkRouterArgs({})).not.toThrow();
    expect(() => checkRouterArgs({ context: "2048", threads: "2", "gpu-layers": "0", "skill-budget": "512", "key-budget": "1536", truncate: "start" })).not.toThrow();
    const bad: [Record<string, string>, RegExp][] = [
      [{ context: "abc" }, /--context/],
      [{ context: "8" }, /--context/],
      [{ threads: "two" }, /--threads/],
      [{ "gpu-layers": "1.5" }, /--gpu-layers/],
      [{ "skill-budget": "" }, /--skill-budget/],
      [{ "key-budget": "-3x" }, /--key-budget/],
      [{ truncate: "middle" }, /--truncate must be "start" or "end", got "middle"/],
    ];
    for (const [values, message] of bad) {
      expect(() => checkRouterArgs(values), JSON.stringify(values)).toThrow(message);
      expect(() => checkRouterArgs(values)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    }
  });

  it("refuses what the library refuses, by the library's ranges, named by flag", () => {
    const bad: [Record<string, string>, string][] = [
      [{ "skill-budget": "0" }, "--skill-budget must be a whole number from 16 to 4194304, got 0"],
      [{ "skill-budget": "4194305" }, "--skill-budget must be a whole number from 16 to 4194304, got 4194305"],
      [{ "key-budget": "15" }, "--key-budget must be a whole number from 16 to 1048576, got 15"],
      [{ threads: "0" }, "--threads must be a whole number from 1 to 1024, got 0"],
      [{ threads: "1025" }, "--threads must be a whole number from 1 to 1024, got 1025"],
      [{ "gpu-layers": "-2" }, "--gpu-layers must be a whole number from -1 to 100000, got -2"],
      [{ context: "100000000" }, "--context must be a whole number from 16 to 4194304, got 100000000"],
      [{ context: "1024", "skill-budget": "1010" }, "--skill-budget 1010 leaves no room for a task in --context 1024: lower --skill-budget or raise --context"],
    ];
    for (const [values, message] of bad) {
      expect(() => checkRouterArgs(values), JSON.stringify(values)).toThrow(message);
      expect(() => checkRouterArgs(values)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    }
    expect(() => checkRouterArgs({ context: "1024", "skill-budget": "1007", threads: "1024", "gpu-layers": "-1", "key-budget": "1048576" })).not.toThrow();
  });

  it("refuses an empty --model, --projections or --bank as a usage error, not the default", () => {
    for (const flag of ["model", "projections", "bank"] as const) {
      expect(() => checkRouterArgs({ [flag]: "" }), flag).toThrow(expect.objectContaining({ name: "UsageError", message: `--${flag} needs a value, got "" (leave the flag out for its default)` }));
    }
  });

  it("words the library's refusal of an option with the flags, from the option it names", async () => {
    const proj = { skillBudget: 0, keyBudget: 0 } as Projections;
    // a budget that leaves no room, known once the model gives the context
    const room = withFlags(await refusal(() => resolveBudgets({}, proj, 32)));
    expect(room).toMatchObject({
      code: "INVALID_ARGUMENT",
      option: "contextSize",
      message: "the skill budget of 24 tokens (the default, ¾ of --context 32) leaves no room for a task in the context of 32 tokens (--context): raise --context or give a smaller --skill-budget",
    });
    expect(withFlags(await refusal(() => resolveBudgets({ skillBudget: 1020 }, proj, 1024)))).toMatchObject({
      option: "skillBudget",
      message: "the skill budget of 1020 tokens (--skill-budget) leaves no room for a task in the context of 1024 tokens (--context): lower --skill-budget or raise --context",
    });
    // a range refusal of Model.load's options (before the file is read)
    for (const [options, message] of [
      [{ threads: 0 }, "--threads must be an integer in [1, 1024], got 0"],
      [{ gpuLayers: -2 }, "--gpu-layers must be an integer in [-1, 100000], got -2"],
      [{ contextSize: 8 }, "--context must be an integer in [16, 4194304], got 8"],
    ] as const) {
      const err = await refusal(() => Model.load("/no/such/model.gguf", options));
      expect(withFlags(err), message).toMatchObject({ code: "INVALID_ARGUMENT", message, cause: err });
    }
    expect(withFlags(await refusal(() => resolveBudgets({ keyBudget: 8 }, proj, 2048)))).toMatchObject({ message: "--key-budget must be an integer in [16, 1048576], got 8" });
    // an error that refuses no option a flag gives is left as it is
    const other = new GavelError("no installed skill pdf", "SKILL_NOT_FOUND");
    expect(withFlags(other)).toBe(other);
    const sequences = new GavelError("sequences must be an integer in [2, 256], got 1", "INVALID_ARGUMENT", { option: "sequences" });
    expect(withFlags(sequences)).toBe(sequences);
    expect([flagOf("skillBudget"), flagOf("gpuLayers"), flagOf("toString")]).toEqual(["--skill-budget", "--gpu-layers", "toString"]);
  });
});
