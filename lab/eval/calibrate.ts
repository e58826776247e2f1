/**
 * `gavel calibrate`: fits the ruling's exchange rates α, γ (and β, T of the lexical expert B when the
 * records carry it) and the pruning margin Δ on validation
 * read-outs (paper, section 4.1: "calibrated on SkillRet's validation split"), by maximising the
 * Hit@1 of argmax_{shortlist(Δ)} g + αL + γV.
 *
 * Δ is searched exactly: on recorded data the shortlists, hence the choices, change only where Δ
 * crosses some task's gap g_best − g_j, so every interval between consecutive gaps is tried, in one
 * sweep per (α, γ). α and γ are searched on a log-spaced grid (with 0, and the paper's values), then
 * refined around the best cells.
 */
import { chooseByRuling, firstStage, firstStageOrder, invalidArgument, ruling, shortlist, type VerdictRecord } from "gavel-router/internal";
import { PROJECTION_DEFAULTS } from "gavel-router";
import type { PerQueryRecord } from "./evaluate.js";
import { fitLexicalTemperature, verdictPool, type LexicalRecord } from "./lexical-fit.js";

/** The paper's calibrated constants (section 4.1), the tie-break's anchor and the baseline. */
export const PAPER_RULING = Object.freeze({ alpha: PROJECTION_DEFAULTS.alpha, gamma: PROJECTION_DEFAULTS.gamma, delta: PROJECTION_DEFAULTS.delta });

/** The search space of {@link calibrate}. */
export interface CalibrationGrid {
  /** α values of the coarse grid (default 0 and 10^-3 … 10^2 in quarter decades, and 1). */
  alphas?: number[];
  /** γ values of the coarse grid (default 0 and 10^-4 … 10^1 in quarter decades, and 0.025). */
  gammas?: number[];
  /** Rounds of refinement around the best coarse cells (default 2). */
  refine?: number;
  /** β values tried for the lexical expert (default 0 and 10^-4 … 10^0 in quarter decades). */
  betas?: number[];
}

/** Options of {@link calibrate}. */
export interface CalibrateOptions {
  grid?: CalibrationGrid;
  /** Most candidates the verdict examines (default the projections' default, 20); records are cut to it. */
  maxShortlist?: number;
  /** The constants to compare with and to break ties toward (default the paper's α=1, γ=0.025, Δ=0.133). */
  defaults?: { alpha: number; gamma: number; delta: number };
  /**
   * Fit the lexical expert's β and T too (default: when every kept record has lexical read-outs,
   * lab/eval/lexical-fit.ts). T is fitted first, by the gold's likelihood; then β with α, γ, Δ. With
   * false, or records without them, β = 0.
   */
  lexical?: boolean;
}

/** What {@link calibrate} returns. */
export interface CalibrationResult {
  alpha: number;
  gamma: number;
  delta: number;
  /** β of the lexical expert (0 when not fitted, or when it does not help on these records). */
  beta: number;
  /** T of the lexical expert (the default when not fitted). */
  lexicalTemperature: number;
  /** Hit@1 of the best ruling without B (β = 0), when β was fitted. */
  withoutLexicalHitAt1?: number;
  /** Hit@1 of the ruling at the fitted constants, over the evaluated records. */
  hitAt1: number;
  /** Hit@1 at the defaults (the paper's unless `defaults` says otherwise). */
  defaultHitAt1: number;
  /** Average shortlist size (candidates the verdict examines) that the fitted Δ yields. */
  avgShortlist: number;
  /** The same at the default Δ. */
  defaultAvgShortlist: number;
  /** Records the fit used (those with verdict read-outs and an accepted id). */
  evaluated: number;
  /** Fraction of them with an accepted skill anywhere in the verdict pool: no constants can beat it. */
  oracleHitAt1: number;
  /** (α, γ, Δ-interval) settings tried. */
  settings: number;
}

interface Prepared {
  /** The first-stage score g + βB of each candidate, in first-stage order (g alone at β = 0). */
  g: Float64Array;
  L: Float64Array;
  V: Float64Array;
  gold: Uint8Array;
  /** Candidates shortlisted at Δ = 0 (the best and any exact ties of it). */
  atZero: number;
}

