/**
 * Pseudo-query generators (training queries at scale with no labelled queries). Each is a
 * pure function of a skill and a seeded {@link Rng}: it yields zero or more candidate queries, each
 * with its kind and the characters of the skill it copied ({@link SourceSpan}), so that training can
 * take those characters' tokens out of the positive's keys (the inverse-cloze setting: a query is never
 * a verbatim piece of the keys it is trained to find). docs/TRAINING.md shows one of each.
 *
 * - `description`: the description, and one sentence of it when it has several;
 * - `cloze`: a paragraph (1–4 lines of prose) of the body;
 * - `triggers`: "Use when…" sentences of the description, "When to use" / "Triggers" sections of
 *   the body, "Use this skill when…" lines, and a `when_to_use` front-matter key;
 * - `headings`: a section's heading and its first lines;
 * - `composite`: a long task-like specification (title, background, requirements under headings,
 *   acceptance criteria) assembled from several sections, in the shape of a written task.
 *
 * @module
 */
import type { Rng } from "gavel-router/internal";
import { isListItem, isProse, paragraphs, sections, sentenceSpans, spanText, type Line, type Section, type SourceSpan } from "./text.js";

/** The kinds of pseudo-query, in the order of the generators. */
export const QUERY_KINDS = ["description", "cloze", "triggers", "headings", "composite"] as const;
/** One kind of pseudo-query. */
export type QueryKind = (typeof QUERY_KINDS)[number];

/** What the generators read of a skill. */
export interface QuerySkill {
  name: string;
  description: string;
  body: string;
  meta?: Record<string, unknown>;
}

/** One pseudo-query: its text, its kind, and the skill characters it copied. */
export interface PseudoQuery {
  kind: QueryKind;
  text: string;
  /** Characters of the skill the text copies (their tokens leave the positive's keys). */
  spans: SourceSpan[];
}

/** A generator: a pure function of the skill and the PRNG. */
export type QueryGenerator = (skill: QuerySkill, rng: Rng) => PseudoQuery[];

/** Passages further into the body than this are not quoted (a long body is cut at the skill budget). */
export const MAX_BODY_OFFSET = 12_000;
const MIN_QUERY_CHARS = 24;

/** Up to `n` distinct items of `items`, drawn uniformly, in their original order. */
export function pick<T>(items: readonly T[], n: number, rng: Rng): T[] {
  const idx = items.map((_, i) => i);
  const k = Math.min(n, idx.length);
  for (let i = 0; i < k; i++) {
    const j = i + rng.int(idx.length - i);
    [idx[i], idx[j]] = [idx[j], idx[i]];
  }
  return idx.slice(0, k).sort((a, b) => a - b).map((i) => items[i]);
}

/** The description; and, when it has several sentences, one of them. */
export const descriptionQueries: QueryGenerator = (skill, rng) => {
  const d = skill.description;
  const t = d.trim();
  if (t.length < MIN_QUERY_CHARS) return [];
  const whole: SourceSpan = { field: "description", start: 0, end: d.length };
  const out: PseudoQuery[] = [{ kind: "description", text: t, spans: [whole] }];
  const parts = sentenceSpans(d, MIN_QUERY_CHARS);
  // The whole description is masked even for one sentence: its other sentences paraphrase it.
  if (parts.length > 1) out.push({ kind: "description", text: parts[rng.int(parts.length)].text, spans: [whole] });
  return out;
};

/** Paragraphs of prose in the body's first {@link MAX_BODY_OFFSET} characters, 1–4 lines, 60–800 characters. */
function clozePassages(body: string): { text: string; start: number; end: number }[] {
  const out: { text: string; start: number; end: number }[] = [];
  for (const s of sections(body)) {
    for (const para of paragraphs(s.lines)) {
      const p = spanText(body, para.slice(0, 4));
      if (p.start > MAX_BODY_OFFSET || p.text.length < 60) continue;
      if (p.text.length > 800) {
        const cut = body.lastIndexOf(" ", p.start + 800);
        if (cut <= p.start + 60) continue;
        out.push({ text: body.slice(p.start, cut), start: p.start, end: cut });
      } else out.push(p);
    }
  }
  return out;
}

