// The --batches selection of gavel eval and gavel train-gate (lab/eval/tasks.ts): SWE-Skills-Bench
// numbers its batches 1-10, so a range of millions is a typo, refused at once with INVALID_ARGUMENT
// naming the flag (spelling it out number by number ran for seconds, then overflowed a Set).
import { describe, expect, it } from "vitest";
import { MAX_BATCHES, parseBatches, selectTasks, type EvalTask } from "../../lab/eval/tasks.js";

const invalid = (message: RegExp) => expect.objectContaining({ name: "GavelError", code: "INVALID_ARGUMENT", message: expect.stringMatching(message) });

describe("--batches", () => {
  it("reads ranges, lists and batch labels", () => {
    expect([...parseBatches("1,3,5-7")].sort((a, b) => a - b)).toEqual([1, 3, 5, 6, 7]);
    expect([...parseBatches("batch6-batch8")]).toEqual([6, 7, 8]);
    expect(parseBatches(`1-${MAX_BATCHES}`).size).toBe(MAX_BATCHES);
  });

  // Before, each range was counted whole as it was read, so ranges that overlap counted their shared
  // numbers twice and a selection of 6,000 batches was refused.
  it("counts the distinct batches a selection names, not its ranges' lengths", () => {
    const half = MAX_BATCHES * 0.6;
    for (const spec of [`1-${half},1-${half}`, `1-${half},${half / 2}-${half}`, `${half / 2}-${half},1-${half},7`, `1-${MAX_BATCHES},${MAX_BATCHES},5-9`]) {
      const want = spec.startsWith(`1-${MAX_BATCHES}`) ? MAX_BATCHES : half;
      expect(parseBatches(spec).size, spec).toBe(want);
    }
    // disjoint ranges still add up
    expect(() => parseBatches(`1-${half},${half + 1}-${2 * half}`)).toThrow(invalid(/^--batches .*more than 10000 batches/));
    expect(parseBatches(`${half + 1}-${MAX_BATCHES},1-${half}`).size).toBe(MAX_BATCHES);
  });

  it("refuses a selection of more than MAX_BATCHES batch numbers, naming --batches", () => {
    for (const spec of ["1-100000000", "1-30000000", `0-${MAX_BATCHES}`, `1-${MAX_BATCHES},${MAX_BATCHES + 1}`]) {
      expect(() => parseBatches(spec), spec).toThrow(invalid(/^--batches .*more than 10000 batches/));
    }
    // a number past 2^53 reads as its neighbour, so b++ never passed it: the selection never returned
    for (const spec of ["9007199254740993", "99999999999999999999", "9007199254740992-9007199254740993", "1-99999999999999999999999"]) {
      expect(() => parseBatches(spec), spec).toThrow(invalid(/^--batches: .* is past the largest batch number/));
    }
    expect([...parseBatches(`${Number.MAX_SAFE_INTEGER}`)]).toEqual([Number.MAX_SAFE_INTEGER]);
    const tasks: EvalTask[] = [{ id: "a", text: "t", gold_skill_ids: [], batch: "batch2" }];
    expect(() => selectTasks(tasks, { batches: "1-30000000" })).toThrow(invalid(/--batches/));
    expect(selectTasks(tasks, { batches: "2" }).map((t) => t.id)).toEqual(["a"]);
  });
});
