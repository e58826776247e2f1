/**
 * Training pairs for `gavel train`: which task text is answered by which skills.
 *
 * - Labelled: a JSONL file of `{ "query": "...", "gold_skill_ids": ["id", ...] }` rows, ids (or names)
 *   resolved against the library.
 * - Self-supervised (a library alone): the query is a skill's description, or one sentence of it (a
 *   seeded choice per skill), and the positive is the skill rendered WITHOUT its description, so the
 *   query is never a verbatim piece of its positive's keys; every skill of the batch is rendered
 *   that way, so "has a description" cannot give the answer away. Negatives are drawn from the rest
 *   of the library at every step (trainer.ts).
 * - Pseudo-queries (a library alone, `--queries`): several kinds generated from each skill
 *   (queries/), each with the characters it copied, which the states pass masks out of the positive
 *   rendered as installed (docs/TRAINING.md).
 *
 * Exclusions: skills named by `exclude` (ids or names) never give a query; and when the caller passes
 * a task file (`--exclude-tasks`, e.g. ../shared/data/swe-skills-bench/tasks.jsonl), any pair whose
 * query text equals one of its task texts (after trimming), or shares a 12-word run with one
 * (queries/overlap.ts), is dropped, so benchmark tasks never leak into training; the skills all stay.
 * The task file is read only when given.
 *
 * @module
 */
import { invalidArgument, readJsonl, type RenderableSkill, Rng } from "gavel-router/internal";
import type { Skill } from "gavel-router";
import { mixQueries, type MixOptions, type QueryKind, type SourceSpan, type TaskOverlap } from "./queries/index.js";

/** A task text and its gold skills (indices into the library). */
export interface Pair {
  query: string;
  positives: number[];
  /** A pseudo-query's kind (queries mode). */
  kind?: QueryKind;
  /** Characters of its (single) positive the query copied: masked out of the positive's keys. */
  spans?: SourceSpan[];
}

/** Reads `{ query, gold_skill_ids }` JSONL rows and resolves the ids (then names) in `skills`. */
export async function readPairs(path: string, skills: readonly Skill[]): Promise<{ pairs: Pair[]; dropped: string[] }> {
  const rows = await readJsonl(path);
  const byId = new Map<string, number>();
  skills.forEach((s, i) => byId.set(s.id, i));
  skills.forEach((s, i) => byId.has(s.name) || byId.set(s.name, i));
  const pairs: Pair[] = [];
  const dropped: string[] = [];
  for (const { value, line } of rows) {
    const row = (value ?? {}) as { query?: unknown; gold_skill_ids?: unknown };
    if (typeof row.query !== "string" || row.query.trim() === "" || !Array.isArray(row.gold_skill_ids)) {
      throw invalidArgument(`${path}:${line}: expected { "query": string, "gold_skill_ids": string[] }`);
    }
    const pos = [...new Set(row.gold_skill_ids.map((id) => byId.get(String(id))).filter((i): i is number => i !== undefined))];
    if (pos.length === 0) dropped.push(`${path}:${line}: no gold skill is in the library`);
    else pairs.push({ query: row.query, positives: pos });
  }
  return { pairs, dropped };
}

/** Sentences of a description (split after . ! ? or a line break), each trimmed, empty ones dropped. */
function sentences(text: string): string[] {
  return text
    .split(/(?<=[.!?。！？])\s+|\n+/)
    .map((s) => s.trim())
    .filter((s) => s.length >= 12);
}

/** Self-supervised pairs: per skill with a description, query = the description or one of its sentences (seeded). */
export function selfSupervisedPairs(skills: readonly Skill[], seed: number): Pair[] {
  const rng = new Rng((seed ^ 0x85ebca6b) >>> 0);
  const out: Pair[] = [];
  skills.forEach((s, i) => {
    const d = s.description.trim();
    const r = rng.next();
    const r2 = rng.next(); // two draws per skill whatever happens, so one skill's text does not shift the others'
    if (d === "") return;
    const parts = sentences(d);
    const query = parts.length > 1 && r < 0.5 ? parts[Math.floor(r2 * parts.length)] : d;
    out.push({ query, positives: [i] });
  });
  return out;
}

