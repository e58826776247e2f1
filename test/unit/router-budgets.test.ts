// The router's budgets: where a default came from, what a refusal says to change, and whether a bank
// entry's recorded build matches the budgets in use (src/route/budgets.ts).
import { describe, expect, it } from "vitest";
import { noRoomForTask, originWords, resolveBudgets, sameBuild } from "../../src/route/budgets.js";
import { messageNaming } from "../../src/errors.js";
import type { Projections } from "../../src/projections/projections.js";

const proj = (skillBudget: number, keyBudget: number) => ({ skillBudget, keyBudget }) as Projections;

/** What `f` throws (a GavelError here); a failure when it returns. */
function outcome(f: () => unknown): Error {
  try {
    f();
  } catch (err) {
    return err as Error;
  }
  throw new Error("no error");
}

describe("resolveBudgets", () => {
  it("says where the skill budget came from: given, the projections', or ¾ of the context", () => {
    expect(resolveBudgets({ skillBudget: 300 }, proj(512, 1536), 2048)).toEqual({ skillBudget: 300, keyBudget: 1536, skillOrigin: "skillBudget", skillGiven: true, defaults: { skillBudget: 512, keyBudget: 1536 } });
    expect(resolveBudgets({}, proj(512, 1536), 2048)).toMatchObject({ skillBudget: 512, skillOrigin: "projections", skillGiven: false });
    // the projections' 512 leaves no room in 256 tokens: ¾ of the context
    expect(resolveBudgets({}, proj(512, 0), 256)).toMatchObject({ skillBudget: 192, keyBudget: 192, skillOrigin: "context", defaults: { skillBudget: 192, keyBudget: 192 } });
    // ¾ of a context over 40,960 tokens is capped
    expect(resolveBudgets({}, proj(0, 0), 65536)).toMatchObject({ skillBudget: 30720, skillOrigin: "cap" });
    const api = (o: string) => o;
    expect(["skillBudget", "projections", "cap", "context"].map((o) => originWords(o as never, 256, api))).toEqual(["skillBudget", "the projections' skill budget", "the default, at most 30720", "the default, ¾ of contextSize 256"]);
  });

  it("a defaulted budget that leaves no room blames the context, not skillBudget", () => {
    // ¾ of 32 is 24, over 32 − 16
    expect(() => resolveBudgets({}, proj(0, 0), 32)).toThrow(
      "the skill budget of 24 tokens (the default, ¾ of contextSize 32) leaves no room for a task in the context of 32 tokens (contextSize): raise contextSize or give a smaller skillBudget",
    );
    expect(() => resolveBudgets({ skillBudget: 1020 }, proj(512, 1536), 1024)).toThrow(
      "the skill budget of 1020 tokens (skillBudget) leaves no room for a task in the context of 1024 tokens (contextSize): lower skillBudget or raise contextSize",
    );
    expect(noRoomForTask({ skillBudget: 192, skillOrigin: "context", skillGiven: false }, 256, "too little")).toMatchObject({
      code: "INVALID_ARGUMENT",
      message: expect.stringMatching(/^the skill budget of 192 tokens \(the default, ¾ of contextSize 256\) leaves too little room .*: raise contextSize/),
    });
  });

  it("a refusal names the option to change first, and is written again with other names for the options", () => {
    const given = outcome(() => resolveBudgets({ skillBudget: 1020 }, proj(512, 1536), 1024));
    expect(given).toMatchObject({ code: "INVALID_ARGUMENT", option: "skillBudget" });
    const flags = (o: string) => `--${o.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
    expect(messageNaming(given, flags)).toBe("the skill budget of 1020 tokens (--skill-budget) leaves no room for a task in the context of 1024 tokens (--context-size): lower --skill-budget or raise --context-size");
    const defaulted = outcome(() => resolveBudgets({}, proj(0, 0), 32));
    expect(defaulted).toMatchObject({ code: "INVALID_ARGUMENT", option: "contextSize" });
    expect(messageNaming(defaulted, flags)).toBe(
      "the skill budget of 24 tokens (the default, ¾ of --context-size 32) leaves no room for a task in the context of 32 tokens (--context-size): raise --context-size or give a smaller --skill-budget",
    );
    expect(noRoomForTask({ skillBudget: 192, skillOrigin: "projections", skillGiven: false }, 256, "too little").option).toBe("contextSize");
    // the range checks name the option too
    expect(outcome(() => resolveBudgets({ skillBudget: 8 }, proj(512, 1536), 2048))).toMatchObject({ option: "skillBudget", message: "skillBudget must be an integer in [16, 4194304], got 8" });
    expect(outcome(() => resolveBudgets({ keyBudget: 2 ** 21 }, proj(512, 1536), 2048))).toMatchObject({ option: "keyBudget", message: "keyBudget must be an integer in [16, 1048576], got 2097152" });
  });
});

describe("sameBuild", () => {
  const now = { skillBudget: 512, keyBudget: 1536, contextSize: 2048 };
  it("matches the same budgets only; the context only where it bounded the key render", () => {
    expect(sameBuild({ ...now }, now, undefined)).toBe(true);
    expect(sameBuild({ ...now, skillBudget: 256 }, now, undefined)).toBe(false);
    expect(sameBuild({ ...now, keyBudget: 512 }, now, undefined)).toBe(false);
    // a key budget within both contexts: the context changes nothing
    expect(sameBuild({ ...now, contextSize: 4096 }, now, undefined)).toBe(true);
    // a key budget over one of them: that context cut the key render
    expect(sameBuild({ ...now, contextSize: 1024 }, now, undefined)).toBe(false);
    expect(sameBuild(now, { ...now, contextSize: 1024 }, undefined)).toBe(false);
  });

  it("an entry without a record counts as built with the router's defaults", () => {
    expect(sameBuild(undefined, now, { skillBudget: 512, keyBudget: 1536 })).toBe(true);
    expect(sameBuild(undefined, { ...now, skillBudget: 256 }, { skillBudget: 512, keyBudget: 1536 })).toBe(false);
    expect(sameBuild(undefined, now, undefined)).toBe(true);
  });
});
