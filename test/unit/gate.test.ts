// The gate's scaffold on synthetic features: the score summary against a plain float64 computation,
// the linear logit, and the two-consecutive-positives rule.
import { describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkGateFor, Gate, GATE_SCORE_FEATURES, gateScoreFeatures, saveGate, type GateInfo } from "../../src/route/gate.js";
import { LiveContext } from "../../src/route/live.js";
import type { RouterParts } from "../../src/route/parts.js";
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

  it("score features equal the sorted float64 reference at every library size, ties and equal scores included", () => {
    const seed = freshSeed();
    const r = rng(seed);
    const reference = (g: number[]) => {
      const s = [...g].sort((a, b) => b - a);
      const n = g.length, top = Math.min(5, n);
      const mean = g.reduce((a, b) => a + b, 0) / n;
      const std = Math.sqrt(g.reduce((a, b) => a + (b - mean) ** 2, 0) / n);
      const z = g.reduce((a, b) => a + Math.exp(b - s[0]), 0);
      const ent = -g.reduce((a, b) => a + (Math.exp(b - s[0]) / z) * Math.log(Math.exp(b - s[0]) / z), 0);
      return [s[0], n > 1 ? s[0] - s[1] : 0, mean, std, s.slice(0, top).reduce((a, b) => a + b, 0) / top, ent];
    };
    for (const n of [1, 2, 4, 5, 6, 97, 3000]) {
      // rounded to 2 decimals: many exact ties, at the top too
      const g = Array.from(randArray(r, n), (x) => Math.round(x * 30) / 100);
      const cases = [g, g.map(() => 0.125)];
      for (const c of cases) {
        const got = gateScoreFeatures(c);
        reference(c).forEach((w, i) => expect(Math.abs(got[i] - w), `seed ${seed} n ${n} ${GATE_SCORE_FEATURES[i]}`).toBeLessThanOrEqual(1e-11));
      }
      // every score equal: softmax is uniform, its entropy log n
      expect(Math.abs(gateScoreFeatures(cases[1])[5] - Math.log(n))).toBeLessThanOrEqual(1e-11);
    }
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

  it("refuses what is not a gate model, a score list, a state, a live context or a chunk with INVALID_ARGUMENT (no TypeError or RangeError)", () => {
    const invalid = expect.objectContaining({ name: "GavelError", code: "INVALID_ARGUMENT" });
    for (const model of [null, undefined, 5, "w", { weights: null, bias: 0 }, { weights: { length: 1e12 }, bias: 0 }, { weights: 7, bias: 0 }, { bias: 0 }]) {
      expect(() => new Gate(model as never), JSON.stringify(model)).toThrow(invalid);
    }
    const gate = new Gate({ weights: new Array(8).fill(1), bias: 0 });
    const g = Float64Array.of(0.1, 0.5, 0.2);
    for (const bad of [null, undefined, 5, "abc", { length: 3 }]) {
      expect(() => gate.step(bad as never, [1, 2]), `g ${String(bad)}`).toThrow(invalid);
      expect(() => gate.step(g, bad as never), `state ${String(bad)}`).toThrow(invalid);
      expect(() => gate.logitOfFeatures(bad as never, [1, 2]), `features ${String(bad)}`).toThrow(invalid);
      expect(() => gateScoreFeatures(bad as never), `features of ${String(bad)}`).toThrow(invalid);
      expect(() => gate.stepLive(bad as never, [1, 2]), `live ${String(bad)}`).toThrow(invalid);
      expect(() => gate.stepChunk({ scores: () => ({ g }) }, bad as never), `chunk ${String(bad)}`).toThrow(invalid);
    }
    expect(() => gate.stepLive({} as never, [1, 2])).toThrow(invalid);
    // the well-formed calls still work
    expect(typeof gate.step(g, Float32Array.of(1, 2))).toBe("boolean");
    expect(typeof gate.stepLive({ scores: () => ({ g }) }, [1, 2])).toBe("boolean");
  });

  it("stateSource says which of a generate chunk's states the gate reads; stepChunk feeds it that one", () => {
    const nf = GATE_SCORE_FEATURES.length;
    const model = { architecture: "llama", nLayer: 6, nEmbd: 2, nVocab: 10, vocabHash: "0".repeat(64) };
    const make = (stateLayer: number | null) => {
      // The logit reads the state's first value only: +1 on the star row, −1 on the final row below.
      const weights = new Float64Array(nf + (stateLayer === null ? 0 : 2));
      if (stateLayer !== null) weights[nf] = 1;
      const gate = new Gate({ weights, bias: 0 });
      gate.info = { stateLayer, glanceLayer: 3, model, projections: "p", librarySize: 4 };
      return gate;
    };
    const live = { scores: () => ({ g: Float64Array.of(0.1, 0.2, 0.3, 0.4) }) };
    const chunk = { state: Float32Array.of(1, 0), finalState: Float32Array.of(-1, 0) };
    expect(make(null).stateSource).toBe("none");
    expect(make(3).stateSource).toBe("star");
    expect(make(5).stateSource).toBe("final");
    expect(make(4).stateSource).toBeNull();
    expect(new Gate({ weights: new Float64Array(nf + 2), bias: 0 }).stateSource).toBe("star");
    const star = make(3);
    expect(star.stepChunk(live, chunk)).toBe(false);
    expect(star.stepChunk(live, chunk)).toBe(true); // positive twice on the star row
    const final = make(5);
    expect(final.stepChunk(live, chunk)).toBe(false);
    expect(final.stepChunk(live, chunk)).toBe(false); // negative on the final row
    expect(() => final.stepChunk(live, { state: chunk.state })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => make(4).stepChunk(live, chunk)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(make(null).stepChunk(live, { state: chunk.state })).toBe(false);
  });

  it("refuses BigInt typed arrays and scores that are not finite numbers with INVALID_ARGUMENT (no TypeError, no NaN features)", () => {
    const invalid = expect.objectContaining({ name: "GavelError", code: "INVALID_ARGUMENT" });
    expect(() => new Gate({ weights: new BigInt64Array(6) as never, bias: 0 })).toThrow(invalid);
    expect(() => new Gate({ weights: new BigUint64Array(6) as never, bias: 0 })).toThrow(invalid);
    const gate = new Gate({ weights: new Array(6).fill(1), bias: 0 });
    expect(() => gate.step(new BigInt64Array(2) as never, [])).toThrow(invalid);
    expect(() => gate.step([0.1, 0.2], new BigInt64Array(0) as never)).toThrow(invalid);
    for (const g of [[1, "a"], [1, Number.NaN], [Infinity, 1], [1, undefined], [0.5, null]]) {
      expect(() => gateScoreFeatures(g as never), JSON.stringify(g)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringContaining("g[") }));
    }
    expect(gateScoreFeatures(Int8Array.of(1, 2)).every(Number.isFinite)).toBe(true);
  });

  it("stepLive on a disposed live context, or one whose router closed, is DISPOSED as its append is", () => {
    const gate = new Gate({ weights: new Array(6).fill(1), bias: 0 });
    const parts = {} as RouterParts; // disposed before any append: nothing of the router is read
    const disposed = new LiveContext(parts);
    disposed.dispose();
    expect(() => gate.stepLive(disposed, [])).toThrow(expect.objectContaining({ code: "DISPOSED", message: "gate.stepLive: this live context was disposed" }));
    expect(() => gate.stepChunk(disposed, { state: new Float32Array(0) })).toThrow(expect.objectContaining({ code: "DISPOSED" }));
    const orphan = new LiveContext(parts, () => true);
    expect(() => gate.stepLive(orphan, [])).toThrow(expect.objectContaining({ code: "DISPOSED", message: expect.stringContaining("router of this live context was closed") }));
    // open, no token read yet: no scores to step on
    expect(() => gate.stepLive(new LiveContext(parts), [])).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
  });

  describe("gate files", () => {
    const model = { architecture: "llama", nLayer: 6, nEmbd: 2, nVocab: 10, vocabHash: "0".repeat(64) };
    const info: GateInfo = { stateLayer: null, glanceLayer: 3, model, projections: "ab".repeat(32), librarySize: 4, training: { by: "test" } };
    const weights = [1, -1, 0.5, 0.25, 2, -0.5];
    const withDir = async (f: (dir: string) => Promise<void>) => {
      const dir = mkdtempSync(join(tmpdir(), "gavel-gate-"));
      try {
        await f(dir);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    };

    it("saveGate refuses an info Gate.load would refuse (INVALID_ARGUMENT), writing nothing; a good one loads back", () => withDir(async (dir) => {
      const path = join(dir, "g.json");
      const bad: unknown[] = [
        null, undefined, 5, [], { stateLayer: null }, { ...info, stateLayer: 3 }, { ...info, glanceLayer: -1 }, { ...info, glanceLayer: 1.5 },
        { ...info, model: { architecture: "llama" } }, { ...info, projections: "" }, { ...info, librarySize: 0 }, { ...info, training: [1] },
        { ...info, training: "x" }, { ...info, training: { n: 1n } }, { ...info, training: { toJSON: () => 5 } },
      ];
      for (const b of bad) {
        await expect(saveGate(path, { weights, bias: 0 }, b as GateInfo), String(JSON.stringify(b, (_k, v: unknown) => (typeof v === "bigint" ? "1n" : v)))).rejects.toMatchObject({ name: "GavelError", code: "INVALID_ARGUMENT" });
      }
      await expect(saveGate(path, { weights: [...weights, 1, 1], bias: 0 }, info)).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringContaining("stateLayer") });
      expect(() => readFileSync(path)).toThrow(); // nothing written
      await saveGate(path, { weights, bias: 0.5 }, info);
      const gate = await Gate.load(path);
      expect(gate.info).toEqual(info);
      expect(Array.from(gate.model.weights)).toEqual(weights);
    }));

    it("saveGate's write failures are typed, never the temporary file's raw errno", () => withDir(async (dir) => {
      const missing = join(dir, "missing", "g.json");
      await expect(saveGate(missing, { weights, bias: 0 }, info)).rejects.toMatchObject({ name: "GavelError", code: "FILE_NOT_FOUND", message: `cannot write the gate file ${missing}: no such file or folder (ENOENT)` });
      mkdirSync(join(dir, "folder"));
      await expect(saveGate(join(dir, "folder"), { weights, bias: 0 }, info)).rejects.toMatchObject({ name: "GavelError", code: "INVALID_ARGUMENT", message: expect.stringContaining("a folder is in the way") });
      writeFileSync(join(dir, "file"), "x");
      await expect(saveGate(join(dir, "file", "g.json"), { weights, bias: 0 }, info)).rejects.toMatchObject({ name: "GavelError", code: "FILE_NOT_FOUND", message: expect.stringContaining("(ENOTDIR)") });
      await expect(saveGate("", { weights, bias: 0 }, info)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    }));

    it("a gate of another glance layer is refused in its own words, not as other projections of the same hash", () => {
      const gate = new Gate({ weights, bias: 0 });
      gate.info = info;
      const router = { model: { info: { nLayer: 6, nEmbd: 2 } }, projections: { hash: info.projections, layer: 4, model } };
      expect(() => checkGateFor(gate, router, "g.json")).toThrow(expect.objectContaining({ code: "PROJECTIONS_MISMATCH", message: "g.json was trained on scores of the glance at layer 3, not the router's 4: retrain it (gavel train-gate)" }));
      expect(() => checkGateFor(gate, { ...router, projections: { ...router.projections, hash: "cd".repeat(32) } }, "g.json")).toThrow(expect.objectContaining({ code: "PROJECTIONS_MISMATCH", message: expect.stringContaining("hash abababababab, not cdcdcdcdcdcd") }));
      expect(() => checkGateFor(gate, { ...router, projections: { ...router.projections, layer: 3 } })).not.toThrow();
    });
  });
});
