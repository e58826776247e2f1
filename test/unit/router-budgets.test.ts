// The router's budgets: where a default came from, what a refusal says to change, and whether a bank
// entry's recorded build matches the budgets in use (src/route/budgets.ts).
import { describe, expect, it } from "vitest";
import { noRoomForTask, resolveBudgets, sameBuild } from "../../src/route/budgets.js";
import type { Projections } from "../../src/projections/projections.js";

const proj = (skillBudget: number, keyBudget: number) => ({ skillBudget, keyBudget }) as Projections;

describe("resolveBudgets", () => {
  it("says where the skill budget came from: given, the projections', or ¾ of the context", () => {
    expect(resolveBudgets({ skillBudget: 300 }, proj(512, 1536), 2048)).toEqual({ skillBudget: 300, keyBudget: 1536, skillOrigin: "skillBudget", skillGiven: true, defaults: { skillBudget: 512, keyBudget: 1536 } });
    expect(resolveBudgets({}, proj(512, 1536), 2048)).toMatchObject({ skillBudget: 512, skillOrigin: "the projections' skill budget", skillGiven: false });
    // the projections' 512 leaves no room in 256 tokens: ¾ of the context
    expect(resolveBudgets({}, proj(512, 0), 256)).toMatchObject({ skillBudget: 192, keyBudget: 192, skillOrigin: "the default, ¾ of contextSize 256", defaults: { skillBudget: 192, keyBudget: 192 } });
  });

  it("a defaulted budget that leaves no room blames the context, not skillBudget", () => {
    // ¾ of 32 is 24, over 32 − 16
    expect(() => resolveBudgets({}, proj(0, 0), 32)).toThrow(
      "the skill budget of 24 tokens (the default, ¾ of contextSize 32) leaves no room for a task in the context of 32 tokens (contextSize): raise contextSize or give a smaller skillBudget",
    );
    expect(() => resolveBudgets({ skillBudget: 1020 }, proj(512, 1536), 1024)).toThrow(
      "the skill budget of 1020 tokens (skillBudget) leaves no room for a task in the context of 1024 tokens (contextSize): lower skillBudget or raise contextSize",
    );
    expect(noRoomForTask({ skillBudget: 192, skillOrigin: "the default, ¾ of contextSize 256", skillGiven: false }, 256, "too little")).toMatchObject({
      code: "INVALID_ARGUMENT",
      message: expect.stringMatching(/^the skill budget of 192 tokens \(the default, ¾ of contextSize 256\) leaves too little room .*: raise contextSize/),
    });
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
