/**
 * Hard negatives: skills that resemble a task without answering it. Two sources:
 *
 * - BM25 look-alikes ({@link mineBm25Negatives}): the library skills BM25 ranks highest for the
 *   task's text, mined once before training;
 * - the current glance ({@link refreshGlanceNegatives}): the skills the trainer's own W_q / W_s rank
 *   highest by m̄, recomputed every few steps as the maps change (the trainer's loop calls it).
 *
 * Neither list ever holds a gold or a twin (a copy of a gold: same name or same description; a public
 * library holds many copies of one skill, and training them apart would teach noise).
 *
 * @module
 */
import { Bm25Index, projectNormalize } from "gavel-router";
import type { TrainingExample } from "./batch.js";
import { rankByScore, spanMeanScores, type KeyBank } from "./retrieval.js";

/** What the twin test and BM25 read of a skill. */
export interface NegativeSkill {
  name: string;
  description: string;
  body: string;
}

const norm = (t: string) => t.trim().toLowerCase();

/**
 * Per skill, the other skills that are its copies (the same name or the same non-empty description,
 * after trimming and lower-casing); skills without a copy are absent from the map.
 */
export function twinsOf(skills: readonly NegativeSkill[]): Map<number, number[]> {
  const groups = new Map<string, number[]>();
  skills.forEach((s, i) => {
    for (const key of [`n:${norm(s.name)}`, norm(s.description) === "" ? "" : `d:${norm(s.description)}`]) {
      if (key === "") continue;
      const g = groups.get(key);
      if (g) g.push(i);
      else groups.set(key, [i]);
    }
  });
  const out = new Map<number, Set<number>>();
  for (const g of groups.values()) {
    if (g.length < 2) continue;
    for (const i of g) {
      const set = out.get(i) ?? new Set<number>();
      for (const j of g) if (j !== i) set.add(j);
      out.set(i, set);
    }
  }
  return new Map([...out].map(([i, set]) => [i, [...set].sort((a, b) => a - b)]));
}

/**
 * Fills each example's `hard` list with up to `pool` BM25 look-alikes of its query text (bodies
 * indexed up to 4,000 characters), golds and twins left out. Returns how many examples got one.
 */
export function mineBm25Negatives(examples: readonly TrainingExample[], texts: ReadonlyMap<TrainingExample, string>, skills: readonly NegativeSkill[], pool: number): number {
  const index = new Bm25Index(skills.map((s, i) => ({ id: String(i), name: s.name, description: s.description, body: s.body.slice(0, 4000) })));
  let found = 0;
  for (const ex of examples) {
    const text = texts.get(ex);
    if (text === undefined) continue;
    const banned = new Set([...ex.positives, ...(ex.twins ?? [])]);
    const names = new Set(ex.positives.map((i) => norm(skills[i].name)));
    const descs = new Set(ex.positives.map((i) => norm(skills[i].description)).filter((d) => d !== ""));
    const hard: number[] = [];
    for (const hit of index.search(text, pool * 3)) {
      const i = Number(hit.id);
      if (banned.has(i) || names.has(norm(skills[i].name)) || descs.has(norm(skills[i].description))) continue;
      hard.push(i);
      if (hard.length === pool) break;
    }
    if (hard.length > 0) {
      ex.hard = hard;
      found++;
    }
  }
  return found;
}

/** Which examples a refresh round covers: all of them, or `tasks` of them in turn (round r: r·tasks …). */
export function refreshRound(n: number, round: number, tasks?: number): number[] {
  if (tasks === undefined || tasks >= n) return Array.from({ length: n }, (_, i) => i);
  const start = (round * tasks) % n;
  return Array.from({ length: tasks }, (_, j) => (start + j) % n);
}

/** Options of {@link refreshGlanceNegatives}. */
export interface GlanceRefresh {
  /** The bank the glance ranks (W_s-projected states, or the fine-tune's covers). */
  keys: KeyBank;
  wq: Float32Array;
  nEmbd: number;
  /** Skills kept per example (the list negatives are drawn from). */
  pool: number;
  /** Examples refreshed this round (indices into `examples`). */
  which: readonly number[];
}

/**
 * Sets `glance` of the chosen examples to the `pool` skills that the current W_q and keys rank
 * highest by m̄ for them, golds, twins and skills without keys left out.
 */
export async function refreshGlanceNegatives(examples: readonly TrainingExample[], r: GlanceRefresh): Promise<void> {
  const { dim } = r.keys;
  for (const i of r.which) {
    const ex = examples[i];
    const q = await projectNormalize(ex.query, r.nEmbd, r.wq, dim);
    ex.glance = glanceList(ex, await spanMeanScores(q, r.keys), r.pool);
  }
}

/**
 * The `pool` skills of highest m̄ (`scores`, one per skill) that are neither a gold nor a twin of
 * `ex`, best first; skills scored −∞ (no keys) never enter.
 */
export function glanceList(ex: Pick<TrainingExample, "positives" | "twins">, scores: Float64Array, pool: number): number[] {
  const banned = new Set([...ex.positives, ...(ex.twins ?? [])]);
  const list: number[] = [];
  for (const s of rankByScore(scores)) {
    if (list.length === pool || scores[s] === -Infinity) break;
    if (!banned.has(s)) list.push(s);
  }
  return list;
}
