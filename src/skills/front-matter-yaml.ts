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
 * @module
 */
import { isAlias, LineCounter, parseDocument, visit, type Document } from "yaml";

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
}

/**
 * Parses the front matter; when that fails (an error, or an alias to no anchor), quotes the values
 * that break it and parses again. Returns the first parse when the repair does not give valid YAML.
 */
export function parseFrontMatterYaml(yaml: string): FrontMatterYaml {
  const lineCounter = new LineCounter();
  const doc = parseDocument(yaml, { lineCounter, ...YAML_OPTIONS });
  const aliasLines = unresolvedAliasLines(doc, lineCounter);
  const first = { doc, lineCounter, repaired: [] };
  if (doc.errors.length === 0 && aliasLines.size === 0) return first;
  const { text, repaired } = quoteBrokenValues(yaml, aliasLines);
  if (repaired.length === 0) return first;
  const retryCounter = new LineCounter();
  const retry = parseDocument(text, { lineCounter: retryCounter, ...YAML_OPTIONS });
  if (retry.errors.length > 0 || unresolvedAliasLines(retry, retryCounter).size > 0) return first;
  return { doc: retry, lineCounter: retryCounter, repaired };
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
