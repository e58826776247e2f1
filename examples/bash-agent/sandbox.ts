/**
 * The bash agent's sandbox: a throwaway folder (mkdtemp) where each command runs in a fresh
 * `bash -c` with that folder as its working directory and HOME, a per-command time limit (the whole
 * process group is killed), and an allow-list of program names read from the command before it runs.
 *
 * This guards against an agent's mistakes, not against a hostile model: an allowed program can
 * still reach outside the folder (`cat /etc/hostname`, awk's `system()`, GNU sed's `e`). Run
 * untrusted models in a container.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Programs the agent may run by default: reading, searching and writing files, nothing that fetches or deletes. */
export const DEFAULT_ALLOWED = [
  "awk", "basename", "cat", "cd", "cp", "cut", "date", "diff", "dirname", "echo", "false", "file", "find", "grep",
  "head", "ls", "mkdir", "mv", "nl", "od", "printf", "pwd", "sed", "seq", "sleep", "sort", "stat", "tail", "tee",
  "test", "[", "touch", "tr", "true", "uniq", "wc", "xxd",
] as const;

/** Arguments refused for a program even when it is allowed (they run or delete other things). */
export const DEFAULT_DENIED_ARGS: Readonly<Record<string, readonly string[]>> = {
  find: ["-exec", "-execdir", "-ok", "-okdir", "-delete"],
};

/** What {@link parseCommand} read from a command line. */
export interface ParsedCommand {
  /** The program of every simple command, in order (pipelines, lists, `if`/`while` bodies). */
  programs: string[];
  /** Each simple command's words (program first), for per-program argument checks. */
  commands: string[][];
  /** Why the command cannot be checked (a construct the parser refuses), or null. */
  unsupported: string | null;
}

/** Words that open or continue a compound command: the command proper is the next word. */
const PREFIX_WORDS = new Set(["if", "then", "else", "elif", "do", "while", "until", "!", "{", "time"]);
/** Words that close a compound command (nothing runs). */
const CLOSE_WORDS = new Set(["fi", "done", "}"]);
/** Constructs this small parser does not follow: refused outright. */
const REFUSED_WORDS = new Set(["case", "esac", "function", "select", "coproc", "((", "[["]);

type Token = { kind: "word"; text: string; raw: string } | { kind: "sep" } | { kind: "redir"; op: string };

/**
 * Splits a command line into words, separators (`;`, `&`, `&&`, `|`, `||`, `|&`, newlines,
 * parentheses) and redirections, honouring quotes and backslashes, and skipping heredoc bodies.
 * Throws a string (the reason) on what it refuses: command or process substitution, unbalanced quotes.
 */
