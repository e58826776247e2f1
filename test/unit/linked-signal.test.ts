// linkSignals (src/util/linked-signal.ts), the adapters' and the serve client's stand-in for
// AbortSignal.any: it aborts with the first source's reason, and dispose() takes its listeners off the
// sources, so a long-lived source keeps nothing of a call once it settled (Node 20's AbortSignal.any
// leaves a record on the source per composite, which cannot be undone).
import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { linkSignals } from "../../src/util/linked-signal.js";

const listeners = (s: AbortSignal) => getEventListeners(s, "abort").length;

describe("linkSignals", () => {
  it("gives undefined for no signal and the signal itself for one (repeats and undefined ignored)", () => {
    const a = new AbortController().signal;
    expect(linkSignals([]).signal).toBeUndefined();
    expect(linkSignals([undefined, undefined]).signal).toBeUndefined();
    expect(linkSignals([a]).signal).toBe(a);
    expect(linkSignals([undefined, a, a]).signal).toBe(a);
    expect(listeners(a)).toBe(0);
  });

  it("aborts when either source aborts, with that source's reason, and then leaves no listener on either", () => {
    for (const which of [0, 1]) {
      const sources = [new AbortController(), new AbortController()];
      const linked = linkSignals(sources.map((c) => c.signal));
      expect(linked.signal).not.toBe(sources[0].signal);
      expect(linked.signal?.aborted).toBe(false);
      expect(sources.map((c) => listeners(c.signal))).toEqual([1, 1]);
      const reason = new Error(`source ${which}`);
      sources[which].abort(reason);
      expect(linked.signal?.aborted).toBe(true);
      expect(linked.signal?.reason).toBe(reason);
      expect(sources.map((c) => listeners(c.signal))).toEqual([0, 0]);
      sources[1 - which].abort(new Error("later")); // the first reason stands
      expect(linked.signal?.reason).toBe(reason);
    }
  });

  it("is aborted at once, with its reason, when a source already is", () => {
    const live = new AbortController();
    const reason = new Error("before");
    const linked = linkSignals([live.signal, AbortSignal.abort(reason)]);
    expect(linked.signal?.aborted).toBe(true);
    expect(linked.signal?.reason).toBe(reason);
    expect(listeners(live.signal)).toBe(0);
  });

  it("after dispose() a long-lived source holds no listener and no longer aborts the linked signals", () => {
    const longLived = new AbortController();
    const linked = Array.from({ length: 50 }, () => linkSignals([longLived.signal, new AbortController().signal]));
    expect(listeners(longLived.signal)).toBe(50);
    for (const l of linked) l.dispose();
    for (const l of linked) l.dispose(); // again: nothing happens
    expect(listeners(longLived.signal)).toBe(0);
    longLived.abort();
    expect(linked.every((l) => l.signal?.aborted === false)).toBe(true);
  });
});