function quarterDecades(fromExp: number, toExp: number): number[] {
  const out: number[] = [];
  for (let e = fromExp * 4; e <= toExp * 4; e++) out.push(Number((10 ** (e / 4)).toPrecision(6)));
  return out;
}

function uniqueSorted(values: number[]): number[] {
  return [...new Set(values)].sort((a, b) => a - b);
}

/** Distance to the defaults on a log scale that stays finite at 0 (x0/10 is "about zero"). */
function logDistance(x: number, x0: number): number {
  if (x0 <= 0) return Math.abs(x);
  const s = x0 / 10;
  return Math.abs(Math.log((x + s) / (x0 + s)));
}

/**
 * The records calibration can use (verdict read-outs and an accepted id), each with its verdict pool
 * in glance order and B on every entry when T is given ({@link verdictPool}).
 */
function usable(records: readonly PerQueryRecord[], temperature: number | undefined): PerQueryRecord[] {
  const kept: PerQueryRecord[] = [];
  for (const r of records) {
    // the route's own shortlist holds only the skills within the shipped Δ: nothing to fit Δ over
    if (r.pool === "route") throw invalidArgument(`calibrate: record ${r.id} was made with the route's own shortlist; calibration needs the wide pool (gavel eval --pool N)`);
    if (!r.verdict || r.verdict.length === 0 || !r.accepted || r.accepted.length === 0) continue;
    for (const c of r.verdict) {
      if (typeof c.skill !== "string" || ![c.g, c.L, c.V].every(Number.isFinite)) throw invalidArgument(`calibrate: record ${r.id} has a verdict entry without finite g, L, V`);
    }
    kept.push({ ...r, verdict: verdictPool(r, temperature) });
  }
  return kept;
}

/**
 * Each record's candidates for β as the sweep reads them: in first-stage order by g + βB, cut to
 * maxShortlist, with the first-stage score in place of g (so S = that + αL + γV = g + αL + γV + βB).
 */
function prepare(kept: readonly PerQueryRecord[], maxShortlist: number, beta: number): Prepared[] {
  return kept.map((r) => {
    const v = firstStageOrder(r.verdict!, beta).slice(0, maxShortlist);
    const accepted = new Set(r.accepted);
    const F = Float64Array.from(v, (c) => firstStage(c.g, c.B, beta));
    let atZero = 0;
    while (atZero < v.length && F[atZero] >= F[0]) atZero++;
    return {
      g: F,
      L: Float64Array.from(v, (c) => c.L),
      V: Float64Array.from(v, (c) => c.V),
      gold: Uint8Array.from(v, (c) => (accepted.has(c.skill) ? 1 : 0)),
      atZero,
    };
  });
}

/** A candidate setting, with what it scores. */
interface Setting {
  alpha: number;
  gamma: number;
  delta: number;
  beta: number;
  hits: number;
  avgShortlist: number;
  distance: number;
}

/**
 * Better: more hits, then a smaller average shortlist, then the smaller β (B enters only where it
 * raises Hit@1 or saves verdict passes), then closer to the defaults.
 */
function better(a: Setting, b: Setting | undefined): boolean {
  if (!b) return true;
  if (a.hits !== b.hits) return a.hits > b.hits;
  if (Math.abs(a.avgShortlist - b.avgShortlist) > 1e-12) return a.avgShortlist < b.avgShortlist;
  if (a.beta !== b.beta) return a.beta < b.beta;
  return a.distance < b.distance;
}

/**
 * Fits α, γ and Δ to per-query records (from `gavel eval --per-query` on a validation split) by
 * maximising the Hit@1 of the ruling. Among equally good settings it prefers the smaller average
 * shortlist (fewer verdict passes), then the setting closest to the defaults.
 *
 * Only records with verdict read-outs and an accepted id are used. The verdict pool caps what any
 * constants can achieve: see {@link CalibrationResult.oracleHitAt1}.
 *
 * @throws GavelError `INVALID_ARGUMENT` when no record has verdict read-outs, or on bad options.
 */
