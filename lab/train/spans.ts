/**
 * Which rows of a skill's keyed states a pseudo-query copied: its {@link SourceSpan}s (characters of
 * the description or body) mapped to token rows of the keyed span "name: …\ndescription: …\n\n{body}"
 * of r(s), as the states pass encodes it (render/encode.ts). The trainer leaves those rows out of the
 * positive for that query (TrainingExample.mask): the inverse-cloze positive without a second forward
 * pass (docs/TRAINING.md says what this approximation keeps and loses).
 *
 * A character offset c maps to the number of tokens of the content (from SKILL_INTRO on) that lie
 * wholly before c: the common prefix of the content's tokens with the tokens of the content's text
 * up to c. A range's start is rounded down and its end up, so a token straddling an edge is masked.
 *
 * @module
 */
import { type RenderableSkill, type RenderEncoder, SKILL_INTRO } from "gavel-router/internal";
import { renderSkill } from "gavel-router";
import type { SourceSpan } from "./queries/index.js";

function commonPrefix(a: Int32Array, b: Int32Array): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/** Sorted, merged character ranges (gaps of up to `slack` characters, e.g. a line break, are bridged). */
export function mergeRanges(ranges: readonly [number, number][], slack = 2): [number, number][] {
  const sorted = ranges.filter(([a, b]) => b > a).sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  const out: [number, number][] = [];
  for (const [a, b] of sorted) {
    const last = out[out.length - 1];
    if (last && a <= last[1] + slack) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out;
}

/**
 * Maps each query's source spans to row ranges of the skill's keyed states, flat [start, end, …]
 * pairs, merged, clamped to `rows` (the rows the states pass kept: a body cut at the skill budget
 * keeps fewer). Queries with no span get an empty list.
 *
 * @param encoder - the encoder of the states pass (its model tokenizes; its template renders)
 * @param skill - the skill as the states pass rendered it
 * @param spansPerQuery - each query's {@link SourceSpan}s
 * @param rows - rows of the skill's keyed states
 */
export async function spanRows(encoder: RenderEncoder, skill: RenderableSkill, spansPerQuery: readonly (readonly SourceSpan[])[], rows: number): Promise<number[][]> {
  if (spansPerQuery.every((s) => s.length === 0)) return spansPerQuery.map(() => []);
  const r = renderSkill(encoder.template, skill);
  const contentStart = r.spans.header.start - SKILL_INTRO.length;
  const descStart = r.spans.header.start + `name: ${skill.name}\ndescription: `.length;
  const base = (f: SourceSpan["field"]) => (f === "description" ? descStart : r.spans.body.start);
  const tokenize = (text: string) => encoder.model.tokenizeAsync(text, { special: false, addBos: false });
  const content = await tokenize(r.text.slice(contentStart, r.spans.keyed.end));
  const intro = commonPrefix(await tokenize(SKILL_INTRO), content);
  const tokenAt = new Map<number, { before: number; straddles: boolean }>();
  const at = async (c: number) => {
    let v = tokenAt.get(c);
    if (!v) {
      const t = await tokenize(r.text.slice(contentStart, c));
      const before = commonPrefix(t, content);
      v = { before, straddles: t.length > before };
      tokenAt.set(c, v);
    }
    return v;
  };
  const out: number[][] = [];
  for (const spans of spansPerQuery) {
    const merged = mergeRanges(spans.map((s): [number, number] => [base(s.field) + s.start, base(s.field) + s.end]));
    const flat: number[] = [];
    for (const [a, b] of merged) {
      const start = (await at(a)).before - intro;
      const e = await at(b);
      const end = Math.min(rows, e.before + (e.straddles ? 1 : 0) - intro);
      if (end > start && start < rows) flat.push(Math.max(0, start), end);
    }
    out.push(flat);
  }
  return out;
}