/** Inverse cloze: up to two paragraphs of the body, each a query whose own characters leave the positive. */
export const clozeQueries: QueryGenerator = (skill, rng) =>
  pick(clozePassages(skill.body), 2, rng).map((p) => ({ kind: "cloze", text: p.text, spans: [{ field: "body", start: p.start, end: p.end }] }));

const TRIGGER_HEADING = /when\s+to\s+(use|apply|invoke|activate)|when\s+(should|this\s+skill)|use\s+cases?|triggers?|activation|适用场景|使用场景|何时使用|触发/i;
const TRIGGER_LINE = /^\s*([-*+]\s+)?(\*\*)?(use\s+(this\s+skill\s+)?(when|whenever|for|if)\b|triggers?\s*(phrases?)?\s*:|activate\s+when|invoke\s+when)/i;
const TRIGGER_SENTENCE = /\b(use|used|invoke|trigger(ed)?|activate)\s+(this\s+skill\s+|it\s+)?(when|whenever|if|for)\b|\bwhen\s+(the\s+)?user\b/i;

/** A trigger section's lines as one query (its prose and list lines, at most 600 characters). */
function sectionQuery(body: string, s: Section): PseudoQuery | undefined {
  const lines: Line[] = [];
  let chars = 0;
  for (const l of s.lines) {
    if (l.start > MAX_BODY_OFFSET) break;
    if (!isProse(l)) continue;
    if (chars + l.text.length > 600 && lines.length > 0) break;
    lines.push(l);
    chars += l.text.length + 1;
  }
  if (lines.length === 0) return undefined;
  const text = lines.map((l) => l.text.trim()).join("\n");
  if (text.length < MIN_QUERY_CHARS) return undefined;
  return { kind: "triggers", text, spans: lines.map((l) => ({ field: "body", start: l.start, end: l.end })) };
}

/** "When to use" material: trigger sentences of the description, trigger sections and lines of the body, `when_to_use`. */
export const triggerQueries: QueryGenerator = (skill) => {
  const out: PseudoQuery[] = [];
  const w = skill.meta?.when_to_use;
  const whenToUse = typeof w === "string" ? w.trim() : "";
  // a loaded skill's description ends with its when_to_use (as Claude Code lists the two): one query, masked there
  const whenAt = whenToUse.length >= MIN_QUERY_CHARS ? skill.description.lastIndexOf(whenToUse) : -1;
  for (const s of sentenceSpans(skill.description, MIN_QUERY_CHARS)) {
    if (whenAt >= 0 && s.start >= whenAt) continue;
    if (TRIGGER_SENTENCE.test(s.text)) out.push({ kind: "triggers", text: s.text, spans: [{ field: "description", start: s.start, end: s.end }] });
  }
  const inSection = new Set<number>();
  for (const s of sections(skill.body)) {
    if (s.level === 0 || !TRIGGER_HEADING.test(s.heading)) continue;
    const q = sectionQuery(skill.body, s);
    if (q) out.push(q);
    s.lines.forEach((l) => inSection.add(l.start));
  }
  for (const s of sections(skill.body)) {
    for (const l of s.lines) {
      if (l.start > MAX_BODY_OFFSET || inSection.has(l.start) || l.code || !TRIGGER_LINE.test(l.text)) continue;
      const text = l.text.trim().replace(/^[-*+]\s+/, "");
      if (text.length >= MIN_QUERY_CHARS) out.push({ kind: "triggers", text, spans: [{ field: "body", start: l.start, end: l.end }] });
    }
  }
  if (whenToUse.length >= MIN_QUERY_CHARS) {
    const spans = whenAt >= 0 ? [{ field: "description" as const, start: whenAt, end: whenAt + whenToUse.length }] : [];
    out.push({ kind: "triggers", text: whenToUse, spans });
  }
  return out;
};

/** A section's first `n` prose lines (list items included), within the first {@link MAX_BODY_OFFSET} characters. */
function firstLines(s: Section, n: number): Line[] {
  return s.lines.filter((l) => isProse(l) && l.start <= MAX_BODY_OFFSET).slice(0, n);
}

/** Sections with a heading (level ≥ 2, or a lone H1 with content) and some prose under it. */
function quotableSections(body: string): Section[] {
  return sections(body).filter((s) => s.level >= 1 && s.headingLine!.start <= MAX_BODY_OFFSET && firstLines(s, 1).length > 0);
}

