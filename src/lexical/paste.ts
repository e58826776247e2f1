/**
 * A request apart from what was pasted with it. A task such as "the deploy fails, here is the log:"
 * followed by two hundred log lines would otherwise be routed on the log: every word of a written task
 * counts in BM25's query and every token votes in the glance, so a paste of machine output outvotes
 * the few words that say what to do. Here a task's lines are split into the request (prose) and the
 * paste (fenced blocks, and runs of machine lines: log lines, stack frames, dumps, source code), and a paste that
 * outweighs the request is read at a weight that gives it the request's mass in all: it still counts
 * (a traceback's exception names the library), but no longer decides alone.
 *
 * Pure functions over the text; src/lexical/postings.ts weighs BM25's query with them and
 * src/route/context.ts the glance's rows.
 *
 * @module
 */

/** Lines of a task split into request and paste. */
export interface PasteSplit {
  /** One entry per line of the text (split at "\n"): whether the line is pasted material. */
  readonly paste: readonly boolean[];
  /** How many lines are pasted. */
  readonly pasteLines: number;
}

/** Lines longer than this (in UTF-16 units: a page of prose) are machine output without further reading. */
const MAX_LINE = 16_384;

/** The fewest consecutive machine lines read as a paste (fewer may be a request's own example). */
const RUN = 3;

const FENCE = /^\s{0,3}(```|~~~)/;
const MACHINE: readonly RegExp[] = [
  // a time stamp or log level first: 2026-12-05T01:12:44, [01:12:44], Dec  5 01:12:44, INFO, [ERROR]
  /^\[?\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}/,
  /^\[?\d{1,2}:\d{2}:\d{2}/,
  /^[A-Z][a-z]{2} +\d{1,2} \d{2}:\d{2}:\d{2}/,
  /^\[?(TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|FATAL|CRITICAL|SEVERE)\]?[\s:|]/,
  // stack frames and their headers (JavaScript, Java, Python, Go, gdb)
  /^at [\w$.<>[\]/\\:-]+/,
  /^File "[^"]*", line \d+/,
  /^Traceback \(most recent call last\)/,
  /^Caused by: /,
  /^\.\.\. \d+ more$/,
  /^goroutine \d+ \[/,
  /^#\d+ +0x[0-9a-f]+/i,
  // a structured log record
  /^\{\s*"[^"]+"\s*:/,
];

// source code: a line that opens with a declaration or a statement keyword, or ends as a statement does
const CODE: readonly RegExp[] = [
  /^(def|class|import|return|const|let|var|function|async function|export (default |const |function |class )|public|private|protected|static|func|fn|package|#include|using|namespace)\b.*\S$/,
  /^from [\w.]+ import \w/,
  /^(if|for|while|switch|elif|else|try|except|catch|finally|with)\b.*[:{]$/,
  /^@\w+(\(.*\))?$/,
  /[;{]$/,
  /^[}\])]+[;,]*$/,
];

/**
 * Whether one line (trimmed) reads as machine output: a log line, a stack frame, a structured record,
 * a dump, or a line of source code.
 */
export function machineLine(line: string): boolean {
  const t = line.trim();
  if (t === "") return false;
  // a line this long is no log line or statement a person pastes: read it as machine output
  // without the rules (which stay linear, but need not read megabytes)
  if (t.length > MAX_LINE) return true;
  for (const re of MACHINE) if (re.test(t)) return true;
  for (const re of CODE) if (re.test(t)) return true;
  // numbers, hashes and punctuation more than words: a dump, a table of figures
  const chars = t.replace(/\s+/g, "");
  if (chars.length < 16) return false;
  const letters = chars.match(/\p{L}/gu)?.length ?? 0;
  return letters / chars.length < 0.4;
}

/**
 * Splits a task's lines (at "\n"; a "\r" before it is ignored) into request and paste: the lines of
 * fenced blocks (``` or ~~~, fences included; an unclosed fence runs to the end), and runs of at least
 * three machine lines ({@link machineLine}), a run going on over blank lines and over one other line
 * between two machine lines (the source line under a Python frame, an indented argument), and taking
 * an indented line right after its last one (the source line under the last frame).
 */
export function splitPaste(text: string): PasteSplit {
  const lines = text.split("\n");
  const paste = new Array<boolean>(lines.length).fill(false);
  const machine = lines.map(machineLine);
  let fenced = false;
  for (let i = 0; i < lines.length; i++) {
    if (FENCE.test(lines[i])) {
      paste[i] = true;
      fenced = !fenced;
    } else if (fenced) paste[i] = true;
  }
  // runs of machine lines outside fences
  let i = 0;
  while (i < lines.length) {
    if (!machine[i] || paste[i]) { i++; continue; }
    let end = i; // last machine line of the run
    let count = 1;
    let j = i + 1;
    while (j < lines.length && !paste[j]) {
      if (machine[j]) { end = j; count++; j++; continue; }
      if (lines[j].trim() === "") { j++; continue; }
      // one other line between two machine lines
      let k = j + 1;
      while (k < lines.length && lines[k].trim() === "" && !paste[k]) k++;
      if (k < lines.length && machine[k] && !paste[k]) { j = k; continue; }
      break;
    }
    // an indented line right after the run's last machine line (the source line under a last frame)
    if (count >= RUN && end + 1 < lines.length && !paste[end + 1] && /^\s+\S/.test(lines[end + 1])) end++;
    if (count >= RUN) for (let x = i; x <= end; x++) paste[x] = true;
    i = end + 1;
  }
  return { paste, pasteLines: paste.reduce((n, p) => n + (p ? 1 : 0), 0) };
}

/**
 * The weight of each pasted unit (a word, a token) given how many the request and the paste hold: 1
 * unless the request has at least `minRequest` units and the paste more than the request, then
 * request / paste, so that the paste's units weigh as much in all as the request's. A task that is
 * all paste, or nearly (fewer than `minRequest` units of request), is read as it is.
 */
export function pasteWeight(request: number, paste: number, minRequest = 3): number {
  return request >= minRequest && paste > request ? request / paste : 1;
}
