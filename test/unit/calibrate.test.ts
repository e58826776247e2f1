// calibrate: fitting α, γ, Δ to recorded read-outs, on synthetic records whose optimum is known.
import { describe, expect, it } from "vitest";
import { calibrate, PAPER_RULING, type PerQueryRecord } from "../../lab/eval/index.js";
import { chooseByRuling, rule, ruling, shortlist, type RulingParams, type VerdictRecord } from "../../src/route/index.js";
import { freshSeed, rng } from "../helpers/random.js";

type Cand = [skill: string, g: number, L: number, V: number];

/** A record from candidates in any order (sorted here into glance order); "gold" is the gold. */
function record(id: string, cands: Cand[]): PerQueryRecord {
  const verdict: VerdictRecord[] = cands.map(([skill, g, L, V]) => ({ skill, g, L, V })).sort((a, b) => b.g - a.g);
  return { id, golds: ["gold"], accepted: ["gold"], verdict, glance: verdict.map(({ skill, g }) => ({ skill, g })) };
}

function times(n: number, make: (i: number) => PerQueryRecord): PerQueryRecord[] {
  return Array.from({ length: n }, (_, i) => make(i));
}

/**
 * Records every one of which the gold wins exactly when 1.8 < α < 2.2, 0.08 < γ < 0.12 and
 * 0.3 ≤ Δ < 0.6 (each constraint three times, so breaking any costs hits).
 */
function knownOptimum(): PerQueryRecord[] {
  return [
    // α > 1.8: the other leads g by 0.18, the gold leads L by 0.1 (gold shortlisted only when Δ ≥ 0.18).
    ...times(3, (i) => record(`a-lo${i}`, [["other", 1, -1, 0], ["gold", 0.82, -0.9, 0]])),
    // α < 2.2: the gold leads g by 0.22, the other leads L by 0.1.
    ...times(3, (i) => record(`a-hi${i}`, [["gold", 1, -1, 0], ["other", 0.78, -0.9, 0]])),
    // γ > 0.08: the other leads g by 0.008, the gold leads V by 0.1 (L equal).
    ...times(3, (i) => record(`c-lo${i}`, [["other", 1, -1, 0], ["gold", 0.992, -1, 0.1]])),
    // γ < 0.12: the gold leads g by 0.012, the other leads V by 0.1.
    ...times(3, (i) => record(`c-hi${i}`, [["gold", 1, -1, 0], ["other", 0.988, -1, 0.1]])),
    // Δ ≥ 0.3: the gold trails g by 0.3 but wins on L and V whenever α + γ > 0.3.
    ...times(3, (i) => record(`d-lo${i}`, [["other", 1, 0, 0], ["gold", 0.7, 1, 1]])),
    // Δ < 0.6: a distractor 0.6 below the gold beats it whenever α + γ > 0.6, if shortlisted.
    ...times(3, (i) => record(`d-hi${i}`, [["gold", 1, 0, 0], ["other", 0.4, 1, 1]])),
  ];
}

/** The ruling's Hit@1 over records, replayed as route() would rule. */
function hitRate(records: PerQueryRecord[], alpha: number, gamma: number, delta: number): number {
  return records.filter((r) => chooseByRuling(r.verdict!, { alpha, gamma, delta, maxShortlist: 20 }) === "gold").length / records.length;
}