/** The render a skill is keyed with: as installed, or without its description (self-supervised). */
export function trainingRender(skill: Skill, selfSupervised: boolean): RenderableSkill {
  return { name: skill.name, description: selfSupervised ? "" : skill.description, body: skill.body };
}

/** Task texts of a JSONL task file (`text`, `task`, `query` or `prompt` field), trimmed. */
export async function readTaskTexts(path: string): Promise<Set<string>> {
  const out = new Set<string>();
  for (const { value } of await readJsonl(path)) {
    const row = (value ?? {}) as Record<string, unknown>;
    for (const k of ["text", "task", "query", "prompt"]) if (typeof row[k] === "string") out.add((row[k] as string).trim());
  }
  return out;
}

/**
 * Pseudo-query pairs (queries mode): per skill, {@link mixQueries}' picks, each with its skill as the
 * one positive and the characters it copied (see docs/TRAINING.md).
 */
export function queryPairs(skills: readonly Skill[], o: MixOptions): Pair[] {
  const out: Pair[] = [];
  skills.forEach((s, i) => {
    for (const q of mixQueries(s, o)) out.push({ query: q.text, positives: [i], kind: q.kind, spans: q.spans });
  });
  return out;
}

/**
 * Drops pairs whose query comes from, or whose gold includes, an excluded skill (by id or name), or
 * that equals a task text, or (with `overlap`) shares a long run of words with one. Only queries are
 * screened: no skill leaves the library. Returns the kept pairs and how many were dropped for each reason.
 */
export function excludePairs(
  pairs: readonly Pair[],
  skills: readonly Skill[],
  opts: { exclude?: readonly string[]; taskTexts?: ReadonlySet<string>; overlap?: TaskOverlap },
): { pairs: Pair[]; excludedSkills: number; excludedTasks: number } {
  const ex = new Set(opts.exclude ?? []);
  let excludedSkills = 0;
  let excludedTasks = 0;
  const kept = pairs.filter((p) => {
    if (p.positives.some((i) => ex.has(skills[i].id) || ex.has(skills[i].name))) {
      excludedSkills++;
      return false;
    }
    if (opts.taskTexts?.has(p.query.trim()) || opts.overlap?.overlaps(p.query)) {
      excludedTasks++;
      return false;
    }
    return true;
  });
  return { pairs: kept, excludedSkills, excludedTasks };
}

/**
 * A seeded validation split: `fraction` of the pairs (at least one when there are ≥ 2 and fraction > 0).
 * With `groupOf`, whole groups go one way (e.g. every pseudo-query of one skill), `fraction` of the groups.
 */
export function splitValidation<T>(items: readonly T[], fraction: number, seed: number, groupOf?: (item: T) => number): { train: T[]; val: T[] } {
  if (!(fraction >= 0 && fraction < 1)) throw invalidArgument(`validation fraction must be in [0, 1), got ${fraction}`);
  if (groupOf) {
    const groups = [...new Set(items.map(groupOf))].sort((a, b) => a - b);
    const { val } = splitValidation(groups, fraction, seed);
    const inVal = new Set(val);
    return { train: items.filter((x) => !inVal.has(groupOf(x))), val: items.filter((x) => inVal.has(groupOf(x))) };
  }
  const idx = items.map((_, i) => i);
  const rng = new Rng((seed ^ 0xc2b2ae35) >>> 0);
  for (let i = idx.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [idx[i], idx[j]] = [idx[j], idx[i]];
  }
  let nVal = Math.round(items.length * fraction);
  if (fraction > 0 && nVal === 0 && items.length >= 2) nVal = 1;
  const valSet = new Set(idx.slice(0, nVal));
  return { train: items.filter((_, i) => !valSet.has(i)), val: items.filter((_, i) => valSet.has(i)) };
}