// long function: a tokenizer's one loop over the characters reads better whole
function tokenize(line: string): Token[] {
  const out: Token[] = [];
  const heredocs: { delim: string; strip: boolean }[] = [];
  let i = 0;
  let word = "";
  let raw = "";
  let inWord = false;
  const flush = () => {
    if (inWord) out.push({ kind: "word", text: word, raw });
    word = "";
    raw = "";
    inWord = false;
  };
  while (i < line.length) {
    const c = line[i];
    if (c === "\\") {
      if (line[i + 1] === "\n") { i += 2; continue; }
      word += line[i + 1] ?? "";
      raw += line.slice(i, i + 2);
      inWord = true;
      i += 2;
      continue;
    }
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) throw "unbalanced single quote";
      word += line.slice(i + 1, end);
      raw += line.slice(i, end + 1);
      inWord = true;
      i = end + 1;
      continue;
    }
    if (c === '"') {
      let j = i + 1;
      let text = "";
      for (; j < line.length && line[j] !== '"'; j++) {
        if (line[j] === "\\" && j + 1 < line.length) { text += line[j + 1]; j++; continue; }
        if (line[j] === "`" || (line[j] === "$" && line[j + 1] === "(")) throw "command substitution ($(…) or backticks) is not allowed";
        text += line[j];
      }
      if (j >= line.length) throw "unbalanced double quote";
      word += text;
      raw += line.slice(i, j + 1);
      inWord = true;
      i = j + 1;
      continue;
    }
    if (c === "`" || (c === "$" && line[i + 1] === "(")) throw "command substitution ($(…) or backticks) is not allowed";
    if ((c === "<" || c === ">") && line[i + 1] === "(") throw "process substitution is not allowed";
    if (c === "\n") {
      flush();
      out.push({ kind: "sep" });
      i++;
      // heredoc bodies start on the line after their operator
      for (const h of heredocs.splice(0)) {
        for (;;) {
          if (i >= line.length) throw `heredoc ${h.delim} is not closed`;
          const nl = line.indexOf("\n", i);
          const end = nl < 0 ? line.length : nl;
          const body = line.slice(i, end);
          i = end + 1;
          if ((h.strip ? body.replace(/^\t+/, "") : body) === h.delim) break;
        }
      }
      continue;
    }
    if (c === " " || c === "\t") { flush(); i++; continue; }
    if (c === "#" && !inWord) {
      const nl = line.indexOf("\n", i);
      i = nl < 0 ? line.length : nl;
      continue;
    }
    // redirections: [n]>, >>, >|, >&, &>, &>>, <, <<, <<-, <<<, <&, <>
    const redir = /^(\d*)(&>>|&>|>>|>\||>&|<<<|<<-|<<|<&|<>|>|<)/.exec(line.slice(i));
    if (redir && (redir[1] === "" || !inWord)) {
      flush();
      const op = redir[2];
      i += redir[0].length;
      out.push({ kind: "redir", op });
      if (op === "<<" || op === "<<-") {
        // the delimiter word (quotes removed) is read as the next word; remember it for the body
        let j = i;
        while (line[j] === " " || line[j] === "\t") j++;
        const m = /^(['"]?)([^\s'";&|<>()]+)\1/.exec(line.slice(j));
        if (!m) throw "heredoc without a delimiter";
        heredocs.push({ delim: m[2], strip: op === "<<-" });
        out.push({ kind: "word", text: m[2], raw: m[0] });
        i = j + m[0].length;
      }
      continue;
    }
    const op = /^(&&|\|\||\|&|;;|[;&|()])/.exec(line.slice(i));
    if (op) {
      if (op[1] === ";;") throw "case clauses are not supported";
      flush();
      out.push({ kind: "sep" });
      i += op[1].length;
      continue;
    }
    word += c;
    raw += c;
    inWord = true;
    i++;
  }
  flush();
  if (heredocs.length) throw `heredoc ${heredocs[0].delim} is not closed`;
  return out;
}

/**
 * Reads the program names of a shell command line: the first word of every simple command, past
 * variable assignments, redirections and the reserved words that open compound commands.
 */
export function parseCommand(line: string): ParsedCommand {
  let tokens: Token[];
  try {
    tokens = tokenize(line);
  } catch (reason) {
    return { programs: [], commands: [], unsupported: String(reason) };
  }
  const commands: string[][] = [];
  let cur: string[] = [];
  let skipRest = false;
  let expectTarget = false;
  const end = () => {
    if (cur.length) commands.push(cur);
    cur = [];
    skipRest = false;
    expectTarget = false;
  };
  for (const t of tokens) {
    if (t.kind === "sep") { end(); continue; }
    if (t.kind === "redir") {
      expectTarget = true;
      continue;
    }
    if (expectTarget) {
      expectTarget = false;
      // `2>&1`, `>&2`: the target is a descriptor, any other word is a file name; neither runs
      continue;
    }
    if (skipRest) continue;
    if (cur.length === 0) {
      if (REFUSED_WORDS.has(t.raw)) return { programs: [], commands: [], unsupported: `\`${t.raw}\` is not supported by the sandbox's parser` };
      if (PREFIX_WORDS.has(t.raw)) continue;
      if (CLOSE_WORDS.has(t.raw)) continue;
      if (t.raw === "for") { skipRest = true; continue; } // `for x in a b c` runs nothing until `do`
      if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(t.raw)) continue; // FOO=bar cmd
    }
    cur.push(t.text);
  }
  end();
  return { programs: commands.map((c) => c[0]), commands, unsupported: null };
}

/** Why a command is refused under an allow-list, or null when it may run. */
export function refusal(line: string, allowed: ReadonlySet<string>, deniedArgs: Readonly<Record<string, readonly string[]>> = DEFAULT_DENIED_ARGS): string | null {
  const parsed = parseCommand(line);
  if (parsed.unsupported) return parsed.unsupported;
  if (parsed.commands.length === 0) return "the command is empty";
  for (const words of parsed.commands) {
    const program = words[0];
    if (/[$*?[\]]/.test(program) && program !== "[") return `the program name \`${program}\` is not a plain word`;
    if (!allowed.has(program)) return `\`${program}\` is not an allowed command (allowed: ${[...allowed].sort().join(", ")})`;
    const denied = deniedArgs[program]?.find((a) => words.includes(a));
    if (denied) return `\`${program} ${denied}\` is not allowed`;
  }
  return null;
}