describe("calibrate", () => {
  it("recovers a known optimum region and beats the paper's defaults", () => {
    const records = knownOptimum();
    // Sanity of the construction: inside the region every record is won, just outside it is not.
    expect(hitRate(records, 2, 0.1, 0.45)).toBe(1);
    for (const [a, c, d] of [[1.7, 0.1, 0.45], [2.3, 0.1, 0.45], [2, 0.07, 0.45], [2, 0.13, 0.45], [2, 0.1, 0.25], [2, 0.1, 0.65]]) {
      expect(hitRate(records, a, c, d)).toBeLessThan(1);
    }
    const fit = calibrate(records);
    expect(fit.alpha).toBeGreaterThan(1.8);
    expect(fit.alpha).toBeLessThan(2.2);
    expect(fit.gamma).toBeGreaterThan(0.08);
    expect(fit.gamma).toBeLessThan(0.12);
    expect(fit.delta).toBeGreaterThanOrEqual(0.3);
    expect(fit.delta).toBeLessThan(0.6);
    expect(fit.hitAt1).toBe(1);
    expect(fit.defaultHitAt1).toBe(hitRate(records, PAPER_RULING.alpha, PAPER_RULING.gamma, PAPER_RULING.delta));
    expect(fit.defaultHitAt1).toBeLessThan(1);
    expect(fit.evaluated).toBe(records.length);
    expect(fit.oracleHitAt1).toBe(1);
    // At any Δ in [0.3, 0.6) every record has both candidates shortlisted but the d-hi ones.
    expect(fit.avgShortlist).toBeCloseTo((15 * 2 + 3 * 1) / 18, 12);
  });

  it("breaks ties toward the smaller shortlist, then toward the paper's values", () => {
    // The gold leads g by far and loses on nothing: every setting wins every record.
    const easy = times(4, (i) => record(`e${i}`, [["gold", 1, 0, 0], ["other", 0.5, 0, 0]]));
    const fit = calibrate(easy);
    expect(fit).toMatchObject({ alpha: 1, gamma: 0.025, delta: 0.133, hitAt1: 1, defaultHitAt1: 1, avgShortlist: 1 });

    // The gold trails by 0.2 and wins on L: Δ must reach 0.2; any larger Δ only grows the shortlist
    // (a third candidate sits 0.5 below the top), so Δ lands in [0.2, 0.5).
    const needs = times(4, (i) => record(`n${i}`, [["other", 1, 0, 0], ["gold", 0.8, 1, 0], ["far", 0.5, -5, 0]]));
    const f2 = calibrate(needs);
    expect(f2.delta).toBeGreaterThanOrEqual(0.2);
    expect(f2.delta).toBeLessThan(0.5);
    expect(f2.avgShortlist).toBe(2);
    expect(f2.hitAt1).toBe(1);
    expect(f2.alpha).toBe(1); // α=1 already wins (0.8 + 1 > 1): the paper's value is kept
    expect(f2.defaultHitAt1).toBe(0); // Δ=0.133 never shortlists the gold
  });

  it("is never beaten by a brute-force search over the same grid, on random records", () => {
    let seed = 12345;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const records = times(60, (i) =>
      record(
        `r${i}`,
        Array.from({ length: 8 }, (_, j): Cand => [j === 0 ? "gold" : `s${j}`, rand() * 0.6, -3 + rand() * 2, -4 + rand() * 8]),
      ),
    );
    const fit = calibrate(records, { grid: { refine: 1 } });
    expect(fit.hitAt1).toBeCloseTo(hitRate(records, fit.alpha, fit.gamma, fit.delta), 12);
    let brute = 0;
    for (const a of [0, 0.01, 0.1, 0.3, 1, 3, 10]) {
      for (const c of [0, 0.01, 0.025, 0.1, 0.3, 1]) {
        for (let d = 0; d <= 0.6; d += 0.01) brute = Math.max(brute, hitRate(records, a, c, d));
      }
    }
    expect(fit.hitAt1).toBeGreaterThanOrEqual(brute);
    expect(fit.hitAt1).toBeGreaterThanOrEqual(fit.defaultHitAt1);
    expect(fit.hitAt1).toBeLessThanOrEqual(fit.oracleHitAt1);
  });

  it("cuts records to maxShortlist, skips records without read-outs, and refuses when none has any", () => {
    const r = record("x", [["other", 1, 0, 0], ["gold", 0.99, 5, 5]]);
    const fit = calibrate([r, { id: "y", golds: ["gold"], accepted: ["gold"] }], { maxShortlist: 1 });
    expect(fit.evaluated).toBe(1);
    expect(fit.hitAt1).toBe(0); // with one candidate the gold is never examined
    expect(fit.oracleHitAt1).toBe(0);
    expect(() => calibrate([{ id: "y", golds: ["gold"], accepted: ["gold"] }])).toThrow(/verdict/);
  });
});

// The ruling lives once (src/route/ruling.ts): Router.route orders its shortlist with rule(), and
// eval/calibrate replay it with chooseByRuling(). Both must also match what each did before they
// shared one function: route() sorted by S (stable, so ties keep glance order), and the replay kept
// the first strictly greater S over the Δ-shortlist.
describe("the ruling: the router's order and the replay agree", () => {
  const seed = freshSeed();
  console.log(`calibrate.test.ts ruling seed: ${seed} (a failure names it)`);

  /** Candidates in glance order, drawn from few values so that g ties and S ties are common. */
  function candidates(r: () => number, n: number): VerdictRecord[] {
    const pick = (xs: number[]) => xs[Math.floor(r() * xs.length)];
    return Array.from({ length: n }, (_, i) => ({ skill: `s${i}`, g: pick([1, 0.75, 0.5, 0.25]), L: pick([-2, -1, 0]), V: pick([-1, 0, 1]) }))
      .sort((a, b) => b.g - a.g);
  }

  /** route()'s order before rule(): S computed, then a stable sort by S descending. */
  function routeOrderBefore(c: VerdictRecord[], alpha: number, gamma: number): string[] {
    return c.map((x) => ({ ...x, S: x.g + alpha * x.L + gamma * x.V })).sort((a, b) => b.S - a.S).map((x) => x.skill);
  }

  /** The replay before it used rule(): the first strictly greater S over the Δ-shortlist. */
  function replayBefore(c: VerdictRecord[], p: RulingParams): string | null {
    let best: VerdictRecord | null = null;
    let bestS = -Infinity;
    for (const [i, x] of c.entries()) {
      if (i >= p.maxShortlist || x.g < c[0].g - p.delta) break;
      const S = x.g + p.alpha * x.L + p.gamma * x.V;
      if (best === null || S > bestS) [best, bestS] = [x, S];
    }
    return best?.skill ?? null;
  }

  it(`on random candidate sets with ties (seed ${seed})`, () => {
    const r = rng(seed);
    let ties = 0;
    for (let trial = 0; trial < 2000; trial++) {
      const c = candidates(r, Math.floor(r() * 10));
      const p: RulingParams = { alpha: [0, 0.5, 1, 2][trial % 4], gamma: [0, 0.25, 1][trial % 3], delta: [0, 0.25, 0.5, 10][trial % 4], maxShortlist: 1 + (trial % 8) };
      const ruled = rule(c, p);
      expect(ruled.map((x) => x.skill)).toEqual(routeOrderBefore(c, p.alpha, p.gamma));
      for (const x of ruled) expect(x.S).toBe(ruling(x.g, x.L, x.V, p.alpha, p.gamma));
      const short = shortlist(c, p.delta, p.maxShortlist);
      const routed = rule(short, p)[0]?.skill ?? null;
      expect(chooseByRuling(c, p)).toBe(routed);
      expect(chooseByRuling(c, p)).toBe(replayBefore(c, p));
      if (short.length > 1 && rule(short, p)[1].S === rule(short, p)[0].S) ties++;
    }
    expect(ties).toBeGreaterThan(50); // the draw did exercise ties at the top
  });
});
