// Synthetic per-query records for abstention: in-domain tasks and off-domain prompts whose top BM25
// score (hence the best B) separates them, with V carrying nothing.
import { LEXICAL_T_GRID, type AbstentionRecord } from "../../lab/eval/index.js";
import { gaussian, mulberry32 } from "../../src/util/prng.js";

/** The ruling the records are replayed under (T = 1 is on the records' grid). */
export const RULING = { alpha: 0.1, gamma: 0.05, delta: 0.1, beta: 0.01, maxShortlist: 20, lexicalTemperature: 1 };

/** A synthetic record: three candidates; in-domain ones share words with a skill (a high top BM25). */
export function synthRecord(id: string, r: () => number, normal: () => number, off: boolean): AbstentionRecord {
  const cands = ["a", "b", "c"].map((skill, i) => ({ skill: `${id}-${skill}`, g: 0.3 + 0.2 * r() + (off ? 0 : 0.05) - 0.01 * i, L: -2 + r(), V: 5 + 4 * normal(), s: 3 * r() }));
  cands.sort((a, b) => b.g - a.g);
  const sTop = off ? 8 + 4 * normal() : 20 + 4 * normal();
  const lexical = { top: [{ skill: cands[0].skill, s: Math.max(0, sTop) }], gold: 0, logZ: LEXICAL_T_GRID.map((T) => [T, Math.log(1000) + 5 / T] as [number, number]), size: 1000 };
  const gold = off ? [] : [cands[r() < 0.7 ? 0 : 1].skill];
  return { id, golds: gold, accepted: gold, verdict: cands, glance: cands.map(({ skill, g, s }) => ({ skill, g, s })), lexical, ...(off ? { offDomain: true } : {}) };
}

export function synthSet(seed: number, nIn: number, nOff: number): { inDomain: AbstentionRecord[]; offDomain: AbstentionRecord[] } {
  const r = mulberry32(seed);
  const normal = gaussian(seed + 1);
  return {
    inDomain: Array.from({ length: nIn }, (_, i) => synthRecord(`in${seed}-${i}`, r, normal, false)),
    offDomain: Array.from({ length: nOff }, (_, i) => synthRecord(`off${seed}-${i}`, r, normal, true)),
  };
}


