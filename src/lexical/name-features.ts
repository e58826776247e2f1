/**
 * Cheap per-candidate features of a task and one skill for the learned re-ranking of the first
 * stage's leaders (src/route/rerank.ts applies it; scripts/select/rerank.ts fits it): what a route
 * computes on the CPU for each leader. Pure functions over the shipped tokenizer (bm25Tokens); the
 * BM25 scores themselves come from the bank's lexicon.
 */
import { bm25Tokens } from "./bm25.js";

/** What the text features read of a task, computed once per task. */
export interface TaskText {
  lower: string;
  tokens: Set<string>;
  bigrams: Set<string>;
  /**
   * Tokens of the first non-empty line when more lines follow (a statement's title); empty for a
   * one-line request, which has no title apart from itself, so that a name's words in it are not
   * counted twice (once as in the task, once as in its title).
   */
  title: Set<string>;
}

export function taskText(text: string): TaskText {
  const toks = bm25Tokens(text);
  const lines = text.split("\n").filter((l) => l.trim().length > 0);
  const title = lines.length > 1 ? new Set(bm25Tokens(lines[0])) : new Set<string>();
  return { lower: text.toLowerCase(), tokens: new Set(toks), bigrams: bigrams(toks), title };
}

export function bigrams(toks: readonly string[]): Set<string> {
  const out = new Set<string>();
  for (let i = 0; i + 1 < toks.length; i++) out.add(`${toks[i]} ${toks[i + 1]}`);
  return out;
}

/** The skill's short name: the last segment of its id (a slug such as `add-admin-api-endpoint`). */
export function slugOf(id: string): string {
  const seg = id.split(/[/:]/).filter(Boolean);
  return (seg[seg.length - 1] ?? id).toLowerCase();
}

/** Name tokens: the front-matter name's and the id slug's, distinct. */
export function nameTokens(skill: { id: string; name: string }): string[] {
  return [...new Set([...bm25Tokens(skill.name), ...bm25Tokens(slugOf(skill.id))])];
}

/**
 * Whether the skill's name appears verbatim in the task: the slug, or the name with its spaces,
 * hyphens and underscores read as any one of them (`add-admin-api-endpoint`, `add_admin_api_endpoint`,
 * `add admin api endpoint`). Names of fewer than 4 characters do not count.
 */
export function nameVerbatim(skill: { id: string; name: string }, task: TaskText): number {
  const forms = new Set<string>();
  for (const n of [slugOf(skill.id), skill.name.toLowerCase().trim()]) {
    if (n.length < 4) continue;
    const parts = n.split(/[\s_-]+/).filter(Boolean);
    for (const sep of ["-", "_", " "]) forms.add(parts.join(sep));
  }
  for (const f of forms) if (f.length >= 4 && task.lower.includes(f)) return 1;
  return 0;
}

/** Share of `toks` (distinct) found in `set`; 0 for none. */
export function share(toks: readonly string[], set: ReadonlySet<string>): number {
  if (toks.length === 0) return 0;
  let n = 0;
  for (const t of toks) if (set.has(t)) n++;
  return n / toks.length;
}

/** idf-weighted share of `toks` (distinct) found in `set`. */
export function idfShare(toks: Iterable<string>, set: ReadonlySet<string>, idf: (t: string) => number): number {
  let num = 0, den = 0;
  for (const t of new Set(toks)) {
    const w = idf(t);
    den += w;
    if (set.has(t)) num += w;
  }
  return den > 0 ? num / den : 0;
}

/** Share of the skill description's distinct bigrams found among the task's. */
export function bigramShare(descTokens: readonly string[], task: TaskText): number {
  const b = bigrams(descTokens);
  if (b.size === 0) return 0;
  let n = 0;
  for (const x of b) if (task.bigrams.has(x)) n++;
  return n / b.size;
}

/** Share of the skill name's consecutive token pairs found as bigrams of the task (1 for a one-word name found in it). */
export function nameBigramShare(skill: { id: string; name: string }, task: TaskText): number {
  let best = 0;
  for (const n of [slugOf(skill.id), skill.name]) {
    const toks = bm25Tokens(n);
    if (toks.length === 0) continue;
    if (toks.length === 1) { best = Math.max(best, task.tokens.has(toks[0]) ? 1 : 0); continue; }
    best = Math.max(best, share([...bigrams(toks)], task.bigrams));
  }
  return best;
}
