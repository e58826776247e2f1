// Training the gate without a model: logistic regression recovers a separable synthetic rule over
// [score features, state]; gate files round-trip and are checked with typed errors; the firing
// measures follow the two-token rule.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fitGate } from "../../lab/eval/gate-fit.js";
import { Gate, gateFileJson, GATE_SCORE_FEATURES, loadGate, saveGate, type GateInfo } from "../../src/route/gate.js";
import { chooseFiringThreshold, firingMetrics, firingSummary, firstFiring, type TrajectoryFeatures } from "../../lab/gate/gate-train.js";
import { freshSeed, gauss, rng } from "../helpers/random.js";
import { expectCode } from "../helpers/gavel-error.js";

const nf = GATE_SCORE_FEATURES.length;
const fingerprint = { architecture: "llama", nLayer: 5, nEmbd: 4, nVocab: 512, vocabHash: "ab".repeat(32) };
const info = (stateLayer: number | null): GateInfo => ({ stateLayer, glanceLayer: 2, model: fingerprint, projections: "f00d", librarySize: 10 });

describe("fitGate", () => {
  it("recovers a separable rule over score features and state (fresh random data)", () => {
    const seed = freshSeed();
    const r = rng(seed);
    const d = nf + 4;
    // the rule: on when 2·max − state[1] + 0.5 > 0
    const truth = (x: number[]) => 2 * x[0] - x[nf + 1] + 0.5;
    const make = (n: number) => {
      const rows: number[][] = [];
      const y: number[] = [];
      while (rows.length < n) {
        const x = Array.from({ length: d }, () => gauss(r));
        if (Math.abs(truth(x)) < 0.2) continue; // a margin: separable
        rows.push(x);
        y.push(truth(x) > 0 ? 1 : 0);
      }
      return { rows, y };
    };
    const train = make(400);
    const fit = fitGate(train.rows, train.y, { lambda: 1e-4 });
    expect(fit.converged, `seed ${seed}`).toBe(true);
    const gate = new Gate(fit.model);
    const test = make(400);
    let right = 0;
    for (let i = 0; i < test.rows.length; i++) {
      const x = test.rows[i];
      const z = gate.logitOfFeatures(x.slice(0, nf), x.slice(nf));
      if ((z > 0 ? 1 : 0) === test.y[i]) right++;
    }
    expect(right / test.rows.length, `seed ${seed}`).toBeGreaterThanOrEqual(0.97);
    // the weights point along the rule: max and state[1] dominate, with the rule's signs
    const w = Array.from(fit.model.weights);
    const big = w.map(Math.abs).sort((a, b) => b - a);
    expect(w[0]).toBeGreaterThan(0);
    expect(w[nf + 1]).toBeLessThan(0);
    expect(Math.min(Math.abs(w[0]), Math.abs(w[nf + 1]))).toBeGreaterThanOrEqual(big[1] - 1e-9);
    expect(w[0] / -w[nf + 1]).toBeGreaterThan(1.4);
    expect(w[0] / -w[nf + 1]).toBeLessThan(2.8);
  });

  it("raw-feature weights give the fit's own logit (standardisation folded back)", () => {
    const r = rng(freshSeed());
    const rows = Array.from({ length: 60 }, () => Array.from({ length: nf + 2 }, () => 3 + 10 * gauss(r)));
    const y = rows.map((x) => (x[0] + gauss(r) * 5 > 3 ? 1 : 0));
    const fit = fitGate(rows, y);
    const gate = new Gate(fit.model);
    // the balanced loss at the fit, recomputed from the raw weights, is not above the fit's (penalty ≥ 0)
    const pos = y.filter((v) => v === 1).length;
    let loss = 0;
    rows.forEach((x, i) => {
      const z = gate.logitOfFeatures(x.slice(0, nf), x.slice(nf));
      const c = 1 / (2 * (y[i] ? pos : y.length - pos));
      loss += c * (Math.log1p(Math.exp(-Math.abs(z))) + Math.max(z, 0) - y[i] * z);
    });
    expect(loss).toBeLessThanOrEqual(fit.loss + 1e-9);
    expect(() => fitGate([], [])).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => fitGate(rows, y.map(() => 1))).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
  });
});

