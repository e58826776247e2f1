// fitLogistic's sign bounds against a plain reference (projected gradient descent on the same
// standardised, penalised, class-balanced loss), on fresh random data shaped like the abstention
// features: two collinear readings of the evidence and one other feature. Two of the sign sets below
// bound a weight the free fit puts on the other side (x0 ≥ 0, x2 ≤ 0), so they test the bounds.
import { describe, expect, it } from "vitest";
import { fitLogistic } from "../../lab/eval/index.js";
import { EVIDENCE_FEATURES } from "../../lab/eval/abstention-fit.js";
import { freshSeed, gauss, rng } from "../helpers/random.js";

const seed = freshSeed();

/** Projected gradient descent: minimise the balanced, penalised loss with signs[j]·w[j] ≥ 0. */
function projectedReference(X: number[][], y: number[], lambda: number, signs: number[]): { w: number[]; b: number } {
  const n = X.length, d = X[0].length;
  const mean = Array.from({ length: d }, (_, j) => X.reduce((s, r) => s + r[j], 0) / n);
  const scale = mean.map((m, j) => Math.sqrt(X.reduce((s, r) => s + (r[j] - m) ** 2, 0) / n) || 1);
  const Z = X.map((r) => r.map((v, j) => (v - mean[j]) / scale[j]));
  const pos = y.reduce((s, v) => s + v, 0);
  const c = y.map((v) => 1 / (2 * (v ? pos : n - pos)));
  // a step under 1 / (the gradient's Lipschitz bound)
  const L = 0.25 * Z.reduce((s, z, i) => s + c[i] * (1 + z.reduce((a, v) => a + v * v, 0)), 0) + lambda;
  const step = 1 / L;
  let w = new Array<number>(d).fill(0), b = 0;
  for (let it = 0; it < 40000; it++) {
    const gw = w.map((v) => lambda * v);
    let gb = 0;
    Z.forEach((z, i) => {
      const t = b + z.reduce((a, v, j) => a + v * w[j], 0);
      const r = c[i] * (1 / (1 + Math.exp(-t)) - y[i]);
      z.forEach((v, j) => (gw[j] += r * v));
      gb += r;
    });
    w = w.map((v, j) => { const x = v - step * gw[j]; return signs[j] === 0 ? x : signs[j] * Math.max(0, signs[j] * x); });
    b -= step * gb;
  }
  return { w, b };
}

describe(`fitLogistic with sign bounds (seed ${seed})`, () => {
  const r = rng(seed);
  const n = 400;
  // u: how well the request matches; x0, x1 two noisy readings of it (collinear), x2 free noise with a
  // little signal. y = 1 (off-domain) falls with u.
  const X: number[][] = [];
  const y: number[] = [];
  for (let i = 0; i < n; i++) {
    const u = gauss(r);
    const x0 = u + 0.15 * gauss(r);
    const x1 = 0.6 * u + 0.4 * x0 + 0.05 * gauss(r);
    const x2 = gauss(r);
    X.push([x0, x1, x2]);
    y.push(r() < 1 / (1 + Math.exp(2.5 * u - 0.4 * x2 + 0.3 * (x1 - x0) * 8)) ? 1 : 0);
  }
  if (!y.includes(0)) y[0] = 0;
  if (!y.includes(1)) y[1] = 1;

  it("matches projected gradient descent, and every bounded weight keeps its sign", () => {
    for (const lambda of [0.01, 0.1, 1]) {
      for (const signs of [[-1, -1, 0], [-1, 0, 1], [1, -1, 0], [-1, -1, -1]]) {
        const fit = fitLogistic(X, y, { lambda, signs });
        const ref = projectedReference(X, y, lambda, signs);
        fit.weights.forEach((w, j) => {
          if (signs[j] !== 0) expect(signs[j] * w, `λ ${lambda} signs ${signs} w${j}`).toBeGreaterThanOrEqual(0);
          expect(Math.abs(w - ref.w[j]), `λ ${lambda} signs ${signs} w${j}: ${w} against ${ref.w[j]}`).toBeLessThan(2e-4);
        });
        expect(Math.abs(fit.bias - ref.b)).toBeLessThan(2e-4);
      }
    }
  });

  it("leaves a fit that already keeps the signs as the free fit", () => {
    const free = fitLogistic(X, y, { lambda: 0.1 });
    const signs = free.weights.map((w) => (w >= 0 ? 1 : -1));
    const bounded = fitLogistic(X, y, { lambda: 0.1, signs });
    expect(bounded.weights).toEqual(free.weights);
    expect(bounded.bias).toBe(free.bias);
  });

  it("refuses signs other than −1, 0 and 1, or more than one per feature", () => {
    expect(() => fitLogistic(X, y, { signs: [2, 0, 0] })).toThrow(/signs/);
    expect(() => fitLogistic(X, y, { signs: [0, 0, 0, -1] })).toThrow(/signs/);
  });

  it("bounds the evidence features only: the size terms and skillWords stay free", () => {
    expect([...EVIDENCE_FEATURES].sort()).toEqual(["B", "V", "coverage", "domain", "g", "gcov", "gcov2", "lift", "margin", "reach"]);
  });
});
