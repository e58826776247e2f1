/**
 * The lexical expert B in per-query records. `scripts/device/lexical-records.ts` adds to
 * each record the raw BM25 score `s` of every glance and verdict entry and a {@link LexicalRecord}:
 * BM25's top list, the best score of an accepted skill, and the normaliser log Σ exp(BM25/T) over the
 * whole library at each T of {@link LEXICAL_T_GRID}, so that B = s/T − logZ(T) (src/lexical/posterior.ts)
 * can be replayed at any T of the grid without the library. Records without these read as B = 0.
 */
import { invalidArgument, logPartition } from "gavel-router/internal";
import type { Bm25Index } from "gavel-router";

/** The temperatures at which records keep the normaliser: 2^(k/4), k = −8 … 28 (0.25 … 128). */
export const LEXICAL_T_GRID: readonly number[] = Object.freeze(Array.from({ length: 37 }, (_, i) => Number((2 ** ((i - 8) / 4)).toPrecision(6))));

/** What a per-query record keeps of BM25 over the library, for B. */
export interface LexicalRecord {
  /** BM25's top list (best first, library order on ties) with raw scores. */
  top: { skill: string; s: number }[];
  /** The best raw BM25 score among the accepted skills (0 when none shares a word with the task). */
  gold: number;
  /** [T, log Σ_library exp(BM25/T)] for each T of {@link LEXICAL_T_GRID}. */
  logZ: [number, number][];
  /** Skills in the library (the N of abstention's lift, max B + log N). */
  size?: number;
  /**
   * The most any skill could score for the task (`Bm25Index.ceiling`): abstention's coverage is
   * top[0].s / ceiling. Absent from records made before it existed (coverage is then not a feature).
   */
  ceiling?: number;
  /**
   * The reference coverage (abstention's `gcov`, src/lexical/reference-idf.ts) of each skill of the
   * record's verdict pool, by skill id: what the feature reads when that skill wins the replayed
   * ruling. Added by scripts/select/reference-coverage.ts; absent: gcov is not a feature.
   */
  gcov?: Record<string, number>;
  /** The same with each word weighed by its reference idf squared (abstention's `gcov2`). */
  gcov2?: Record<string, number>;
  /**
   * ln of the distinct words of each skill of the verdict pool, by skill id (abstention's
   * `skillWords`). Added by scripts/select/reference-coverage.ts; absent: not a feature.
   */
  skillWords?: Record<string, number>;
  /**
   * The task's domain score (abstention's `domain`, src/lexical/domain.ts) under a domain table.
   * Absent from records made without one: then not a feature.
   */
  domain?: number;
}

/** Records keep scores and normalisers to 1e-4 (B's differences then hold to 1e-4/T). */
function round4(x: number): number {
  return Math.round(x * 1e4) / 1e4;
}

/**
 * The lexical read-outs of one task: its {@link LexicalRecord} (BM25's top `top`, the best accepted
 * score, the normaliser at each T of the grid, the ceiling of coverage) and the raw score of any library skill (0 outside the
 * index), all rounded to 1e-4. `row` maps the index's ids to their positions.
 */
export function lexicalReadouts(index: Bm25Index, row: ReadonlyMap<string, number>, text: string, accepted: readonly string[], top = 50): { lexical: LexicalRecord; scoreOf: (id: string) => number } {
  const s = index.scores(text);
  const scoreOf = (id: string) => {
    const i = row.get(id);
    return i === undefined ? 0 : round4(s[i]);
  };
  const order: number[] = [];
  for (let i = 0; i < s.length; i++) if (s[i] > 0) order.push(i);
  order.sort((a, b) => s[b] - s[a] || a - b);
  const lexical: LexicalRecord = {
    top: order.slice(0, top).map((i) => ({ skill: index.ids[i], s: round4(s[i]) })),
    gold: Math.max(0, ...accepted.map(scoreOf)),
    logZ: LEXICAL_T_GRID.map((T) => [T, round4(logPartition(s, T))]),
    size: s.length,
    ceiling: round4(index.ceiling(text)),
  };
  return { lexical, scoreOf };
}