describe("gate files", () => {
  let dir: string;
  beforeAll(() => void (dir = mkdtempSync(join(tmpdir(), "gavel-gate-file-"))));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("round-trip the weights exactly (base64 float64) and what they were trained on", async () => {
    const r = rng(freshSeed());
    const weights = Array.from({ length: nf + 4 }, () => gauss(r) * 1e3);
    const path = join(dir, "g.json");
    await saveGate(path, { weights, bias: -0.125 }, { ...info(3), training: { rows: 7 } });
    const gate = await loadGate(path);
    expect(Array.from(gate.model.weights)).toEqual(weights);
    expect(gate.model.bias).toBe(-0.125);
    expect(gate.info).toMatchObject({ stateLayer: 3, glanceLayer: 2, projections: "f00d", librarySize: 10, training: { rows: 7 } });
    // a gate over the score features only
    await saveGate(path, { weights: weights.slice(0, nf), bias: 1 }, info(null));
    const g0 = await Gate.load(path);
    expect(g0.stateDim).toBe(0);
    expect(typeof g0.stepLive({ scores: () => ({ g: Float64Array.of(1, 2, 3) }) }, [])).toBe("boolean");
  });

  it("typed errors: missing file, not JSON, wrong fields, mismatched router", async () => {
    await expectCode(loadGate(join(dir, "none.json")), "FILE_NOT_FOUND");
    const good = JSON.parse(gateFileJson({ weights: new Array(nf + 4).fill(0.5), bias: 0 }, info(3)));
    const cases: [string, unknown][] = [
      ["not json", "{"],
      ["format", { ...good, format: "other" }],
      ["version", { ...good, version: 99 }],
      ["features", { ...good, features: ["max"] }],
      ["short weights", { ...good, weights: Buffer.alloc(8 * 3).toString("base64") }],
      ["bad base64", { ...good, weights: "%%%" }],
      ["nan weight", { ...good, weights: Buffer.from(new Float64Array(nf + 4).fill(NaN).buffer).toString("base64") }],
      ["bias", { ...good, bias: "x" }],
      ["state layer", { ...good, stateLayer: null }],
      ["model", { ...good, model: { architecture: "llama" } }],
    ];
    for (const [what, body] of cases) {
      const p = join(dir, "bad.json");
      writeFileSync(p, typeof body === "string" ? body : JSON.stringify(body));
      await expect(loadGate(p), what).rejects.toMatchObject({ code: "CORRUPT_FILE" });
    }
    const p = join(dir, "ok.json");
    writeFileSync(p, JSON.stringify(good));
    const router = { model: { info: { nLayer: 5, nEmbd: 4 } }, projections: { hash: "f00d", layer: 2, model: fingerprint } };
    await expect(loadGate(p, { router })).resolves.toBeInstanceOf(Gate);
    await expectCode(loadGate(p, { router: { ...router, projections: { ...router.projections, hash: "beef" } } }), "PROJECTIONS_MISMATCH");
    await expectCode(loadGate(p, { router: { ...router, projections: { ...router.projections, model: { ...fingerprint, nLayer: 9 } } } }), "PROJECTIONS_MISMATCH");
    await expectCode(loadGate(p, { router: { ...router, model: { info: { nLayer: 5, nEmbd: 8 } } } }), "PROJECTIONS_MISMATCH");
  });

  it("typed errors for what is not a gate file's path or options: a directory, a FIFO, bad options, a router that is none", async () => {
    const sub = join(dir, "a-directory");
    mkdirSync(sub, { recursive: true });
    const err = await loadGate(sub).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: "GavelError", code: "FILE_NOT_FOUND", message: expect.stringContaining("a directory") });
    await expect(Gate.load(sub)).rejects.toMatchObject({ name: "GavelError", code: "FILE_NOT_FOUND" });
    if (process.platform !== "win32") {
      const fifo = join(dir, "a-fifo");
      execFileSync("mkfifo", [fifo]);
      // refused before a byte is read: never blocks on the pipe
      await expect(loadGate(fifo)).rejects.toMatchObject({ name: "GavelError", code: "FILE_NOT_FOUND", message: expect.stringContaining("FIFO") });
    }
    const p = join(dir, "ok2.json");
    writeFileSync(p, gateFileJson({ weights: new Array(nf + 4).fill(0.5), bias: 0 }, info(3)));
    for (const bad of [5, "x", null, []]) await expect(loadGate(p, bad as never), String(bad)).rejects.toMatchObject({ name: "GavelError", code: "INVALID_ARGUMENT" });
    for (const router of [{}, null, 5, { model: {}, projections: {} }]) {
      await expect(loadGate(p, { router: router as never }), JSON.stringify(router)).rejects.toMatchObject({ name: "GavelError", code: "INVALID_ARGUMENT" });
    }
    await expect(loadGate(5 as never)).rejects.toMatchObject({ name: "GavelError", code: "INVALID_ARGUMENT" });
    await expect(loadGate(p)).resolves.toBeInstanceOf(Gate);
  });

  it("a path that cannot be read for another reason than a missing file names its errno (FILE_NOT_FOUND, not 'no gate file')", async () => {
    // a name longer than any file system's NAME_MAX: ENAMETOOLONG at the stat
    const long = join(dir, `${"g".repeat(300)}.json`);
    const err = await loadGate(long).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: "GavelError", code: "FILE_NOT_FOUND", message: expect.stringMatching(/^cannot read the gate file .*\(ENAMETOOLONG\)$/) });
    expect((err as Error).message).not.toContain("no gate file");
    if (process.platform !== "win32") {
      // two links naming each other: ELOOP
      const a = join(dir, "loop-a.json"), b = join(dir, "loop-b.json");
      symlinkSync(b, a);
      symlinkSync(a, b);
      const loop = await loadGate(a).catch((e: unknown) => e);
      expect(loop).toMatchObject({ name: "GavelError", code: "FILE_NOT_FOUND", message: expect.stringMatching(/^cannot read the gate file .*loop-a\.json: .*\(ELOOP\)$/) });
    }
    // a missing file is still "no gate file at"
    await expect(loadGate(join(dir, "none.json"))).rejects.toMatchObject({ code: "FILE_NOT_FOUND", message: `no gate file at ${join(dir, "none.json")}` });
  });
});

