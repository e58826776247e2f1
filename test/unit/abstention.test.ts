// Abstention calibrated from data (issue 13): the decision on hand-computed cases, the logistic fit
// against a plain float64 Newton solve, the threshold's trigger rate on its fitting records, the
// replay agreeing with the ruling, and the choice between models on synthetic records.
import { describe, expect, it } from "vitest";
import { abstainCut, evaluateAbstention, fitAbstention, fitLogistic, replayAbstention } from "../../lab/eval/index.js";
import {
  abstentionFeatures,
  bandFor,
  describeAbstentionModel,
  modelFeatures,
  readsFeature,
  checkAbstentionModel,
  chooseByRuling,
  decideAbstention,
  needsLexical,
  needsVerdict,
  type AbstentionFeatures,
  type AbstentionModel,
} from "../../src/route/index.js";
import { gaussian, mulberry32 } from "../../src/util/prng.js";
import { RULING, synthSet } from "../helpers/abstention-records.js";

const lone = (x: Partial<AbstentionFeatures>): AbstentionFeatures => ({ margin: Infinity, V: 0, g: 0, candidates: 1, ...x });

describe("decideAbstention", () => {
  const onV: AbstentionModel = { kind: "threshold", feature: "V", threshold: -0.4, marginCap: 2 };

  it("a threshold model abstains strictly below its threshold, and says why", () => {
    expect(decideAbstention(onV, lone({ V: -1.2 }))).toEqual({ abstain: true, score: -1.2, reason: "V of the winner −1.2 is below the calibrated −0.4" });
    expect(decideAbstention(onV, lone({ V: -0.4 }))).toMatchObject({ abstain: false, score: -0.4, reason: "V of the winner −0.4 is at or above the calibrated −0.4" });
    expect(decideAbstention(onV, lone({ V: 3 })).abstain).toBe(false);
  });

  it("no model, or nothing shortlisted, never abstains", () => {
    for (const m of [null, undefined]) expect(decideAbstention(m, lone({ V: -100 }))).toMatchObject({ abstain: false, reason: "no abstention model: never abstains" });
    expect(decideAbstention(onV, null)).toMatchObject({ abstain: false, reason: "nothing was shortlisted" });
    expect(abstentionFeatures([])).toBeNull();
  });

  it("the margin: S(winner) − S(runner-up), a lone candidate at the model's cap", () => {
    const two = abstentionFeatures([
      { S: 1.5, g: 0.5, V: 2, B: -3 },
      { S: 1.25, g: 0.6, V: 1 },
    ], { lift: -4 });
    // lift is passed through as the route computed it (max B + log N over the library)
    expect(two).toEqual({ margin: 0.25, V: 2, g: 0.5, B: -3, lift: -4, candidates: 2 });
    const one = abstentionFeatures([{ S: 1.5, g: 0.5, V: 2 }])!;
    expect(one).toEqual({ margin: Infinity, V: 2, g: 0.5, candidates: 1 });
    const onMargin = (threshold: number): AbstentionModel => ({ kind: "threshold", feature: "margin", threshold, marginCap: 2 });
    expect(decideAbstention(onMargin(0.5), two!)).toMatchObject({ abstain: true, score: 0.25 });
    expect(decideAbstention(onMargin(0.5), one)).toMatchObject({ abstain: false, score: 2 });
    expect(decideAbstention(onMargin(0.5), one).reason).toMatch(/one candidate: the margin is the cap/);
    expect(decideAbstention(onMargin(3), one).abstain).toBe(true); // a threshold above the cap abstains on all
  });

  it("a logistic model: z = b + Σ w (x − mean)/scale, abstain when z > threshold", () => {
    const m: AbstentionModel = { kind: "logistic", features: ["V", "g", "B"], weights: [-2, -1, -0.5], bias: 0.5, mean: [1, 0, -5], scale: [2, 1, 4], threshold: 0, marginCap: 1 };
    // z = 0.5 + (−2)(−3 − 1)/2 + (−1)(0.5 − 0)/1 + (−0.5)(−9 + 5)/4 = 0.5 + 4 − 0.5 + 0.5 = 4.5
    const d = decideAbstention(m, lone({ V: -3, g: 0.5, B: -9 }));
    expect(d.abstain).toBe(true);
    expect(d.score).toBeCloseTo(4.5, 14);
    expect(d.reason).toMatch(/^p\(off-domain\) 0\.989 is above the calibrated 0\.5 \(logit 4\.5 vs 0\), from V of the winner −3 \(\+4\), /);
    // B absent: neutral (at its mean, adding nothing): z = 0.5 + 4 − 0.5 = 4
    const noB = decideAbstention(m, lone({ V: -3, g: 0.5 }));
    expect(noB.score).toBeCloseTo(4, 14);
    expect(noB.reason).toMatch(/B of the winner not computed \(neutral\)/);
    // V = mean, g = 0.5 + 0.5: z = 0.5 − 1 + 0 = −0.5 ≤ 0
    expect(decideAbstention(m, lone({ V: 1, g: 1, B: -5 }))).toMatchObject({ abstain: false, score: -0.5 });
  });

  it("B absent under a threshold on B does not abstain; V absent where V is read is refused", () => {
    const onB: AbstentionModel = { kind: "threshold", feature: "B", threshold: -2, marginCap: 1 };
    expect(decideAbstention(onB, lone({}))).toMatchObject({ abstain: false });
    expect(decideAbstention(onB, lone({})).reason).toMatch(/not computed/);
    expect(decideAbstention(onB, lone({ B: -3 })).abstain).toBe(true);
    expect(() => decideAbstention(onV, lone({ V: NaN }))).toThrow(/V of the winner, which was not computed/);
  });

  it("needsVerdict and needsLexical say what the model reads", () => {
    const logistic = (features: ("margin" | "V" | "g" | "B" | "lift")[], weights: number[]): AbstentionModel => ({
      kind: "logistic", features, weights, bias: 0, mean: features.map(() => 0), scale: features.map(() => 1), threshold: 0, marginCap: 1,
    });
    expect([needsVerdict(onV), needsLexical(onV)]).toEqual([true, false]);
    expect([needsVerdict(null), needsLexical(undefined)]).toEqual([false, false]);
    expect(needsVerdict({ kind: "threshold", feature: "margin", threshold: 0, marginCap: 1 })).toBe(false);
    expect(needsLexical({ kind: "threshold", feature: "lift", threshold: 0, marginCap: 1 })).toBe(true);
    expect([needsVerdict(logistic(["V", "g"], [1, 1])), needsLexical(logistic(["V", "g"], [1, 1]))]).toEqual([true, false]);
    expect(needsVerdict(logistic(["V", "g"], [0, 1]))).toBe(false); // a zero weight reads nothing
    expect(needsLexical(logistic(["g", "lift"], [1, 2]))).toBe(true);
    for (const f of ["coverage", "reach"] as const) {
      expect(needsLexical({ kind: "threshold", feature: f, threshold: 0, marginCap: 1 }), f).toBe(true);
      expect(needsLexical({ kind: "logistic", features: ["g", f], weights: [1, 1], bias: 0, mean: [0, 0], scale: [1, 1], threshold: 0, marginCap: 1 }), f).toBe(true);
    }
  });

  it("coverage and reach: read where a model lists them, neutral when absent, ignored by a model that does not list them", () => {
    const m: AbstentionModel = { kind: "logistic", features: ["B", "coverage", "reach"], weights: [-1, -2, -3], bias: 0.25, mean: [-4, 0.1, 1], scale: [2, 0.05, 0.5], threshold: 0, marginCap: 1 };
    // z = 0.25 + (−1)(−6 + 4)/2 + (−2)(0.2 − 0.1)/0.05 + (−3)(0.5 − 1)/0.5 = 0.25 + 1 − 4 + 3 = 0.25
    const d = decideAbstention(m, lone({ B: -6, coverage: 0.2, reach: 0.5 }));
    expect(d.score).toBeCloseTo(0.25, 14);
    expect(d.abstain).toBe(true);
    expect(d.reason).toMatch(/the lexical coverage .* 0\.2 \(−4\)/);
    expect(decideAbstention(m, lone({ B: -6 })).score).toBeCloseTo(1.25, 14);
    expect(decideAbstention(m, lone({ B: -6 })).reason).toMatch(/lexical reach .* not computed \(neutral\)/);
    // a model fitted before the features existed decides exactly as before, whatever they hold
    const old: AbstentionModel = { kind: "logistic", features: ["margin", "g", "B", "lift"], weights: [0.3, -0.06, -1.9, -1.6], bias: -0.5, mean: [0.003, 0.1, -4, 2.7], scale: [0.0006, 0.08, 3.2, 3.9], threshold: 0.05, marginCap: 0.0035 };
    const base = lone({ margin: 0.001, g: 0.2, B: -3, lift: 1 });
    expect(decideAbstention(old, { ...base, coverage: 0.9, reach: 5 })).toEqual(decideAbstention(old, base));
    expect(checkAbstentionModel(m)).toEqual(m);
    expect(abstentionFeatures([{ S: 1, g: 0.5, V: 1, B: -2 }], { lift: 0.5, coverage: 0.3, reach: 0.7 })).toEqual({ margin: Infinity, V: 1, g: 0.5, B: -2, lift: 0.5, coverage: 0.3, reach: 0.7, candidates: 1 });
  });

  it("the library's size: logN and the products with it, computed from fresh random values and read as a logistic model's terms", () => {
    const rand = mulberry32(0x51ce);
    const normal = gaussian(0x51cf);
    for (let trial = 0; trial < 50; trial++) {
      const n = 1 + Math.floor(rand() * 100_000);
      const logN = Math.log(n);
      const [g, B, lift, coverage, reach] = [rand(), -20 * rand(), 10 * rand(), rand(), 4 * rand()];
      const f = abstentionFeatures([{ S: 1, g, V: NaN, B }, { S: 0.5, g: 0.1, V: NaN, B: -30 }], { lift, coverage, reach, logN })!;
      expect(f).toEqual({ margin: 0.5, V: NaN, g, B, lift, coverage, reach, logN, "g*logN": g * logN, "B*logN": B * logN, "lift*logN": lift * logN, "coverage*logN": coverage * logN, "reach*logN": reach * logN, candidates: 2 });
      const w = Array.from({ length: 6 }, () => normal());
      const m: AbstentionModel = { kind: "logistic", features: ["logN", "g*logN", "B*logN", "lift*logN", "coverage*logN", "reach*logN"], weights: w, bias: 0.1, mean: [0, 0, 0, 0, 0, 0], scale: [1, 1, 1, 1, 1, 1], threshold: 0, marginCap: 1 };
      const plain = 0.1 + w[0] * logN + w[1] * g * logN + w[2] * B * logN + w[3] * lift * logN + w[4] * coverage * logN + w[5] * reach * logN;
      expect(decideAbstention(m, f).score).toBeCloseTo(plain, 9);
      expect(needsLexical(m)).toBe(true);
      expect(needsVerdict(m)).toBe(false);
      expect(checkAbstentionModel(m)).toEqual(m);
    }
    // without the lexical pass there is no size: no products, and the size terms are neutral
    const bare = abstentionFeatures([{ S: 1, g: 0.4, V: 2 }])!;
    expect(Object.keys(bare).filter((k) => k.includes("logN"))).toEqual([]);
    const m: AbstentionModel = { kind: "logistic", features: ["g", "g*logN"], weights: [-1, -1], bias: 0, mean: [0.5, 1], scale: [0.1, 1], threshold: 0, marginCap: 1 };
    expect(decideAbstention(m, bare).score).toBeCloseTo(1, 12);
    expect(decideAbstention(m, bare).reason).toMatch(/g × log N not computed \(neutral\)/);
    // a product without its factor is absent too (B not computed)
    expect(abstentionFeatures([{ S: 1, g: 0.4, V: 2 }], { logN: 3 })).toEqual({ margin: Infinity, V: 2, g: 0.4, logN: 3, "g*logN": 1.2000000000000002, candidates: 1 });
    expect(() => checkAbstentionModel({ ...m, features: ["g", "V*logN"] })).toThrow(/unknown feature "V\*logN"/);
  });

  it("a by-size model: the large band from `from` skills, the small one below and without the size", () => {
    const small: AbstentionModel = { kind: "threshold", feature: "lift", threshold: 1, marginCap: 1 };
    const large: AbstentionModel = { kind: "threshold", feature: "reach", threshold: 1.6, marginCap: 1 };
    const m: AbstentionModel = { kind: "bySize", from: 1000, small, large };
    const at = (n: number | undefined, x: Partial<AbstentionFeatures>) => decideAbstention(m, lone({ lift: 0.5, reach: 2, ...x, ...(n === undefined ? {} : { logN: Math.log(n) }) }));
    // lift 0.5 < 1 declines under the small band; reach 2 ≥ 1.6 routes under the large one
    for (const n of [2, 24, 999]) expect(at(n, {}).abstain, `${n} skills`).toBe(true);
    for (const n of [1000, 3000, 100_000]) expect(at(n, {}).abstain, `${n} skills`).toBe(false);
    expect(at(1000, { reach: 1.5 }).abstain).toBe(true);
    expect(at(1000, {}).reason).toMatch(/^the lexical reach .* 2 is at or above the calibrated 1\.6; by the model for libraries of 1000 skills or more \(1000 skills here\)$/);
    expect(at(999, {}).reason).toMatch(/^the best skill's lift .*; by the model for libraries under 1000 skills \(999 skills here\)$/);
    expect(at(undefined, {}).reason).toMatch(/; by the model for libraries under 1000 skills \(the library's size unknown\)$/);
    expect(at(5000, {}).score).toBe(2);
    // the reason names the band by the library's size, even when both bands hold one model object
    const same: AbstentionModel = { kind: "bySize", from: 1000, small: large, large };
    expect(decideAbstention(same, lone({ reach: 2, logN: Math.log(1000) })).reason).toMatch(/by the model for libraries of 1000 skills or more/);
    expect(decideAbstention(same, lone({ reach: 2, logN: Math.log(999) })).reason).toMatch(/by the model for libraries under 1000 skills/);
    // it always reads the library's size (the lexical pass), and the verdict only if a band does
    expect(needsLexical(m)).toBe(true);
    expect(needsVerdict(m)).toBe(false);
    expect(needsVerdict({ ...m, large: { kind: "threshold", feature: "V", threshold: 0, marginCap: 1 } })).toBe(true);
    expect(checkAbstentionModel(m)).toEqual(m);
    expect(() => checkAbstentionModel({ ...m, from: 0 })).toThrow(/from must be an integer ≥ 2/);
    expect(() => checkAbstentionModel({ ...m, large: m })).toThrow(/not another by-size model/);
    expect(() => checkAbstentionModel({ ...m, small: undefined })).toThrow(/small must be a threshold or logistic model/);
  });

  it("a by-size model with a middle band: small under `from`, mid up to `midUntil` − 1, large from there", () => {
    const small: AbstentionModel = { kind: "threshold", feature: "lift", threshold: 1, marginCap: 1 };
    const mid: AbstentionModel = { kind: "threshold", feature: "gcov", threshold: 0.3, marginCap: 1 };
    const large: AbstentionModel = { kind: "threshold", feature: "reach", threshold: 1.6, marginCap: 1 };
    const m: AbstentionModel = { kind: "bySize", from: 125, small, mid, midUntil: 10_000, large };
    // each band reads one feature; the values decline under the small band (lift) and the middle one
    // (gcov) and route under the large one (reach)
    const at = (n: number | undefined) => decideAbstention(m, lone({ lift: 0.5, gcov: 0.2, reach: 2, ...(n === undefined ? {} : { logN: Math.log(n) }) }));
    const band = (n: number | undefined) => bandFor(m, n === undefined ? undefined : Math.log(n));
    for (const n of [2, 24, 124, undefined]) expect(band(n), `${n} skills`).toBe(small);
    for (const n of [125, 3000, 9999]) expect(band(n), `${n} skills`).toBe(mid);
    for (const n of [10_000, 30_593, 1e6]) expect(band(n), `${n} skills`).toBe(large);
    expect(at(124).reason).toMatch(/^the best skill's lift .*; by the model for libraries under 125 skills \(124 skills here\)$/);
    expect(at(125).reason).toMatch(/^the winner's reference coverage .* 0\.2 is below the calibrated 0\.3; by the model for libraries of 125 to 9999 skills \(125 skills here\)$/);
    expect(at(9999).abstain).toBe(true);
    expect(at(10_000).reason).toMatch(/; by the model for libraries of 10000 skills or more \(10000 skills here\)$/);
    expect(at(10_000).abstain).toBe(false);
    expect(describeAbstentionModel(m)).toBe("under 125 skills, abstain when lift < 1; from 125, abstain when gcov < 0.3; from 10000, abstain when reach < 1.6");
    // the bands' features together, then logN; a feature only the middle band reads counts
    expect(modelFeatures(m)).toEqual(["lift", "gcov", "reach", "logN"]);
    expect(readsFeature(m, "gcov")).toBe(true);
    expect(checkAbstentionModel(m)).toEqual(m);
    expect(() => checkAbstentionModel({ ...m, midUntil: undefined })).toThrow(/mid and midUntil come together/);
    expect(() => checkAbstentionModel({ kind: "bySize", from: 125, small, large, midUntil: 200 })).toThrow(/mid and midUntil come together/);
    expect(() => checkAbstentionModel({ ...m, midUntil: 125 })).toThrow(/midUntil must be an integer > from \(125\)/);
    expect(() => checkAbstentionModel({ ...m, midUntil: 200.5 })).toThrow(/midUntil must be an integer/);
    expect(() => checkAbstentionModel({ ...m, mid: m })).toThrow(/mid must be a threshold or logistic model, not another by-size model/);
  });

  it("checkAbstentionModel refuses malformed models", () => {
    expect(checkAbstentionModel(null)).toBeNull();
    expect(() => checkAbstentionModel({ kind: "threshold", feature: "L", threshold: 0, marginCap: 1 })).toThrow(/unknown feature "L"/);
    expect(() => checkAbstentionModel({ kind: "threshold", feature: "V", threshold: NaN, marginCap: 1 })).toThrow(/threshold/);
    expect(() => checkAbstentionModel({ kind: "logistic", features: ["V"], weights: [1, 2], bias: 0, mean: [0], scale: [1], threshold: 0, marginCap: 1 })).toThrow(/weights must hold 1/);
    expect(() => checkAbstentionModel({ kind: "logistic", features: ["V", "V"], weights: [1, 2], bias: 0, mean: [0, 0], scale: [1, 1], threshold: 0, marginCap: 1 })).toThrow(/repeat/);
    expect(() => checkAbstentionModel({ kind: "logistic", features: ["V"], weights: [1], bias: 0, mean: [0], scale: [0], threshold: 0, marginCap: 1 })).toThrow(/scale/);
    expect(() => checkAbstentionModel({ kind: "tree" })).toThrow();
  });
});

/** The plain reference: Newton on the same penalised loss, in float64, written out term by term. */
function newtonReference(X: number[][], y: number[], lambda: number, balanced: boolean): { w: number[]; b: number; mean: number[]; scale: number[] } {
  const n = X.length;
  const d = X[0].length;
  const mean = Array.from({ length: d }, (_, j) => X.reduce((s, r) => s + r[j], 0) / n);
  const scale = Array.from({ length: d }, (_, j) => Math.sqrt(X.reduce((s, r) => s + (r[j] - mean[j]) ** 2, 0) / n));
  const Z = X.map((r) => [...r.map((v, j) => (v - mean[j]) / scale[j]), 1]);
  const pos = y.reduce((a, b) => a + b, 0);
  const c = y.map((yi) => (balanced ? 1 / (2 * (yi ? pos : n - pos)) : 1 / n));
  let t = new Array(d + 1).fill(0);
  for (let it = 0; it < 50; it++) {
    const G = new Array(d + 1).fill(0);
    const H = Array.from({ length: d + 1 }, () => new Array(d + 1).fill(0));
    Z.forEach((z, i) => {
      const p = 1 / (1 + Math.exp(-z.reduce((s, v, j) => s + v * t[j], 0)));
      z.forEach((zj, j) => {
        G[j] += c[i] * (p - y[i]) * zj;
        z.forEach((zk, k) => (H[j][k] += c[i] * p * (1 - p) * zj * zk));
      });
    });
    for (let j = 0; j < d; j++) {
      G[j] += lambda * t[j];
      H[j][j] += lambda;
    }
    // Gauss–Jordan on [H | G]
    const A = H.map((row, j) => [...row, G[j]]);
    for (let col = 0; col <= d; col++) {
      const piv = A[col][col];
      for (let k = 0; k <= d + 1; k++) A[col][k] /= piv;
      for (let r = 0; r <= d; r++) if (r !== col) {
        const f = A[r][col];
        for (let k = 0; k <= d + 1; k++) A[r][k] -= f * A[col][k];
      }
    }
    t = t.map((v, j) => v - A[j][d + 1]);
  }
  return { w: t.slice(0, d), b: t[d], mean, scale };
}

describe("fitLogistic", () => {
  const seed = 20261127;
  const normal = gaussian(seed);
  const uniform = mulberry32(seed + 1);
  const trueW = [2, -1, 0.5];
  const trueB = -0.3;
  const X = Array.from({ length: 3000 }, () => [normal() * 2 + 1, normal(), normal() * 0.5 - 2]);
  const y = X.map((x) => (uniform() < 1 / (1 + Math.exp(-(trueB + x.reduce((s, v, j) => s + v * trueW[j], 0)))) ? 1 : 0));

  it("matches a plain Newton solve and recovers the separating direction", () => {
    for (const [lambda, balanced] of [[1e-4, false], [0.1, true], [1, true]] as const) {
      const fit = fitLogistic(X, y, { lambda, balanced });
      const ref = newtonReference(X, y, lambda, balanced);
      expect(fit.converged).toBe(true);
      fit.weights.forEach((w, j) => expect(Math.abs(w - ref.w[j]), `λ=${lambda} w${j}`).toBeLessThan(1e-9));
      expect(Math.abs(fit.bias - ref.b)).toBeLessThan(1e-9);
      fit.scale.forEach((s, j) => expect(s).toBeCloseTo(ref.scale[j], 12));
    }
    // With a tiny λ and no reweighting the raw weights are the generating ones, up to sampling.
    const fit = fitLogistic(X, y, { lambda: 1e-4, balanced: false });
    const raw = fit.weights.map((w, j) => w / fit.scale[j]);
    const cos = raw.reduce((s, w, j) => s + w * trueW[j], 0) / Math.hypot(...raw) / Math.hypot(...trueW);
    expect(cos).toBeGreaterThan(0.995);
    raw.forEach((w, j) => expect(Math.abs(w - trueW[j])).toBeLessThan(0.25 * Math.abs(trueW[j]) + 0.1));
  });

  it("is deterministic, and refuses one class, ragged rows and λ ≤ 0", () => {
    expect(fitLogistic(X, y)).toEqual(fitLogistic(X, y));
    expect(() => fitLogistic([[1], [2]], [1, 1])).toThrow(/both classes/);
    expect(() => fitLogistic([[1], [2, 3]], [0, 1])).toThrow(/same length/);
    expect(() => fitLogistic([[1], [2]], [0, 1], { lambda: 0 })).toThrow(/lambda/);
    // perfectly separable: the penalty keeps it finite
    const sep = fitLogistic([[0], [1], [2], [3]], [0, 0, 1, 1], { lambda: 0.01 });
    expect(Number.isFinite(sep.weights[0]) && sep.weights[0] > 0).toBe(true);
  });
});

describe("abstainCut", () => {
  it("triggers on at most the allowed off-domain scores, and abstains on as few in-domain ones as that allows", () => {
    const r = mulberry32(7);
    for (let t = 0; t < 300; t++) {
      const q = (x: number) => Math.round(x * 8) / 8; // ties are common
      const off = Array.from({ length: 1 + Math.floor(r() * 30) }, () => q(r() * 4));
      const ins = Array.from({ length: Math.floor(r() * 30) }, () => q(r() * 4 - 1));
      const allowed = Math.floor(r() * off.length);
      const theta = abstainCut(off, ins, allowed);
      expect(off.filter((s) => s <= theta).length).toBeLessThanOrEqual(allowed);
      // no θ' with at most `allowed` triggers abstains on fewer in-domain scores
      const cut = [...off].sort((a, b) => a - b)[allowed];
      expect(ins.filter((s) => s > theta).length).toBe(ins.filter((s) => s >= cut).length);
    }
  });
});


describe("replayAbstention", () => {
  it("rules as chooseByRuling, and reads B and the best B from the record's lexical part at T", () => {
    const { inDomain, offDomain } = synthSet(3, 40, 40);
    for (const rec of [...inDomain, ...offDomain]) {
      const x = replayAbstention(rec, RULING)!;
      const withB = rec.verdict!.map((c) => ({ ...c, B: c.s! / 1 - (Math.log(1000) + 5) }));
      expect(x.chosen).toBe(chooseByRuling(withB, RULING));
      expect(x.features.B).toBeCloseTo(withB.find((c) => c.skill === x.chosen)!.B, 12);
      // lift = BM25's top s/T − log Z + log N (T = 1 here, N = 1000)
      expect(x.features.lift).toBeCloseTo(rec.lexical!.top[0].s - Math.log(1000) - 5 + Math.log(1000), 12);
      expect(x.hit).toBe(rec.accepted.includes(x.chosen));
      // reach = ln(1 + top / ln(1 + (N + 0.5)/0.5)); coverage only where the record keeps the ceiling
      expect(x.features.reach).toBeCloseTo(Math.log(1 + rec.lexical!.top[0].s / Math.log(1 + 1000.5 / 0.5)), 12);
      expect(x.features.coverage).toBeUndefined();
      const ceiling = rec.lexical!.top[0].s * (2 + (rec.id.length % 5));
      const withCeiling = replayAbstention({ ...rec, lexical: { ...rec.lexical!, ceiling } }, RULING)!;
      expect(withCeiling.features.coverage).toBeCloseTo(rec.lexical!.top[0].s / ceiling, 12);
      expect({ ...withCeiling.features, coverage: undefined, "coverage*logN": undefined }).toEqual({ ...x.features, coverage: undefined });
      // the library's size, from the record's lexical part (N = 1000), and its products
      expect(x.features.logN).toBeCloseTo(Math.log(1000), 12);
      expect(x.features["reach*logN"]).toBeCloseTo(x.features.reach! * Math.log(1000), 12);
    }
    // without T, no B; without verdict read-outs, nothing
    expect(replayAbstention(inDomain[0], { ...RULING, lexicalTemperature: undefined })!.features.B).toBeUndefined();
    // gcov: the replayed winner's reference coverage, from the record's map by skill; absent without one
    for (const rec of [...inDomain.slice(0, 10), ...offDomain.slice(0, 10)]) {
      const gcov = Object.fromEntries(rec.verdict!.map((c, i) => [c.skill, (i + 1) / (rec.verdict!.length + 1)]));
      const skillWords = Object.fromEntries(rec.verdict!.map((c, i) => [c.skill, Math.log(10 + 7 * i)]));
      const x = replayAbstention({ ...rec, lexical: { ...rec.lexical!, gcov, skillWords } }, RULING)!;
      expect(x.features.gcov).toBe(gcov[x.chosen]);
      expect(x.features.skillWords).toBe(skillWords[x.chosen]);
      expect(replayAbstention(rec, RULING)!.features.gcov).toBeUndefined();
      expect(replayAbstention(rec, RULING)!.features.skillWords).toBeUndefined();
    }
    expect(replayAbstention({ id: "x", golds: [], accepted: [] }, RULING)).toBeNull();
  });
});

describe("fitAbstention", () => {
  it("meets the stated trigger rate on its fitting records, for every candidate, through decideAbstention", () => {
    const { inDomain, offDomain } = synthSet(11, 60, 90);
    for (const target of [0.1, 0.05, 0.2]) {
      const { model, report } = fitAbstention(inDomain, offDomain, RULING, { targetTriggerRate: target });
      expect(report.fitting.triggerRate).toBeLessThanOrEqual(target);
      for (const c of report.candidates) {
        expect(c.fitting.triggerRate, c.label).toBeLessThanOrEqual(c.fitTriggerRate + 1e-12);
        expect(c.fitTriggerRate).toBeLessThanOrEqual(target);
      }
      const ev = evaluateAbstention(model, inDomain, offDomain, RULING);
      expect(ev.triggerRate).toBe(report.fitting.triggerRate);
      expect(ev.abstentionRate).toBe(report.fitting.abstentionRate);
    }
    // At a fixed fitting share, the threshold triggers on at most ⌊r·n⌋ prompts.
    const fixed = fitAbstention(inDomain, offDomain, RULING, { fitTriggerRate: 0.1, folds: 0 });
    expect(fixed.report.folds).toBe(0);
    for (const c of fixed.report.candidates) expect(c.fitting.triggerRate * 90).toBeLessThanOrEqual(9);
  });

  it("picks a model on the separating feature, and it holds up on held-out records", () => {
    const { inDomain, offDomain } = synthSet(5, 80, 120);
    const { model, report } = fitAbstention(inDomain, offDomain, RULING);
    // coverage needs the records' ceiling, which these lack; reach reads the best score and N
    expect(report.features).toEqual(["margin", "V", "g", "B", "lift", "reach"]);
    expect(report.folds).toBe(5);
    expect(report.candidates.map((c) => c.label)).toContain("lift < t");
    expect(needsLexical(model)).toBe(true);
    expect(report.cv!.triggerRate).toBeLessThanOrEqual(0.1);
    expect(report.meetsTriggerTarget).toBe(true);
    // lift separates the classes by 3 standard deviations: abstentions on in-domain stay low
    expect(report.cv!.abstentionRate).toBeLessThan(0.25);
    // V carries nothing here: its threshold abstains on far more in-domain tasks
    const onV = report.candidates.find((c) => c.label === "V < t")!;
    expect(onV.cv!.abstentionRate).toBeGreaterThan(report.cv!.abstentionRate);
    const held = synthSet(99, 400, 400);
    const ev = evaluateAbstention(model, held.inDomain, held.offDomain, RULING);
    expect(ev.triggerRate).toBeLessThan(0.16);
    expect(ev.abstentionRate).toBeLessThan(0.3);
    expect(ev.hitAt1).toBeLessThanOrEqual(ev.hitAt1WithoutAbstention);
    expect(ev.hitAt1).toBeCloseTo(ev.answeredHitAt1 * (1 - ev.abstentionRate), 12);
    expect(evaluateAbstention(null, held.inDomain, held.offDomain, RULING)).toMatchObject({ abstentionRate: 0, triggerRate: 1 });
    // deterministic
    expect(fitAbstention(inDomain, offDomain, RULING)).toEqual({ model, report });
  });

  it("leaves B out without T, skips records without read-outs, and refuses a missing class", () => {
    const { inDomain, offDomain } = synthSet(8, 30, 30);
    const noT = fitAbstention([...inDomain, { id: "bare", golds: [], accepted: [] }], offDomain, { ...RULING, lexicalTemperature: undefined });
    expect(noT.report.features).toEqual(["margin", "V", "g"]);
    expect(noT.report.skipped).toBe(1);
    expect(needsLexical(noT.model)).toBe(false);
    expect(() => fitAbstention(inDomain, [], RULING)).toThrow(/in-domain and off-domain/);
    expect(() => fitAbstention(inDomain, offDomain, RULING, { targetTriggerRate: 1 })).toThrow(/targetTriggerRate/);
  });
});
