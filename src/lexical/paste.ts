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
const LEVELS = "TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|FATAL|CRITICAL|SEVERE";
/** A log level first, unbracketed: the rest tells a log line from a requirement ("ERROR: page someone"). */
const LEVEL = new RegExp(`^(${LEVELS})([\\s:|])(.*)$`);
/** What marks a log line's text as machine-written: a figure, a path, a quote, a bracket, a name=value, two spaces. */
const LOG_SIGN = /[\d=/\\"'()[\]{}<>@#_|]|:: | {2}/;
/** A shell prompt and its command: `$ `, `user@host:~/app$ `, `(venv) $ `, `PS C:\> `, `C:\app> `, `>>> `. */
const PROMPT = /^(\([\w.-]+\) )?(\$|[\w.-]+@[\w.-]+:[^\s$#]*[$#]|PS [A-Za-z]:\\[^>]*>|[A-Za-z]:\\[^>]*>|>>>) \S/;
/** A unified diff's hunk header: @@ -start[,count] +start[,count] @@. */
const HUNK = /^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@/;
/** A line of prose: words of letters only (two or more), ending as a sentence does. */
const PROSE = /^[A-Za-z][A-Za-z'’-]*(,? [A-Za-z'’-]+)+[.?!:]$/;
const MACHINE: readonly RegExp[] = [
  // a time stamp first: 2026-12-05T01:12:44, [01:12:44], Dec  5 01:12:44
  /^\[?\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}/,
  /^\[?\d{1,2}:\d{2}:\d{2}/,
  /^[A-Z][a-z]{2} +\d{1,2} \d{2}:\d{2}:\d{2}/,
  // a bracketed level, or a level glued to a logger's name (Python's "ERROR:root:...")
  new RegExp(`^\\[(${LEVELS})\\]`),
  new RegExp(`^(${LEVELS})[:|][^\\s:|]`),
  // stack frames and their headers (JavaScript, Java, Python, Go, Rust, gdb)
  /^at [\w$.<>[\]/\\:-]+/,
  /^File "[^"]*", line \d+/,
  /^Traceback \(most recent call last\)/,
  /^Caused by: /,
  /^Exception in thread "/,
  /^\.\.\. \d+ more$/,
  /^goroutine \d+ \[/,
  /^panic: /,
  /^created by [\w./*()-]+/,
  /^exit status \d+$/,
  /^\[signal [A-Z]+/,
  /^[\w./\\-]*\w\.go:\d+( \+0x[0-9a-f]+)?$/,
  /^[\w./-]*\w\.(\(\*?\w+\)\.)?\w+\(((0x[0-9a-f]+|\.\.\.)(, ?(0x[0-9a-f]+|\.\.\.))*)?\)$/,
  /^thread '[^']*' panicked at /,
  /^stack backtrace:$/,
  /^\d+: +(0x[0-9a-f]+ - )?\S*(::|_)/,
  /^note: .*`RUST_BACKTRACE=/,
  /^#\d+ +0x[0-9a-f]+/i,
  // a structured log record
  /^\{\s*"[^"]+"\s*:/,
  // npm's log and its script echo ("> app@1.4.2 build")
  /^npm (ERR!|error|warn|WARN|notice|verb|http)( |$)/,
  /^> [\w@/.-]+@\d+\.\d+\.\d+ \S/,
  // pytest's report: FAILED tests/x.py::test_y, ==== 1 failed in 0.1s ====, E   assert, >   assert, tests/x.py ..F [100%]
  /^(FAILED|PASSED|ERROR|SKIPPED|XFAIL|XPASS) [\w./\\-]+::/,
  /^([=_-])\1{2,} .*\S ([=_-])\2{2,}$/,
  /^E {2,}\S/,
  /^> {3,}\S/,
  /^[\w./\\-]+\.py [.FEsxX]+( +\[ *\d+%\])?$/,
  /^(platform \w+ -- Python \d|rootdir: \S|collected \d+ items?\b)/,
  // compiler diagnostics: src/x.ts(3,5): error TS2322, error[E0308]:, --> src/x.rs:4:18, x.c:12:3: error:, x.py:14: AssertionError
  /^([A-Za-z]:)?[\w./\\-]+\(\d+,\d+\): (error|warning) [A-Z]*\d+/,
  /^(error|warning)\[[A-Z]?\d+\]: /,
  /^--> [\w./\\-]+:\d+:\d+$/,
  /^\|$/,
  /^\d+ \|( |$)/,
  /^\|( +[-^~|]+)+( |$)/,
  /^[\w./\\-]*\w\.\w+:\d+(:\d+)?(: | - )\S/,
  // a unified diff's headers (its hunks' lines are read by splitPaste)
  /^diff --git /,
  /^index [0-9a-f]{7,}\.\.[0-9a-f]{7,}/,
  /^(---|\+\+\+) (a\/|b\/|\/dev\/null)/,
  HUNK,
  PROMPT,
];

/** A statement of SQL: read as the request's own words, never as a paste by the statement rules (";"). */
const SQL = /^(select|insert into|update \w+ set|delete from|create|alter|drop|with \w+ as|explain|vacuum|analyze|grant|revoke|begin|commit|rollback|truncate)\b/i;
/** A code sign besides the words: a bracket, an operator, a quote. */
const CODE_SIGN = /[()[\]{}=<>"'`+*/&|!\\]/;

// source code: a line that opens with a declaration or a statement keyword in a code shape, or ends as a statement does
const CODE: readonly RegExp[] = [
  /^def \w+\s*\(/,
  /^class \w+(\(.*\))?:$/,
  /^((export|public|private|protected|internal|abstract|final|sealed|static|pub) )*(class|interface|struct|enum|trait|impl) [\w<>, ]*\{$/,
  /^import [\w.*]+( as \w+)?;?$/,
  /^import [\w.]+( as \w+)?(, ?[\w.]+( as \w+)?)+$/,
  /^import (static |type )?[{*("'`]/,
  /^import .*["'`];?$/,
  /^from [\w.]+ import \w/,
  /^(const|let|var) (mut )?[\w$]+(: ?[^=]+)? =/,
  /^(const|let|var) [[{]/,
  /^((export|async|pub|public|private|static) )*(function\*?|func|fn) ?([\w$]+ ?)?(<[^>]*>)?\(/,
  /^return( [\w$.]+)?;?$/,
  /^return .*[()[\]{}=<>+*/&|!"'`]/,
  /^export (default|const|let|function|class|async|interface|type|enum)\b.*[;{(=,]/,
  /^export [{*]/,
  /^(public|private|protected|internal|static) .*[({=;]/,
  /^package [\w.]+;?$/,
  /^namespace [\w.:]+ ?\{?$/,
  /^#include [<"]/,
  /^(if|for|while|switch|elif|else|try|except|catch|finally|with)\b.*[:{]$/,
  /^@\w+(\(.*\))?$/,
  /\{$/,
  /^[}\])]+[;,]*$/,
];

// A shell prompt's output and the user's words under it. A request written right under pasted shell
// output ("Can you fix the Makefile so `make` works on macOS 14?") is no machine line, nor is much of
// what commands print ("uploading build artifacts", "nothing to commit, working tree clean"), so the
// output is read line by line in this order (the first that applies decides):
// 1. a machine line (the rules above), a known tool message (TOOL_OUTPUT) or an indented line
//    (people write at the margin; tools indent) is output;
// 2. a line that reads as the user's own words ends the output: a letters-only sentence (PROSE: a
//    tool's "Build succeeded." ends it too), or
//    natural language by a looser test (three words or more, mostly letters, opening with a word;
//    digits, backticks, parentheses and no final mark allowed) that bears a sign of a request: a
//    question mark at its end, a person or politeness word (I, my, we, our, you, your, please,
//    thanks) or "should" / "must", or a question word or an imperative verb opening it or one of its
//    clauses;
// 3. any other line is output: wordy output says no "you", asks nothing and gives no order.
// Tools that do speak so (git's "Your branch is up to date with 'origin/main'.", "Did you mean",
// "[y/N]" choices, rustc's "For more information about this error, try ...") are in TOOL_OUTPUT,
// which comes first; one missing from it ends the output early (the rest of the output is then read
// by the machine-line rules alone), which costs less than taking a request for output.

/** Messages that tools print under a shell prompt, read as output before the user-words test. */
const TOOL_OUTPUT: readonly RegExp[] = [
  // a program's (or a path's) name in lower case and a colon: "make: *** [all] Error 1",
  // "fatal: not a git repository", "bash: foo: command not found", "curl: (7) ...", "/usr/bin/ld: ..."
  /^[a-z./][\w./+-]*: /,
  // an upper-case level or an exception's name and a colon: "ERROR: No matching distribution", "E: Unable to locate", "TypeError: ..."
  /^([A-Z]+|[A-Z]\w*(Error|Exception|Warning)|Error|Warning|Fatal|Usage|Hint): /,
  // a choice to make at the end: "Do you want to continue? [Y/n]", "(yes/no/[fingerprint])?", "Is this ok [y/d/N]:"
  /[[(](y|yes|n|no)\/[^[\]()]*(\[[^[\]()]*\][^[\]()]*)?[\])]{1,2}\s*([?:]\s*)?$/i,
  // git's status and advice
  /^(On branch \S|HEAD detached (at|from) |Your branch (is|and) |nothing (added )?to commit|no changes added to commit|Changes (not staged for commit|to be committed):|Untracked files:|Unmerged paths:|You have unmerged paths|You are in 'detached HEAD' state|All conflicts fixed|Already up[ -]to[ -]date|Everything up-to-date|Switched to (a new )?branch |Cloning into |Auto-merging |CONFLICT \(|Automatic merge failed|Merge made by |Please commit your changes or stash them|Please move or remove them|Initialized empty Git repository|Reinitialized existing Git repository|Did you mean\b)/,
  // package managers', compilers' and test runners' hints and summaries that read like a request
  /^(Run `[^`]*` (for|to) |For more information(,| about this error,) try |Ran all test suites|The connection to the server \S+ was refused|Successfully (installed|uninstalled|built|tagged) )/,
];

/** A word of natural language: letters (with ' ’ -), a quote or bracket around it, punctuation after. */
const WORD = /^[("'`‘“]?\p{L}[\p{L}'’-]*[)"'`’”]?[,.;:!?…]*$/u;
/** Person and politeness words and the modals of a requirement: a request speaks to someone or asks for something, tool output seldom does (lower case, ’ read as '). */
const PERSON = new Set(["should", "must", "i", "i'm", "i've", "i'd", "i'll", "me", "my", "mine", "myself", "we", "we're", "we've", "we'd", "we'll", "us", "our", "ours", "you", "you're", "you've", "you'd", "you'll", "your", "yours", "please", "pls", "thanks", "thank", "thx"]);
/** Words that open a question or a request: only as a line's first word. */
const OPENERS = new Set(["also", "additionally", "now", "then", "next", "finally", "why", "how", "what", "where", "when", "which", "who", "whose", "can", "could", "would", "will", "should", "does", "do", "did", "is", "are", "any"]);
/** Imperative verbs: a line's or a clause's first word (after "and", "but", "so", "then", "also", "now", "just", "please"). */
const VERBS = new Set([
  "add", "adjust", "allow", "analyse", "analyze", "bump", "change", "check", "clean", "compare", "configure", "convert", "create", "debug", "delete", "deploy",
  "describe", "design", "disable", "document", "drop", "edit", "enable", "ensure", "explain", "extract", "figure", "find", "fix", "generate", "get", "give",
  "handle", "help", "implement", "improve", "include", "install", "investigate", "keep", "lay", "let", "let's", "look", "make", "match", "merge", "migrate",
  "modify", "move", "optimise", "optimize", "pin", "port", "profile", "publish", "pull", "push", "refactor", "remove", "rename", "replace", "review", "rewrite",
  "run", "set", "show", "sort", "speed", "split", "stop", "suggest", "summarise", "summarize", "support", "tell", "tidy", "track", "translate", "tune", "turn",
  "update", "upgrade", "write",
]);
const LINKS = new Set(["and", "but", "so", "then", "also", "now", "just", "please"]);

/** A token as a bare lower-case word: its quotes, brackets and trailing punctuation dropped, ’ read as '. */
function bare(tok: string): string {
  let a = 0, b = tok.length;
  while (a < b && `("'\`‘“`.includes(tok[a])) a++;
  while (b > a && `)"'\`’”,.;:!?…`.includes(tok[b - 1])) b--;
  return tok.slice(a, b).replace(/’/g, "'").toLowerCase();
}

/**
 * Whether a trimmed line under a shell prompt reads as the user's own words (rule 2 above): a
 * letters-only sentence, or natural language (three words or more, letters at least 60% of its
 * non-space characters, words at least half its tokens, a word first) with a sign of a request.
 */
function ownWords(t: string): boolean {
  if (PROSE.test(t)) return true;
  const tokens = t.split(/\s+/);
  if (tokens.length < 3 || !/^\p{L}[\p{L}'’-]*[,:]?$/u.test(tokens[0])) return false;
  let chars = 0, letters = 0, words = 0;
  for (const tok of tokens) {
    chars += tok.length;
    letters += tok.match(/\p{L}/gu)?.length ?? 0;
    if (WORD.test(tok)) words++;
  }
  if (words < 3 || words * 2 < tokens.length || letters < 0.6 * chars) return false;
  if (/\?[)"'`’”]*$/.test(t)) return true;
  const first = bare(tokens[0]);
  if (OPENERS.has(first) || VERBS.has(first)) return true;
  for (let k = 0; k < tokens.length; k++) {
    const w = bare(tokens[k]);
    if (PERSON.has(w)) return true;
    // a clause's first word (after a token that ends in punctuation), past a linking word
    if (k > 0 && /[,.;:!?]$/.test(tokens[k - 1])) {
      const v = LINKS.has(w) && k + 1 < tokens.length ? bare(tokens[k + 1]) : w;
      if (VERBS.has(v)) return true;
    }
  }
  return false;
}

/**
 * Whether a line under a shell prompt (not blank, no prompt, no fence) is the command's output, by
 * the order above. `machine`: the line is a machine line by the rules.
 */
function promptOutput(line: string, t: string, machine: boolean): boolean {
  if (machine || /^\s/.test(line)) return true;
  for (const re of TOOL_OUTPUT) if (re.test(t)) return true;
  return !ownWords(t);
}

/**
 * Whether any of `rules` matches, as one test: the rules without flags or backreferences joined into
 * one alternation, `(?:r1)|(?:r2)|…` (a match of the alternation at a position is a match of one of
 * them there, so it matches exactly when one of them does), and the others tried one by one. A line
 * that no rule takes (a column of numbers) then costs one regex run, not one a rule. @internal
 */
export function anyRule(rules: readonly RegExp[]): { union: RegExp | undefined; rest: readonly RegExp[]; test(t: string): boolean } {
  const joinable = rules.filter((r) => r.flags === "" && !/\\[1-9k]/.test(r.source));
  const rest = rules.filter((r) => !joinable.includes(r));
  const union = joinable.length > 0 ? new RegExp(joinable.map((r) => `(?:${r.source})`).join("|")) : undefined;
  return { union, rest, test: (t) => (union !== undefined && union.test(t)) || rest.some((r) => r.test(t)) };
}

const ANY_MACHINE = anyRule(MACHINE);
const ANY_CODE = anyRule(CODE);

/** The machine-line and code rules one by one, for tests of {@link anyRule}. @internal */
export const LINE_RULES = { machine: MACHINE, code: CODE } as const;

/** Every rule of the paste, for tests that run them on adversarial lines (they must stay linear). @internal */
export const PASTE_RULES: readonly RegExp[] = [FENCE, LEVEL, LOG_SIGN, PROMPT, HUNK, PROSE, SQL, CODE_SIGN, WORD, ...MACHINE, ...CODE, ...TOOL_OUTPUT, ...[ANY_MACHINE.union, ANY_CODE.union].filter((r): r is RegExp => r !== undefined)];

/**
 * Whether one line (trimmed) reads as machine output: a log line, a stack frame, a structured record,
 * a dump, a shell prompt, a test runner's or a compiler's report, a diff's header, or a line of
 * source code.
 */
export function machineLine(line: string): boolean {
  const t = line.trim();
  if (t === "") return false;
  // a line this long is no log line or statement a person pastes: read it as machine output
  // without the rules (which stay linear, but need not read megabytes)
  if (t.length > MAX_LINE) return true;
  return machineShape(t);
}

/** {@link machineLine} of a trimmed, non-empty line, at any length (the rules are linear; tests read 200 KB lines). */
export function machineShape(t: string): boolean {
  if (ANY_MACHINE.test(t)) return true;
  // a level word first: a log line when what follows has a machine sign, else a requirement ("ERROR: page someone")
  const level = LEVEL.exec(t);
  if (level && LOG_SIGN.test(level[3])) return true;
  if (ANY_CODE.test(t)) return true;
  // a statement's ";" end, with a code sign besides (not prose that ends in ";", not SQL)
  if (t.endsWith(";") && !SQL.test(t) && (CODE_SIGN.test(t) || /^[\w.:$]+;$/.test(t) || /^[\w-]+: [^;]+;$/.test(t))) return true;
  return dumpLine(t);
}

/**
 * Numbers, hashes and punctuation more than words, in four tokens or more of which at most a quarter
 * are words: a dump ("0x7f3a 0x0001 0x0002 4096"), not a dated plan line ("2026-01-03: ship v2"), a
 * list of figures with its words ("Q1: 1,204 units") or a markdown table row.
 */
function dumpLine(t: string): boolean {
  if (t.length < 16 || (t.startsWith("|") && t.endsWith("|"))) return false;
  const tokens = t.split(/\s+/);
  if (tokens.length < 4) return false;
  let chars = 0, letters = 0, words = 0;
  for (const tok of tokens) {
    chars += tok.length;
    letters += tok.match(/\p{L}/gu)?.length ?? 0;
    if (/^\p{L}{2,}[,.:;]?$/u.test(tok)) words++;
  }
  return letters / chars < 0.4 && words * 4 <= tokens.length;
}

/**
 * Splits a task's lines (at "\n"; a "\r" before it is ignored) into request and paste: the lines of
 * fenced blocks (``` or ~~~, fences included; an unclosed fence runs to the end), and runs of at least
 * three machine lines ({@link machineLine}), a run going on over blank lines and over one other line
 * between two machine lines (the source line under a Python frame, an indented argument), and taking
 * an indented line right after its last one (the source line under the last frame). A shell prompt's
 * output (the lines after it, up to a blank line, the next prompt, a fence or a line in the user's own
 * words: see the rules above TOOL_OUTPUT) and a diff hunk's lines (as many as its header counts) are
 * machine lines too.
 */
export function splitPaste(text: string): PasteSplit {
  const lines = text.split("\n");
  const paste = new Array<boolean>(lines.length).fill(false);
  const machine = lines.map(machineLine);
  for (let i = 0; i < lines.length; i++) {
    const t = lines[i].trim();
    if (t.length > MAX_LINE) continue;
    if (PROMPT.test(t)) {
      // the command's output
      let j = i + 1;
      for (; j < lines.length; j++) {
        const u = lines[j].trim();
        if (u === "" || (u.length <= MAX_LINE && PROMPT.test(u)) || FENCE.test(lines[j])) break;
        if (!promptOutput(lines[j], u, machine[j])) break;
        machine[j] = true;
      }
      i = j - 1;
      continue;
    }
    const hunk = HUNK.exec(t);
    if (hunk) {
      // the hunk's lines: " " (or an emptied line) both sides, "-" the old, "+" the new, "\" a marker
      let old = hunk[1] === undefined ? 1 : Number(hunk[1]);
      let neu = hunk[2] === undefined ? 1 : Number(hunk[2]);
      let j = i + 1;
      for (; j < lines.length && (old > 0 || neu > 0 || lines[j].startsWith("\\")); j++) {
        const c = lines[j].charAt(0);
        if (c === "" || c === " ") { if (old <= 0 || neu <= 0) break; old--; neu--; }
        else if (c === "-") { if (old <= 0) break; old--; }
        else if (c === "+") { if (neu <= 0) break; neu--; }
        else if (c !== "\\") break;
        machine[j] = true;
      }
      i = j - 1;
    }
  }
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

/** A task's text as the paste rules read it: line ends as "\n", without the whitespace around it. */
export function pasteText(text: string): string {
  return text.replace(/\r\n?/g, "\n").trim();
}

/**
 * The paste split of a task ({@link splitPaste} of {@link pasteText}), read once per route and
 * carried (the glance's rows, BM25's query, the result's line count); undefined for a one-line task
 * or one with nothing pasted.
 */
export function taskPaste(text: string): PasteSplit | undefined {
  if (!/[\n\r]/.test(text)) return undefined;
  const split = splitPaste(pasteText(text));
  return split.pasteLines > 0 ? split : undefined;
}
