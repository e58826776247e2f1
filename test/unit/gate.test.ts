// The gate's scaffold on synthetic features: the score summary against a plain float64 computation,
// the linear logit, and the two-consecutive-positives rule.
import { describe, expect, it } from "vitest";
import { Gate, GATE_SCORE_FEATURES, gateScoreFeatures } from "../../src/route/gate.js";
import { freshSeed, randArray, rng } from "../helpers/random.js";

describe("gate", () => {
  it("score features match a plain float64 computation on fresh random scores", () => {
    const seed = freshSeed();
    const r = rng(seed);
    const g = Array.from(randArray(r, 37), (x) => x * 0.3);
    const s = [...g].sort((a, b) => b - a);
    const mean = g.reduce((a, b) => a + b, 0) / g.length;
    const std = Math.sqrt(g.reduce((a, b) => a + (b - mean) ** 2, 0) / g.length);
    const z = g.reduce((a, b) => a + Math.exp(b), 0);
    const ent = -g.reduce((a, b) => a + (Math.exp(b) / z) * Math.log(Math.exp(b) / z), 0);
    const want = [s[0], s[0] - s[1], mean, std, (s[0] + s[1] + s[2] + s[3] + s[4]) / 5, ent];
    const got = gateScoreFeatures(g);
    want.forEach((w, i) => expect(Math.abs(got[i] - w), `seed ${seed} ${GATE_SCORE_FEATURES[i]}`).toBeLessThanOrEqual(1e-12));
  });

  it("fires only after two consecutive positive tokens, then starts again", () => {
    const d = 3;
    // Weight only on the state's first value: its sign drives the logit.
    const gate = new Gate({ weights: [0, 0, 0, 0, 0, 0, 1, 0, 0], bias: 0 });
    const g = [0.1, 0.2, 0.3];
    const seq = [1, -1, 1, 1, 1, 1, 1, -1, 1];
    const fired = seq.map((x) => gate.step(g, [x, 0, 0].slice(0, d)));
    expect(fired).toEqual([false, false, false, true, false, true, false, false, false]);
  });

  it("the logit is w·[features, state] + b", () => {
    const r = rng(freshSeed());
    const w = Array.from(randArray(r, 6 + 4));
    const gate = new Gate({ weights: w, bias: 0.25 });
    const g = Array.from(randArray(r, 9));
    const state = Array.from(randArray(r, 4));
    const f = gateScoreFeatures(g);
    let z = 0.25;
    for (let i = 0; i < 6; i++) z += w[i] * f[i];
    for (let i = 0; i < 4; i++) z += w[6 + i] * state[i];
    expect(Math.abs(gate.logit(g, state) - z)).toBeLessThanOrEqual(1e-9);
  });

  it("rejects bad weights and shapes", () => {
    expect(() => new Gate({ weights: [1, 2], bias: 0 })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => new Gate({ weights: new Array(8).fill(Number.NaN), bias: 0 })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    const gate = new Gate({ weights: new Array(8).fill(1), bias: 0 });
    expect(() => gate.step([1], [1])).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => gateScoreFeatures([])).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
  });
});
