import { describe, expect, it } from "vitest";
import { MarginGate } from "../../examples/bash-agent/agent.js";

// The bash agent's stand-in gate is the library's Gate over the margin feature: the same two-token rule.
describe("bash-agent MarginGate", () => {
  const wide = Float64Array.of(1.0, 0.9, 0.1); // margin 0.1
  const narrow = Float64Array.of(1.0, 0.98, 0.1); // margin 0.02

  it("fires on the second consecutive token whose margin exceeds its threshold, then starts over", () => {
    const gate = new MarginGate(0.05);
    expect(gate.logit(wide)).toBeCloseTo(0.05, 12);
    expect(gate.logit(narrow)).toBeCloseTo(-0.03, 12);
    expect(gate.step(wide)).toBe(false);
    expect(gate.step(wide)).toBe(true);
    expect(gate.step(wide)).toBe(false); // the streak restarts after a firing
    expect(gate.step(narrow)).toBe(false);
    expect(gate.step(wide)).toBe(false); // an off token broke the streak
    expect(gate.step(wide)).toBe(true);
  });

  it("forgets a half-built streak on reset, and refuses a bad margin", () => {
    const gate = new MarginGate(0.05);
    expect(gate.step(wide)).toBe(false);
    gate.reset();
    expect(gate.step(wide)).toBe(false);
    expect(gate.step(wide)).toBe(true);
    expect(() => new MarginGate(-1)).toThrow(RangeError);
    expect(() => new MarginGate(Number.NaN)).toThrow(RangeError);
  });
});