export function calibrate(records: readonly PerQueryRecord[], options: CalibrateOptions = {}): CalibrationResult {
  if (!Array.isArray(records)) throw invalidArgument("calibrate: records must be an array");
  const maxShortlist = options.maxShortlist ?? PROJECTION_DEFAULTS.maxShortlist;
  if (!Number.isInteger(maxShortlist) || maxShortlist < 1) throw invalidArgument("calibrate: maxShortlist must be a positive integer");
  const defaults = options.defaults ?? PAPER_RULING;
  const temperature = lexicalTemperatureOf(records, options.lexical);
  const kept = usable(records, temperature);
  if (kept.length === 0) throw invalidArgument("calibrate: no record holds verdict read-outs (run gavel eval with the ruling, --per-query)");
  const R = kept.length;

  const betas = temperature === undefined ? [0] : uniqueSorted(options.grid?.betas ?? [0, ...quarterDecades(-4, 0)]);
  if (betas.some((b) => !(b >= 0) || !Number.isFinite(b))) throw invalidArgument("calibrate: grid betas must be finite and ≥ 0");
  let best: Setting | undefined;
  let withoutB: Setting | undefined;
  let settings = 0;
  // β = 0 is always fitted (the comparison without B); the best is taken over the grid's β only.
  // β moves the first stage too (the shortlist is by g + βB), so each β has its own sweep.
  for (const beta of uniqueSorted([0, ...betas])) {
    const sweep = new DeltaSweep(prepare(kept, maxShortlist, beta), defaults);
    sweep.beta = beta;
    const s = searchGrid((alpha, gamma) => sweep.bestFor(alpha, gamma), defaults, options.grid);
    settings += sweep.settings;
    if (beta === 0) withoutB = s;
    if (betas.includes(beta) && better(s, best)) best = s;
  }
  best = best!;
  // Report Hit@1 by replaying route()'s own ruling, not the sweep's bookkeeping.
  const hitRate = (alpha: number, gamma: number, delta: number, beta = 0) =>
    kept.filter((r) => {
      const chosen = chooseByRuling(r.verdict as VerdictRecord[], { alpha, gamma, delta, beta, maxShortlist });
      return chosen !== null && r.accepted.includes(chosen);
    }).length / R;
  const avgShortlistAt = (delta: number, beta = 0) => kept.reduce((n, r) => n + shortlist(firstStageOrder(r.verdict!, beta), delta, maxShortlist, beta).length, 0) / R;
  return {
    alpha: best.alpha,
    gamma: best.gamma,
    delta: best.delta,
    beta: best.beta,
    lexicalTemperature: temperature ?? PROJECTION_DEFAULTS.lexicalTemperature,
    ...(temperature !== undefined && withoutB ? { withoutLexicalHitAt1: hitRate(withoutB.alpha, withoutB.gamma, withoutB.delta) } : {}),
    hitAt1: hitRate(best.alpha, best.gamma, best.delta, best.beta),
    defaultHitAt1: hitRate(defaults.alpha, defaults.gamma, defaults.delta),
    avgShortlist: avgShortlistAt(best.delta, best.beta),
    defaultAvgShortlist: avgShortlistAt(defaults.delta),
    evaluated: R,
    // the candidates some setting can shortlist: the glance's first maxShortlist, or with B (which
    // moves the first stage) the whole recorded pool
    oracleHitAt1: kept.filter((r) => (temperature === undefined ? r.verdict!.slice(0, maxShortlist) : r.verdict!).some((c) => r.accepted.includes(c.skill))).length / R,
    settings,
  };
}

/**
 * The lexical expert's T fitted on the records (lab/eval/lexical-fit.ts), or undefined when B is not
 * fitted: `lexical: false`, or some record with verdict read-outs lacks lexical ones.
 */
function lexicalTemperatureOf(records: readonly PerQueryRecord[], lexical: boolean | undefined): number | undefined {
  if (lexical === false) return undefined;
  const used = records.filter((r) => r.verdict && r.verdict.length > 0 && r.accepted && r.accepted.length > 0);
  const lex = used.map((r) => r.lexical).filter((l): l is LexicalRecord => !!l);
  if (lex.length === 0 || lex.length < used.length) {
    if (lexical === true) throw invalidArgument(`calibrate: ${used.length - lex.length} of ${used.length} records lack lexical read-outs (scripts/device/lexical-records.ts adds them)`);
    return undefined;
  }
  return fitLexicalTemperature(lex).temperature;
}