/** Options of {@link Sandbox.create}. */
export interface SandboxOptions {
  /** Program names the agent may run (default {@link DEFAULT_ALLOWED}). */
  allowed?: Iterable<string>;
  /** Arguments refused per program (default {@link DEFAULT_DENIED_ARGS}). */
  deniedArgs?: Readonly<Record<string, readonly string[]>>;
  /** Per-command time limit in milliseconds (default 10,000); the command's process group is killed past it. */
  timeoutMs?: number;
  /** Most characters of output kept (stdout and stderr interleaved); the middle is elided past it. Default 10,000. */
  maxOutputChars?: number;
  /** Parent folder of the sandbox (default the OS temp folder). */
  parent?: string;
}

/** What one command did. */
export interface ExecResult {
  command: string;
  /** The refusal message when the allow-list stopped it (nothing ran). */
  refused: string | null;
  /** Exit status (null when refused or killed). */
  returncode: number | null;
  timedOut: boolean;
  /** stdout and stderr together, in arrival order (elided past maxOutputChars). */
  output: string;
  ms: number;
}

/** A throwaway folder and the commands run in it. */
export class Sandbox {
  readonly dir: string;
  readonly allowed: ReadonlySet<string>;
  readonly timeoutMs: number;
  readonly #denied: Readonly<Record<string, readonly string[]>>;
  readonly #maxOutput: number;
  #disposed = false;

  private constructor(dir: string, o: SandboxOptions) {
    this.dir = dir;
    this.allowed = new Set(o.allowed ?? DEFAULT_ALLOWED);
    this.timeoutMs = o.timeoutMs ?? 10_000;
    this.#denied = o.deniedArgs ?? DEFAULT_DENIED_ARGS;
    this.#maxOutput = o.maxOutputChars ?? 10_000;
    if (!(this.timeoutMs > 0)) throw new RangeError("timeoutMs must be > 0");
  }

  /** Makes a fresh folder under the temp folder (mkdtemp). */
  static create(options: SandboxOptions = {}): Sandbox {
    return new Sandbox(mkdtempSync(join(options.parent ?? tmpdir(), "bash-agent-")), options);
  }

  /** Runs one command line in the folder, or refuses it (allow-list) without running anything. */
  async exec(command: string): Promise<ExecResult> {
    if (this.#disposed) throw new Error("the sandbox was removed");
    const t0 = performance.now();
    const why = refusal(command, this.allowed, this.#denied);
    if (why !== null) return { command, refused: why, returncode: null, timedOut: false, output: "", ms: performance.now() - t0 };
    return new Promise((resolve, reject) => {
      const child = spawn("/bin/bash", ["--noprofile", "--norc", "-c", command], {
        cwd: this.dir,
        detached: true, // its own process group, so that a timeout kills what it started too
        stdio: ["ignore", "pipe", "pipe"],
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: this.dir, LANG: "C.UTF-8", TERM: "dumb" },
      });
      // the head and the tail of the output, and how much came in all
      let head = "";
      let tail = "";
      let total = 0;
      const max = this.#maxOutput;
      const add = (d: Buffer) => {
        const s = d.toString("utf8");
        total += s.length;
        if (head.length < max) head += s;
        else tail = (tail + s).slice(-max);
      };
      child.stdout.on("data", add);
      child.stderr.on("data", add);
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        try {
          process.kill(-child.pid!, "SIGKILL");
        } catch {
          // already gone
        }
      }, this.timeoutMs);
      child.on("error", (err) => {
        clearTimeout(timer);
        reject(err);
      });
      child.on("close", (code) => {
        clearTimeout(timer);
        resolve({ command, refused: null, returncode: timedOut ? null : code, timedOut, output: elide(head, tail, total, max), ms: performance.now() - t0 });
      });
    });
  }

  /** Removes the folder and everything in it. Idempotent. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The output whole when it fits in `max` characters, else its first and last max/2 with a note of what was cut. */
function elide(head: string, tail: string, total: number, max: number): string {
  const text = head + tail;
  if (total <= max) return text;
  const half = Math.floor(max / 2);
  return `${text.slice(0, half)}\n[… ${total - 2 * half} characters elided …]\n${text.slice(-half)}`;
}