/**
 * The normaliser of a record at T, which must be one of the record's grid within 1e-3 relative: a
 * projections file stores its T rounded (45.25 for the grid's 45.2548), and the normaliser moves by
 * under 1e-3 nats across that gap.
 */
export function logZAt(lex: LexicalRecord, temperature: number): number {
  for (const [T, z] of lex.logZ) if (Math.abs(T - temperature) <= 1e-3 * temperature) return z;
  throw invalidArgument(`lexical records hold no normaliser at T = ${temperature} (grid: ${lex.logZ.map(([T]) => T).join(", ")})`);
}

/**
 * B of a candidate with raw score `s` in a record: s/T − logZ(T) (a missing `s` reads as BM25 0, no
 * shared word); 0 when the record has no lexical part.
 */
export function lexicalB(lex: LexicalRecord | undefined, s: number | undefined, temperature: number): number {
  if (!lex) return 0;
  return (s ?? 0) / temperature - logZAt(lex, temperature);
}

/**
 * A record's verdict pool as the ruling replays it: in glance order (a stable sort by g keeps the
 * record's own order on ties), with B at T on every entry when T is given and the record has lexical
 * read-outs.
 */
export function verdictPool<V extends { g: number; s?: number }>(record: { verdict?: V[]; lexical?: LexicalRecord }, temperature?: number): (V & { B?: number })[] {
  const lex = temperature === undefined ? undefined : record.lexical;
  return [...(record.verdict ?? [])].sort((a, b) => b.g - a.g).map((c) => (lex ? { ...c, B: lexicalB(lex, c.s, temperature!) } : c));
}

/** What {@link fitLexicalTemperature} returns. */
export interface LexicalTemperatureFit {
  temperature: number;
  /** Mean log p_T(gold | task) at that T (nats). */
  meanLogLikelihood: number;
  /** The same at each T of the grid. */
  curve: [number, number][];
}

/**
 * T by maximum likelihood of the gold under B's posterior over the library: the T of the records'
 * grid maximising the mean over records of gold/T − logZ(T). This makes B a calibrated log posterior
 * (what abstention reads); the ruling's order only sees β/T, which calibration fits afterwards.
 */
export function fitLexicalTemperature(lexicals: readonly LexicalRecord[]): LexicalTemperatureFit {
  if (lexicals.length === 0) throw invalidArgument("fitLexicalTemperature: no record holds lexical read-outs");
  const grid = lexicals[0].logZ.map(([T]) => T);
  const curve: [number, number][] = grid.map((T) => [T, lexicals.reduce((a, l) => a + l.gold / T - logZAt(l, T), 0) / lexicals.length]);
  let best = curve[0];
  for (const c of curve) if (c[1] > best[1]) best = c;
  return { temperature: best[0], meanLogLikelihood: best[1], curve };
}

/** A per-query record as the first-stage measures read it. */
interface FirstStageRecord {
  accepted: string[];
  glance?: { skill: string; g: number; s?: number }[];
  lexical?: LexicalRecord;
}

/**
 * What the records say of a first stage ranking the whole library by g + βB, for one task:
 * - `pool`: 1 when the best of g + βB over the glance's recorded top list is accepted (exact over
 *   that list, where g is known);
 * - `low` / `high`: 1 when an accepted skill is first over the whole library for every / for some g
 *   consistent with the records. A skill outside the glance's list has g in [0, g_last] (g is a
 *   weighted mean of top-k max-sims, ≥ 0 at any library size where a token's top k match at all);
 *   one outside BM25's list too has B ≤ B of the list's last. The true Hit@1 lies in [low, high].
 * Null when the record lacks glance or lexical read-outs.
 */