/** The constants calibration compares with and breaks ties toward. */
type Defaults = NonNullable<CalibrateOptions["defaults"]>;

/**
 * The exact search over Δ for given (α, γ). Candidate j of record r joins the shortlist once
 * Δ ≥ gap = g_0 − g_j (> 0 past the ties of the best); between two consecutive distinct gaps every
 * shortlist is fixed, so one sweep over the joins in gap order tries every distinct Δ.
 */
class DeltaSweep {
  /** (α, γ, Δ-interval) settings tried so far. */
  settings = 0;
  /** β of the lexical expert (already in the prepared first-stage scores; here for the tie-break's distance). */
  beta = 0;
  readonly #prepared: Prepared[];
  readonly #defaults: Defaults;
  /** The joins, in gap order. */
  readonly #events: { gap: number; r: number }[] = [];
  /** Interval i is [lows[i], lows[i+1]): lows[0] = 0, then each distinct gap; the last is unbounded. */
  readonly #lows: number[];
  /** The Δ reported for each interval, and the average shortlist it yields. */
  readonly #rep: Float64Array;
  readonly #avgShort: Float64Array;
  /** prefixHit[r][m]: the ruling over record r's first m candidates commits to a gold. */
  readonly #prefixHit: Uint8Array[];

  constructor(prepared: Prepared[], defaults: Defaults) {
    this.#prepared = prepared;
    this.#defaults = defaults;
    prepared.forEach((p, r) => {
      for (let j = p.atZero; j < p.g.length; j++) this.#events.push({ gap: p.g[0] - p.g[j], r });
    });
    this.#events.sort((a, b) => a.gap - b.gap);
    this.#lows = [0, ...uniqueSorted(this.#events.map((e) => e.gap).filter((x) => x > 0))];
    this.#rep = new Float64Array(this.#lows.length);
    this.#avgShort = new Float64Array(this.#lows.length);
    this.#prefixHit = prepared.map((p) => new Uint8Array(p.g.length + 1));
    this.#describeIntervals();
  }

  #describeIntervals(): void {
    const prepared = this.#prepared;
    const lows = this.#lows;
    const events = this.#events;
    let total = prepared.reduce((s, p) => s + p.atZero, 0);
    let e = 0;
    for (let i = 0; i < lows.length; i++) {
      const lo = lows[i];
      const hi = i + 1 < lows.length ? lows[i + 1] : Infinity;
      for (; e < events.length && events[e].gap <= lo; e++) total++;
      this.#avgShort[i] = total / prepared.length;
      // Within an interval every Δ rules alike on these records: take the default when it lies
      // inside, else a point clear of both ends (a Δ on a boundary would hinge on one task's gap).
      const d = this.#defaults.delta;
      if (d > lo && d < hi) this.#rep[i] = d;
      else this.#rep[i] = hi === Infinity ? (lo > 0 ? lo * 1.25 : 1) : (lo + hi) / 2;
    }
  }

  /** Fills prefixHit for (α, γ): the running argmax of S over each record's candidates. */
  #fillPrefixHits(alpha: number, gamma: number): void {
    this.#prepared.forEach((p, r) => {
      const hit = this.#prefixHit[r];
      let bestS = -Infinity;
      let bestJ = -1;
      for (let j = 0; j < p.g.length; j++) {
        const S = ruling(p.g[j], p.L[j], p.V[j], alpha, gamma);
        // strictly greater: on equal S the earlier candidate stays, as rule()'s stable sort keeps it
        if (bestJ < 0 || S > bestS) {
          bestS = S;
          bestJ = j;
        }
        hit[j + 1] = p.gold[bestJ];
      }
    });
  }

  /** The best Δ-interval for (α, γ), by one sweep over the joins. */
  bestFor(alpha: number, gamma: number): Setting {
    this.#fillPrefixHits(alpha, gamma);
    const prefixHit = this.#prefixHit;
    const events = this.#events;
    const defaults = this.#defaults;
    const m = this.#prepared.map((p) => p.atZero);
    let hits = 0;
    for (let r = 0; r < m.length; r++) hits += prefixHit[r][m[r]];
    let best: Setting | undefined;
    let e = 0;
    for (let i = 0; i < this.#lows.length; i++) {
      while (e < events.length && events[e].gap <= this.#lows[i]) {
        const r = events[e].r;
        hits += prefixHit[r][m[r] + 1] - prefixHit[r][m[r]];
        m[r]++;
        e++;
      }
      this.settings++;
      if (best && hits < best.hits) continue;
      const delta = this.#rep[i];
      const distance = logDistance(alpha, defaults.alpha) + logDistance(gamma, defaults.gamma) + logDistance(delta, defaults.delta) + logDistance(this.beta, 0);
      const s: Setting = { alpha, gamma, delta, beta: this.beta, hits, avgShortlist: this.#avgShort[i], distance };
      if (better(s, best)) best = s;
    }
    return best!;
  }
}

