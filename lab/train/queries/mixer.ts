/**
 * The mixer: per skill, every enabled generator's candidates, then `perSkill` of them drawn by kind
 * with stated proportions (a kind with no candidate for this skill gives its share to the others).
 * Each (skill, kind) draws from its own PRNG seeded by a hash of the seed, the skill's id and the
 * kind, so a skill's queries depend on nothing but the skill, the seed and the options: not on its
 * place in the library, nor on which other kinds are enabled.
 *
 * @module
 */
import { invalidArgument, Rng } from "gavel-router/internal";
import { GENERATORS, QUERY_KINDS, type PseudoQuery, type QueryKind, type QuerySkill } from "./generators.js";

/** Default proportions of the kinds (docs/TRAINING.md says why). */
export const DEFAULT_MIX: Readonly<Record<QueryKind, number>> = Object.freeze({
  description: 0.25,
  cloze: 0.25,
  triggers: 0.15,
  headings: 0.15,
  composite: 0.2,
});

/** Options of {@link mixQueries}. */
export interface MixOptions {
  /** Kinds enabled (default all). */
  kinds?: readonly QueryKind[];
  /** Relative weights of the kinds (default {@link DEFAULT_MIX}); only the enabled kinds' count. */
  weights?: Partial<Record<QueryKind, number>>;
  /** Queries per skill (default 2); fewer when the skill gives fewer candidates. */
  perSkill?: number;
  seed?: number;
}

/** 32-bit FNV-1a of a string (seeds the per-skill, per-kind streams). */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * Parses a comma-separated list of kinds ("description,cloze,…" or "all").
 * @throws GavelError `INVALID_ARGUMENT` for an unknown kind or an empty list.
 */
export function parseQueryKinds(list: string): QueryKind[] {
  const items = list.split(",").map((s) => s.trim()).filter((s) => s !== "");
  if (items.length === 1 && items[0] === "all") return [...QUERY_KINDS];
  checkQueryKinds(items, ", or all");
  if (items.length === 0) throw invalidArgument("no query kind given");
  return [...new Set(items)] as QueryKind[];
}

/**
 * `kinds` checked: an array of {@link QUERY_KINDS} (`more` adds to the message's list of them).
 * @throws GavelError `INVALID_ARGUMENT` naming the first unknown kind.
 */
export function checkQueryKinds(kinds: unknown, more = ""): asserts kinds is QueryKind[] {
  if (!Array.isArray(kinds)) throw invalidArgument(`queries must be an array of query kinds (${QUERY_KINDS.join(", ")})`);
  for (const k of kinds) if (!(QUERY_KINDS as readonly unknown[]).includes(k)) throw invalidArgument(`unknown query kind ${JSON.stringify(k)} (kinds: ${QUERY_KINDS.join(", ")}${more})`);
}

/** Every candidate query of one skill, by kind (enabled kinds only). */
export function candidateQueries(skill: QuerySkill & { id?: string }, kinds: readonly QueryKind[], seed: number): Map<QueryKind, PseudoQuery[]> {
  const out = new Map<QueryKind, PseudoQuery[]>();
  const id = skill.id ?? skill.name;
  for (const kind of kinds) {
    const list = GENERATORS[kind](skill, new Rng(hash32(`${seed}\u0000${id}\u0000${kind}`)));
    if (list.length) out.set(kind, list);
  }
  return out;
}

/** `perSkill` queries of one skill, kinds drawn by weight without replacement of candidates (see the module comment). */
export function mixQueries(skill: QuerySkill & { id?: string }, o: MixOptions = {}): PseudoQuery[] {
  const kinds = o.kinds ?? QUERY_KINDS;
  const weights = { ...DEFAULT_MIX, ...o.weights };
  const perSkill = o.perSkill ?? 2;
  if (!Number.isInteger(perSkill) || perSkill < 1) throw invalidArgument(`perSkill must be a positive integer, got ${perSkill}`);
  const seed = o.seed ?? 0;
  const cands = candidateQueries(skill, kinds, seed);
  const rng = new Rng(hash32(`${seed}\u0000${skill.id ?? skill.name}\u0000mix`));
  const out: PseudoQuery[] = [];
  const seen = new Set<string>();
  while (out.length < perSkill) {
    const live = kinds.filter((k) => (cands.get(k)?.length ?? 0) > 0 && (weights[k] ?? 0) > 0);
    if (live.length === 0) break;
    const total = live.reduce((t, k) => t + weights[k], 0);
    let r = rng.next() * total;
    let kind = live[live.length - 1];
    for (const k of live) {
      r -= weights[k];
      if (r < 0) {
        kind = k;
        break;
      }
    }
    const list = cands.get(kind)!;
    const [q] = list.splice(rng.int(list.length), 1);
    if (seen.has(q.text)) continue;
    seen.add(q.text);
    out.push(q);
  }
  return out;
}