export function firstStageHit(r: FirstStageRecord, beta: number, temperature: number): { pool: number; low: number; high: number } | null {
  const lex = r.lexical;
  if (!lex || !r.glance || r.glance.length === 0 || r.glance.some((c) => c.s === undefined)) return null;
  const B = (s: number) => s / temperature - logZAt(lex, temperature);
  const accepted = new Set(r.accepted);
  let poolBest = r.glance[0];
  for (const c of r.glance) if (c.g + beta * B(c.s!) > poolBest.g + beta * B(poolBest.s!)) poolBest = c;
  const gLast = r.glance[r.glance.length - 1].g;
  const known = new Map<string, { lo: number; hi: number }>();
  for (const c of r.glance) known.set(c.skill, { lo: c.g + beta * B(c.s!), hi: c.g + beta * B(c.s!) });
  for (const c of lex.top) if (!known.has(c.skill)) known.set(c.skill, { lo: beta * B(c.s), hi: gLast + beta * B(c.s) });
  const sLast = lex.top.length ? lex.top[lex.top.length - 1].s : 0;
  let goldLo = -Infinity;
  let goldHi = -Infinity;
  // An accepted skill in neither list has g ≤ g_last and a score ≤ the best accepted one's.
  goldHi = gLast + beta * B(lex.gold);
  let otherLo = -Infinity;
  // The rest of the library: g ≤ g_last and B ≤ B(s_last); an accepted skill there can only lose.
  let otherHi = gLast + beta * B(sLast);
  for (const [id, v] of known) {
    if (accepted.has(id)) {
      goldLo = Math.max(goldLo, v.lo);
      goldHi = Math.max(goldHi, v.hi);
    } else {
      otherLo = Math.max(otherLo, v.lo);
      otherHi = Math.max(otherHi, v.hi);
    }
  }
  return { pool: accepted.has(poolBest.skill) ? 1 : 0, low: goldLo > otherHi ? 1 : 0, high: goldHi > otherLo ? 1 : 0 };
}

/** Fraction of records with an accepted skill in the union of the glance's top k and BM25's top k. */
export function unionRecall(records: readonly FirstStageRecord[], k: number): number {
  const hits = records.filter((r) => {
    const accepted = new Set(r.accepted);
    return [...(r.glance ?? []).slice(0, k), ...(r.lexical?.top ?? []).slice(0, k)].some((c) => accepted.has(c.skill));
  }).length;
  return records.length ? hits / records.length : 0;
}

/** Mean of {@link firstStageHit} over records (those without read-outs are refused). */
export function firstStageRates(records: readonly FirstStageRecord[], beta: number, temperature: number): { pool: number; low: number; high: number } {
  const sum = { pool: 0, low: 0, high: 0 };
  for (const r of records) {
    const h = firstStageHit(r, beta, temperature);
    if (!h) throw invalidArgument("firstStageRates: a record lacks glance or lexical read-outs (scripts/device/lexical-records.ts adds them)");
    sum.pool += h.pool;
    sum.low += h.low;
    sum.high += h.high;
  }
  const n = records.length || 1;
  return { pool: sum.pool / n, low: sum.low / n, high: sum.high / n };
}

/**
 * β of the first stage g + βB fitted on (validation) records: the largest guaranteed Hit@1 (`low`),
 * then the exact Hit@1 over the glance's list, then the smaller β. 0 is always a candidate.
 */
export function fitFirstStageBeta(records: readonly FirstStageRecord[], temperature: number, betas: readonly number[]): { beta: number; rates: { pool: number; low: number; high: number } } {
  let best = { beta: 0, rates: firstStageRates(records, 0, temperature) };
  for (const beta of [...betas].sort((a, b) => a - b)) {
    const rates = firstStageRates(records, beta, temperature);
    if (rates.low > best.rates.low || (rates.low === best.rates.low && rates.pool > best.rates.pool)) best = { beta, rates };
  }
  return best;
}
