/**
 * What the pseudo-query generators read of a skill's Markdown: its lines with their character
 * offsets, fenced code marked, sections under their headings, paragraphs of prose, sentences. Pure
 * functions of the text; every offset is a UTF-16 offset into the string given, so a query can say
 * which characters of its skill it copied (see {@link SourceSpan}).
 *
 * @module
 */

/** Where a query's text was taken from: characters [start, end) of the skill's description or body. */
export interface SourceSpan {
  field: "description" | "body";
  start: number;
  end: number;
}

/** One line of a text: [start, end) excludes the line break. */
export interface Line {
  text: string;
  start: number;
  end: number;
  /** Inside a ``` or ~~~ fence (the fence lines included). */
  code: boolean;
}

/** A heading and the lines up to the next heading of any level. */
export interface Section {
  /** Heading text without the #s ("" for the lines before the first heading). */
  heading: string;
  /** 1–6; 0 for the lines before the first heading. */
  level: number;
  /** The heading line (undefined for level 0). */
  headingLine?: Line;
  /** The lines after the heading, up to the next heading. */
  lines: Line[];
  /** The enclosing sections' headings (a lower level each), outermost first. */
  parents: { heading: string; level: number; line: Line }[];
}

const FENCE = /^\s{0,3}(```|~~~)/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$/;

/** The lines of `text`, with offsets and whether each lies in a fenced code block. */
export function splitLines(text: string): Line[] {
  const out: Line[] = [];
  let inCode = false;
  let start = 0;
  while (start <= text.length) {
    let end = text.indexOf("\n", start);
    if (end < 0) end = text.length;
    const raw = text.slice(start, end);
    const lineText = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    const fence = FENCE.test(lineText);
    out.push({ text: lineText, start, end: start + lineText.length, code: inCode || fence });
    if (fence) inCode = !inCode;
    if (end === text.length) break;
    start = end + 1;
  }
  return out;
}

/** A Markdown heading's level and text, or undefined (never inside code). */
export function headingOf(line: Line): { level: number; text: string } | undefined {
  if (line.code) return undefined;
  const m = HEADING.exec(line.text);
  return m ? { level: m[1].length, text: m[2].trim() } : undefined;
}

/** The sections of a Markdown body, in order (a leading level-0 section holds text before any heading). */
export function sections(text: string): Section[] {
  const out: Section[] = [{ heading: "", level: 0, lines: [], parents: [] }];
  const stack: Section["parents"] = [];
  for (const line of splitLines(text)) {
    const h = headingOf(line);
    if (h) {
      while (stack.length && stack[stack.length - 1].level >= h.level) stack.pop();
      out.push({ heading: h.text, level: h.level, headingLine: line, lines: [], parents: [...stack] });
      stack.push({ heading: h.text, level: h.level, line });
    } else out[out.length - 1].lines.push(line);
  }
  return out.filter((s) => s.level > 0 || s.lines.some((l) => l.text.trim() !== ""));
}

/** A line worth quoting: not blank, not code, not a table row or rule, not an image or HTML tag alone. */
export function isProse(line: Line): boolean {
  const t = line.text.trim();
  if (line.code || t === "") return false;
  if (t.startsWith("|") || /^[-*_=\s]{3,}$/.test(t) || /^!\[/.test(t) || /^<[^>]+>$/.test(t)) return false;
  return /[\p{L}]{2,}/u.test(t);
}

/** A bullet or numbered list item. */
export function isListItem(line: Line): boolean {
  return !line.code && /^\s*([-*+]|\d{1,3}[.)])\s+\S/.test(line.text);
}

/** Paragraphs: maximal runs of consecutive prose lines that are not list items. */
export function paragraphs(lines: readonly Line[]): Line[][] {
  const out: Line[][] = [];
  let cur: Line[] = [];
  for (const l of lines) {
    if (isProse(l) && !isListItem(l) && !headingOf(l)) cur.push(l);
    else {
      if (cur.length) out.push(cur);
      cur = [];
    }
  }
  if (cur.length) out.push(cur);
  return out;
}

/** The text of lines start…end of `source` (the original characters, line breaks included). */
export function spanText(source: string, lines: readonly Line[]): { text: string; start: number; end: number } {
  const start = lines[0].start;
  const end = lines[lines.length - 1].end;
  return { text: source.slice(start, end), start, end };
}

/**
 * Sentences of a text with offsets: split after . ! ? (and their CJK forms) followed by white space,
 * or at line breaks; each trimmed; those shorter than `minChars` dropped.
 */
export function sentenceSpans(text: string, minChars = 12): { text: string; start: number; end: number }[] {
  const out: { text: string; start: number; end: number }[] = [];
  const re = /(?<=[.!?])\s+|(?<=[。！？])|\n+/g;
  let start = 0;
  const push = (s: number, e: number) => {
    const raw = text.slice(s, e);
    const lead = raw.length - raw.trimStart().length;
    const t = raw.trim();
    if (t.length >= minChars) out.push({ text: t, start: s + lead, end: s + lead + t.length });
  };
  for (let m = re.exec(text); m; m = re.exec(text)) {
    if (m[0].length === 0 && m.index === start) {
      re.lastIndex++;
      continue;
    }
    push(start, m.index);
    start = m.index + m[0].length;
    if (m[0].length === 0) re.lastIndex = Math.max(re.lastIndex, start);
  }
  push(start, text.length);
  return out;
}

/** Lower-cased words (letters and digits), for overlap tests. */
export function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}
