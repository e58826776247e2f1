/**
 * The front matter's YAML, read as tolerant hosts read it. The commonest errors in real SKILL.md files
 * are plain values holding a YAML indicator: an unquoted ": " (`description: Use when: the user
 * asks`), which YAML reads as a nested map, and Markdown bold at the start (`description: **PDF**
 * tools`), which YAML reads as an alias to an anchor that does not exist. Claude Code accepts such a
 * file: when its parse fails, it puts those values in double quotes and parses again (Codex and other
 * strict readers skip the skill). So does this module, with limits that keep a repair from changing
 * what a valid line means: only a top-level `key: value` line is quoted, only when it is not valid
 * YAML on its own or holds an alias the document cannot resolve, and the repair is kept only when the
 * whole front matter then parses. Each repaired line is reported, so the caller can warn that strict
 * hosts will not read the file.
 *
 * A `#` after a space or tab in an unquoted value starts a YAML comment (`description: tips #1 for
 * agents` is "tips"): hosts parse the front matter as YAML and read it so, and so does the router.
 * Where that cuts `name`, `description` or `when_to_use`, the cut is reported for a warning, so that
 * an author learns why the text is short.
 *
 * @module
 */
import { isAlias, isMap, isScalar, LineCounter, parseDocument, visit, type Document } from "yaml";

/** The parser's options: YAML 1.2 core; unique keys are checked by parse.ts's linear pass. */
const YAML_OPTIONS = { uniqueKeys: false, prettyErrors: false } as const;

/** A top-level `key: value` line (no indentation, a bare key, a value on the line). */
const TOP_LEVEL_PAIR = /^([A-Za-z0-9_][A-Za-z0-9_.-]*):[ \t]+(\S(?:.*\S)?)[ \t]*$/;
/** A value that may break YAML: an indicator character anywhere, or ": " / a final ":". */
const INDICATOR = /[{}[\]*&#!|>%@`'"]|:(?:[ \t]|$)/;
/**
 * Most lines checked on their own (a parse each). A hand-written front matter has a dozen keys; a file
 * with more suspect lines is not the common slip this repair is for.
 */
const MAX_CHECKED_LINES = 64;

/** The parsed front matter, and the lines that were quoted to make it parse (none when it was valid YAML). */
export interface FrontMatterYaml {
  doc: Document;
  lineCounter: LineCounter;
  /** Each repaired line: its index in the front matter (0-based) and its key. */
  repaired: { line: number; key: string }[];
  /** Each of {@link COMMENT_CUT_KEYS} whose plain value a comment cut: see {@link CommentCut}. */
  commentCuts: CommentCut[];
}

/** The keys whose text the router reads, where a comment that cuts a value is reported. */
export const COMMENT_CUT_KEYS: readonly string[] = ["name", "description", "when_to_use"];

/** A top-level plain value followed on its line by a comment: what YAML keeps, and the comment. */
export interface CommentCut {
  /** The comment's line in the front matter (0-based). */
  line: number;
  key: string;
  /** The value as read (empty when the comment follows the key at once). */
  kept: string;
  /** The comment, from its `#` to the end of its line. */
  comment: string;
}

/**
 * Parses the front matter; when that fails (an error, or an alias to no anchor), quotes the values
 * that break it and parses again. Returns the first parse when the repair does not give valid YAML.
 */
export function parseFrontMatterYaml(yaml: string): FrontMatterYaml {
  const lineCounter = new LineCounter();
  const doc = parseDocument(yaml, { lineCounter, ...YAML_OPTIONS });
  const aliasLines = unresolvedAliasLines(doc, lineCounter);
  const first = () => ({ doc, lineCounter, repaired: [], commentCuts: commentCuts(doc, yaml, lineCounter) });
  if (doc.errors.length === 0 && aliasLines.size === 0) return first();
  const { text, repaired } = quoteBrokenValues(yaml, aliasLines);
  if (repaired.length === 0) return first();
  const retryCounter = new LineCounter();
  const retry = parseDocument(text, { lineCounter: retryCounter, ...YAML_OPTIONS });
  if (retry.errors.length > 0 || unresolvedAliasLines(retry, retryCounter).size > 0) return first();
  return { doc: retry, lineCounter: retryCounter, repaired, commentCuts: commentCuts(retry, text, retryCounter) };
}

/**
 * The values of {@link COMMENT_CUT_KEYS} at the top level that are plain (unquoted, not a block
 * scalar) or empty and end where a comment starts on the same line: the text between the value's
 * end and its node's end (`text`, the YAML `doc` was parsed from) opens with blanks and a `#`.
 */
function commentCuts(doc: Document, text: string, lineCounter: LineCounter): CommentCut[] {
  const cuts: CommentCut[] = [];
  if (!isMap(doc.contents)) return cuts;
  for (const item of doc.contents.items) {
    const key = isScalar(item.key) ? item.key.value : undefined;
    const value = item.value;
    if (typeof key !== "string" || !COMMENT_CUT_KEYS.includes(key) || !isScalar(value) || value.type !== "PLAIN" || !value.range) continue;
    const [, end, nodeEnd] = value.range;
    const hash = /^[ \t]*#/.exec(text.slice(end, nodeEnd));
    if (!hash) continue;
    const at = end + hash[0].length - 1;
    const eol = text.indexOf("\n", at);
    cuts.push({ line: lineCounter.linePos(at).line - 1, key, kept: value.value === null ? "" : String(value.value), comment: text.slice(at, eol === -1 ? text.length : eol) });
  }
  return cuts;
}

/** The lines (0-based) of aliases whose anchor the document does not have. */
function unresolvedAliasLines(doc: Document, lineCounter: LineCounter): Set<number> {
  const lines = new Set<number>();
  visit(doc, {
    Alias(_, node) {
      if (isAlias(node) && node.resolve(doc) === undefined && node.range) lines.add(lineCounter.linePos(node.range[0]).line - 1);
    },
  });
  return lines;
}

/**
 * Puts in double quotes (`\` and `"` escaped) the value of each top-level `key: value` line that holds
 * an unresolved alias (`aliasLines`) or is not valid YAML on its own; the line count is unchanged, so
 * positions still point into the file.
 */
function quoteBrokenValues(yaml: string, aliasLines: ReadonlySet<number>): { text: string; repaired: { line: number; key: string }[] } {
  const lines = yaml.split("\n");
  const repaired: { line: number; key: string }[] = [];
  let checked = 0;
  for (let i = 0; i < lines.length && checked < MAX_CHECKED_LINES; i++) {
    const m = TOP_LEVEL_PAIR.exec(lines[i]);
    if (!m || !INDICATOR.test(m[2])) continue;
    if (!aliasLines.has(i)) {
      checked++;
      if (parseDocument(lines[i], YAML_OPTIONS).errors.length === 0) continue;
    }
    const [, key, value] = m;
    lines[i] = `${key}: "${value.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
    repaired.push({ line: i, key });
  }
  return { text: lines.join("\n"), repaired };
}

/** The source text of a top-level `name` or `description` that YAML read as a number (`007` → 7, `1.10` → 1.1). */
export function numberSources(doc: Document): { name?: string; description?: string } {
  const out: { name?: string; description?: string } = {};
  if (!isMap(doc.contents)) return out;
  for (const item of doc.contents.items) {
    const key = isScalar(item.key) ? item.key.value : undefined;
    if ((key === "name" || key === "description") && isScalar(item.value) && typeof item.value.value === "number" && typeof item.value.source === "string") {
      out[key] = item.value.source;
    }
  }
  return out;
}