/**
 * A section's heading as a query quotes it: qualified by its enclosing headings below the title
 * ("Phase 3: Developer Guide — Actions"), with the heading lines quoted as spans.
 */
function qualifiedHeading(s: Section, spans: SourceSpan[]): string {
  const outer = s.parents.filter((p) => p.level >= 2);
  for (const l of [...outer.map((p) => p.line), s.headingLine!]) spans.push({ field: "body", start: l.start, end: l.end });
  return [...outer.map((p) => p.heading), s.heading].join(" — ");
}

/** A (qualified) heading and the first one to three lines of its section; up to two sections per skill. */
export const headingQueries: QueryGenerator = (skill, rng) => {
  const out: PseudoQuery[] = [];
  for (const s of pick(quotableSections(skill.body), 2, rng)) {
    const spans: SourceSpan[] = [];
    const head = qualifiedHeading(s, spans);
    const lines = firstLines(s, 1 + rng.int(3));
    const text = `${head}\n${lines.map((l) => l.text.trim()).join("\n")}`;
    if (text.length < MIN_QUERY_CHARS) continue;
    out.push({ kind: "headings", text, spans: [...spans, ...lines.map((l): SourceSpan => ({ field: "body", start: l.start, end: l.end }))] });
  }
  return out;
};

/** A list item as an acceptance criterion: its marker (and a task box) dropped. */
const criterion = (t: string) => t.replace(/^([-*+]|\d{1,3}[.)])\s+(\[[ xX]\]\s+)?/, "");

/**
 * A long, task-like composite in the written tasks' shape ("# Task: …", "## Background",
 * "## Requirements" with "### …" subsections, "## Acceptance Criteria"): the title from the body's
 * H1 (else the first chosen heading), the background from the body's first paragraph of prose, then
 * 4–6 sections (in document order; all when fewer) under their qualified headings with up to six lines
 * each, and up to six distinct list items of other sections as acceptance criteria. Needs at least
 * three quotable sections below the title.
 */
export const compositeQueries: QueryGenerator = (skill, rng) => {
  const body = skill.body;
  const all = sections(body);
  const subs = quotableSections(body).filter((s) => s.level >= 2);
  if (subs.length < 3) return [];
  const chosen = pick(subs, 4 + rng.int(3), rng);
  const spans: SourceSpan[] = [];
  const quote = (l: Line) => {
    spans.push({ field: "body", start: l.start, end: l.end });
    return l.text.trim();
  };
  const h1 = all.find((s) => s.level === 1 && s.headingLine!.start <= MAX_BODY_OFFSET);
  const parts = [`# Task: ${h1 ? quote(h1.headingLine!).replace(/^#+\s*/, "") : chosen[0].heading}`];
  const intro = all.filter((s) => !chosen.includes(s)).map((s) => paragraphs(s.lines)[0]).find((p) => p && p[0].start <= MAX_BODY_OFFSET);
  if (intro) parts.push("## Background", intro.slice(0, 3).map(quote).join("\n"));
  parts.push("## Requirements");
  for (const s of chosen) parts.push(`### ${qualifiedHeading(s, spans)}`, firstLines(s, 6).map(quote).join("\n"));
  const seen = new Set<string>();
  const rest = subs
    .filter((s) => !chosen.includes(s))
    .flatMap((s) => s.lines.filter((l) => isListItem(l) && isProse(l) && l.start <= MAX_BODY_OFFSET))
    .filter((l) => !seen.has(l.text.trim()) && !!seen.add(l.text.trim()));
  const criteria = pick(rest, 6, rng);
  if (criteria.length) parts.push("## Acceptance Criteria", criteria.map((l) => `* ${criterion(quote(l))}`).join("\n"));
  return [{ kind: "composite", text: parts.join("\n\n"), spans }];
};

/** The generator of each kind. */
export const GENERATORS: Readonly<Record<QueryKind, QueryGenerator>> = Object.freeze({
  description: descriptionQueries,
  cloze: clozeQueries,
  triggers: triggerQueries,
  headings: headingQueries,
  composite: compositeQueries,
});
