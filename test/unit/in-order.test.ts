// The in-order window of install and the states pass: results settle in input order whatever order
// the work finishes in, never more than `width` items run at once, and a failure leaves nothing running.
import { describe, expect, it } from "vitest";
import { inOrder, type Outcome } from "../../src/util/in-order.js";
import { freshSeed } from "../helpers/random.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("inOrder", () => {
  it("settles in input order with at most `width` items running, for random finishing times", async () => {
    const seed = freshSeed();
    let state = seed >>> 0;
    const rand = () => ((state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 2 ** 32);
    for (const width of [1, 3, 8]) {
      const items = Array.from({ length: 40 }, (_, i) => i);
      const delays = items.map(() => Math.floor(rand() * 6));
      let running = 0;
      let peak = 0;
      const settled: number[] = [];
      await inOrder(
        items,
        { width },
        async (i) => {
          running++;
          peak = Math.max(peak, running);
          await sleep(delays[i]);
          running--;
          return i * 10;
        },
        (i, o) => {
          expect(o).toEqual({ ok: true, value: i * 10 });
          settled.push(i);
        },
      );
      expect(settled).toEqual(items);
      expect(peak).toBeLessThanOrEqual(width);
      if (width > 1) expect(peak).toBeGreaterThan(1);
    }
  });

  it("hands a failure (thrown synchronously or rejected) to settle as that item's outcome", async () => {
    const outcomes: Outcome<number>[] = [];
    await inOrder(
      [0, 1, 2],
      { width: 2 },
      (i) => {
        if (i === 0) throw new Error("sync");
        if (i === 1) return Promise.reject(new Error("async"));
        return Promise.resolve(i);
      },
      (_, o) => void outcomes.push(o),
    );
    expect(outcomes.map((o) => (o.ok ? o.value : (o.error as Error).message))).toEqual(["sync", "async", 2]);
  });

  it("a throw from settle or beforeEach ends the run after the started items finish", async () => {
    const finished: number[] = [];
    const started: number[] = [];
    const work = async (i: number) => {
      started.push(i);
      await sleep(i === 0 ? 1 : 15);
      finished.push(i);
      return i;
    };
    await expect(inOrder([0, 1, 2, 3, 4, 5], { width: 3 }, work, (i) => { if (i === 0) throw new Error("stop"); })).rejects.toThrow("stop");
    expect(started).toEqual([0, 1, 2]);
    expect(finished.sort()).toEqual(started.sort()); // nothing left running

    let n = 0;
    started.length = 0;
    finished.length = 0;
    await expect(inOrder([0, 1, 2, 3], { width: 2, beforeEach: () => { if (n++ === 3) throw new Error("aborted"); } }, work, () => {})).rejects.toThrow("aborted");
    expect(started).toEqual([0, 1, 2]);
    expect(finished.sort()).toEqual([0, 1, 2]);
  });
});