/**
 * The (α, γ) search: a coarse grid (log-spaced with 0 and the defaults, unless `grid` says
 * otherwise), then rounds of refinement around the best few cells. Returns the best setting.
 */
function searchGrid(bestFor: (alpha: number, gamma: number) => Setting, defaults: Defaults, grid: CalibrationGrid | undefined): Setting {
  const coarseAlphas = uniqueSorted(grid?.alphas ?? [0, ...quarterDecades(-3, 2), defaults.alpha]);
  const coarseGammas = uniqueSorted(grid?.gammas ?? [0, ...quarterDecades(-4, 1), defaults.gamma]);
  for (const x of [...coarseAlphas, ...coarseGammas]) if (!(x >= 0) || !Number.isFinite(x)) throw invalidArgument("calibrate: grid values must be finite and ≥ 0");
  const rounds = grid?.refine ?? 2;

  const tried = new Map<string, Setting>();
  const run = (alpha: number, gamma: number): Setting => {
    const key = `${alpha},${gamma}`;
    let s = tried.get(key);
    if (!s) tried.set(key, (s = bestFor(alpha, gamma)));
    return s;
  };
  for (const a of coarseAlphas) for (const c of coarseGammas) run(a, c);

  // Refinement: around each of the best few cells, a finer grid spanning its neighbours on the
  // previous grid (geometric between positive values; linear next to 0), narrowing each round.
  let alphas = coarseAlphas;
  let gammas = coarseGammas;
  for (let round = 0; round < rounds; round++) {
    const nextA: number[] = [];
    const nextC: number[] = [];
    for (const s of top(tried, 3)) {
      const fa = around(alphas, s.alpha);
      const fc = around(gammas, s.gamma);
      for (const a of fa) for (const c of fc) run(a, c);
      nextA.push(...fa);
      nextC.push(...fc);
    }
    alphas = uniqueSorted(nextA);
    gammas = uniqueSorted(nextC);
  }
  return top(tried, 1)[0];
}

/** The `n` best settings tried, best first (ties to the one tried first). */
function top(tried: ReadonlyMap<string, Setting>, n: number): Setting[] {
  const all = [...tried.values()];
  const out: Setting[] = [];
  while (out.length < n && all.length > 0) {
    let bi = 0;
    for (let i = 1; i < all.length; i++) if (better(all[i], all[bi])) bi = i;
    out.push(all.splice(bi, 1)[0]);
  }
  return out;
}

/** Nine points spanning x's neighbours in the sorted grid `values` (x itself included). */
function around(values: number[], x: number): number[] {
  const i = values.indexOf(x);
  const lo = i > 0 ? values[i - 1] : x > 0 ? x / 2 : 0;
  const hi = i >= 0 && i + 1 < values.length ? values[i + 1] : x > 0 ? x * 2 : 1;
  const out = [x];
  for (let t = 1; t <= 4; t++) {
    const f = t / 4;
    // Geometric between positive ends, linear where an end is 0.
    out.push(lo > 0 ? Number((x * (lo / x) ** f).toPrecision(6)) : Number((x + (lo - x) * f).toPrecision(6)));
    out.push(x > 0 ? Number((x * (hi / x) ** f).toPrecision(6)) : Number((hi * f).toPrecision(6)));
  }
  return uniqueSorted(out.filter((v) => v >= 0));
}