describe("firing measures", () => {
  /** A trajectory whose state[0] is the given per-position sign pattern (the gate reads only it). */
  const traj = (id: string, needsSkill: boolean, on: number[], needStart: number): TrajectoryFeatures => {
    const dims = nf + 1;
    const rows = new Float32Array(on.length * dims);
    on.forEach((x, k) => (rows[k * dims + nf] = x));
    return { id, needsSkill, tokens: on.length, needStart, decisionEnd: on.length, positions: Int32Array.from(on.keys()), labels: new Int8Array(on.length), rows, dims };
  };
  const gate = new Gate({ weights: [0, 0, 0, 0, 0, 0, 1], bias: 0 });

  it("first firing after two consecutive positive tokens; on time, early, missed, false fires", () => {
    expect(firstFiring(gate, traj("a", true, [1, -1, 1, 1, 1], 2))).toBe(3);
    const m = firingMetrics(gate, [
      traj("on", true, [-1, -1, -1, 1, 1, -1], 2), // fires at 4: on time, 2 after the need starts, 1 before the end
      traj("early", true, [1, 1, -1, -1, 1, 1], 3), // fires at 1, before the need
      traj("missed", true, [1, -1, 1, -1], 2),
      traj("neg-fires", false, [-1, 1, 1], 0),
      traj("neg-quiet", false, [-1, 1, -1], 0),
    ]);
    expect(m).toMatchObject({ positives: 3, negatives: 2, onTime: 1, early: 1, missed: 1, falseFires: 1, medianFromNeedStart: 2, medianBeforeDecision: 1 });
    expect(m.recall).toBeCloseTo(1 / 3, 12);
    expect(m.precision).toBeCloseTo(1 / 3, 12);
  });

  it("the threshold's summaries predict the two-token rule's firing at every threshold (fresh random logits)", () => {
    const seed = freshSeed();
    const r = rng(seed);
    const ts = Array.from({ length: 30 }, (_, i) => {
      const n = 5 + Math.floor(r() * 30);
      return traj(`t${i}`, r() < 0.5, Array.from({ length: n }, () => gauss(r)), Math.floor(r() * n));
    });
    const summaries = ts.map((t) => firingSummary(gate, t));
    const chosen = chooseFiringThreshold(summaries);
    for (const t of [-1, -0.3, 0, 0.4, 1.2, chosen.threshold]) {
      const shifted = new Gate({ weights: [0, 0, 0, 0, 0, 0, 1], bias: -t });
      const m = firingMetrics(shifted, ts);
      let onTime = 0, early = 0, falseFires = 0;
      for (const s of summaries) {
        if (s.needsSkill) {
          if (s.before > t) early++;
          else if (s.after > t) onTime++;
        } else if (Math.max(s.before, s.after) > t) falseFires++;
      }
      expect({ onTime: m.onTime, early: m.early, falseFires: m.falseFires }, `seed ${seed} t ${t}`).toEqual({ onTime, early, falseFires });
    }
    // the chosen threshold is the best F1 over a sweep
    for (let t = -3; t <= 3; t += 0.05) {
      const m = firingMetrics(new Gate({ weights: [0, 0, 0, 0, 0, 0, 1], bias: -t }), ts);
      const f1 = m.recall + m.precision > 0 ? (2 * m.recall * m.precision) / (m.recall + m.precision) : 0;
      expect(f1 || 0, `seed ${seed} t ${t}`).toBeLessThanOrEqual(chosen.f1 + 1e-12);
    }
  });
});
