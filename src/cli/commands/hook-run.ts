// `gavel hook claude-code`: the Claude Code UserPromptSubmit hook itself, over the resident router
// (its installer and help are hook.ts).
//
// The hook runs once per prompt, so its start is most of its cost: this module imports only node's
// path, the flag parser (ui/flags.ts, over node:util), the serve client (node:net; node:http only for
// an HTTP server) and config.ts; the on-demand start (hook-start.ts, node:child_process) is imported
// only when no server runs. The `gavel` executable (bin.ts, dist/cli/gavel.cjs) carries it in one
// CommonJS file, so a warm hook loads no ES module loader, no chunk, no addon. Claude Code reads exit 2
// of a UserPromptSubmit hook as "block this prompt", and any other non-zero code as a hook error;
// whatever goes wrong, the hook exits 0 and prints nothing on stdout (one line on stderr at most): it
// never blocks the user's prompt.
import { resolve } from "node:path";
import { findEndpoint, isNotRunning, ServeClient } from "../../serve/client.js";
import { bankDir, config } from "../../config.js";
import { GavelError, MESSAGE_CHARS, clip } from "../../errors.js";
import { parseFlags } from "../ui/flags.js";
import { decimalNumber } from "../ui/options.js";

/** The fields of Claude Code's UserPromptSubmit input that the hook reads. */
interface HookInput {
  prompt: string;
  cwd?: string;
  hook_event_name?: string;
  session_id?: string;
}

/** What the server's route / glance answers, as far as the hook reads it. */
interface RouteAnswer {
  skill: string | null;
  abstained: boolean;
  abstention?: { reason: string };
  verdict: string;
  shortlist: { skill: string; name: string; g: number | null; S: number | null; V: number | null; B?: number | null; R?: number | null }[];
  winner: { name: string; description: string; source: string; path: string | null } | null;
}

/** The hook's options (the installer takes them too, to write them into the command). */
export const HOOK_OPTIONS = {
  bank: { type: "string", short: "b" },
  socket: { type: "string" },
  verdict: { type: "boolean" },
  "no-library-cut": { type: "boolean" },
  "min-score": { type: "string" },
  "timeout-ms": { type: "string" },
  "start-server": { type: "boolean" },
  "idle-exit-ms": { type: "string" },
} as const;

const fmt = (x: number | null | undefined) => (typeof x === "number" && Number.isFinite(x) ? x.toFixed(2) : "–");

/** The context the hook injects: the skill, why, and how to load it. */
export function hookContext(res: RouteAnswer): string {
  const w = res.winner!;
  const best = res.shortlist[0];
  const second = res.shortlist[1];
  // the score that ordered the shortlist: the re-ranker's R where it ran, else the ruling's S
  const score = (c: typeof best) => (c?.R != null && Number.isFinite(c.R) ? `R ${fmt(c.R)}` : `S ${fmt(c?.S)}`);
  const why = [
    `${best?.R != null ? "re-ranker" : res.verdict === "ran" ? "ruling" : "first-stage"} score ${score(best)} (glance g ${fmt(best?.g)}${best?.B != null ? `, lexical B ${fmt(best.B)}` : ""}${best?.V != null ? `, verdict V ${fmt(best.V)}` : ""})`,
    second ? `next: ${second.name} at ${score(second)}` : "the only candidate",
  ];
  // the decision, not its feature-by-feature account (that goes to `gavel route --explain`, not into the agent's prompt)
  if (res.abstention) why.push(`abstention: ${res.abstention.reason.split(", from ")[0]}`);
  const load = w.path ? `Before you start, read ${w.path} and follow it (files it mentions are relative to its folder).` : `Its text is installed in the gavel bank (source ${w.source}).`;
  return [`gavel-router: the skill "${w.name}" matches this prompt: ${w.description}`, `Why: ${why.join("; ")}.`, load].join("\n");
}

/** Most bytes of stdin the hook reads: the server takes a request line of at most 4 MiB anyway. */
export const MAX_HOOK_STDIN_BYTES = 64 * 1024 * 1024;

/** Reads all of stdin (the hook's JSON); null once it passes {@link MAX_HOOK_STDIN_BYTES} (reading stops). */
function readStdin(): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    const onData = (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes <= MAX_HOOK_STDIN_BYTES) return void chunks.push(chunk);
      process.stdin.off("data", onData);
      process.stdin.pause();
      chunks.length = 0;
      resolve(null);
    };
    process.stdin.on("data", onData);
    process.stdin.once("end", () => resolve(Buffer.concat(chunks, bytes).toString("utf8")));
    process.stdin.once("error", reject);
  });
}

/** Most milliseconds `--timeout-ms` takes (ten minutes: beyond a prompt anyone waits for, and within a timer's range). */
export const MAX_HOOK_TIMEOUT_MS = 600_000;

/** What is wrong with a `--timeout-ms` value, or null when it is a number of milliseconds the hook takes. */
export function hookTimeoutProblem(value: string | undefined): string | null {
  if (value === undefined) return null;
  const n = decimalNumber(value);
  return Number.isFinite(n) && n > 0 && n <= MAX_HOOK_TIMEOUT_MS ? null : `--timeout-ms must be a number of milliseconds from 1 to ${MAX_HOOK_TIMEOUT_MS}, not ${JSON.stringify(value)}`;
}

/**
 * What is wrong with the hook's option values (`--bank`, `--socket`, `--timeout-ms`, `--min-score`,
 * `--idle-exit-ms`), or null: the hook and its installer both check them. An empty `--bank` or
 * `--socket` (`--bank "$DIR"` with DIR unset) is refused, as every other command refuses it: read as
 * absent it would ask the server of another bank (the project's default) than the one named, and an
 * empty `--socket` would be the project's folder; a blank `--min-score` is not 0.
 */
export function hookOptionProblem(values: { bank?: string; socket?: string; "timeout-ms"?: string; "min-score"?: string; "idle-exit-ms"?: string }): string | null {
  for (const name of ["bank", "socket"] as const) if (values[name] === "") return `--${name} needs a value, got "" (leave the flag out for its default)`;
  const timeoutProblem = hookTimeoutProblem(values["timeout-ms"]);
  if (timeoutProblem) return timeoutProblem;
  const minScore = values["min-score"];
  if (minScore !== undefined && !Number.isFinite(decimalNumber(minScore))) return `--min-score must be a number, not ${JSON.stringify(minScore)}`;
  const idle = values["idle-exit-ms"];
  // at most 2^31 - 1: the server it starts takes no more (node's timers take no more)
  if (idle !== undefined && !(Number.isInteger(decimalNumber(idle)) && decimalNumber(idle) > 0 && decimalNumber(idle) <= 2 ** 31 - 1)) return `--idle-exit-ms must be a positive integer of at most ${2 ** 31 - 1}, not ${JSON.stringify(idle)}`;
  return null;
}

/** The input as Claude Code sends it, or the reason it is not. */
function parseInput(text: string): HookInput | string {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return "stdin is not JSON";
  }
  if (typeof v !== "object" || v === null || typeof (v as HookInput).prompt !== "string") return "stdin has no \"prompt\" string";
  return v as HookInput;
}

/** The default budget of one hook run (stdin, connect and answer), in milliseconds. */
export const DEFAULT_HOOK_TIMEOUT_MS = 5000;
/** The `timeout` (seconds) the installer writes: Claude Code kills the hook after it. */
export const INSTALLED_HOOK_TIMEOUT_S = 10;

/** One line on stderr, ending in what it means for the prompt. */
function note(text: string): void {
  console.error(`gavel hook: ${clip(text, MESSAGE_CHARS)}; nothing added to the prompt`);
}

/**
 * The folder the hook resolves the bank against: Claude Code's project root (`CLAUDE_PROJECT_DIR`,
 * set for every hook), else the input's `cwd` (the session's working folder, maybe a subfolder),
 * else the process's.
 */
export function hookBase(input: { cwd?: string }): string {
  return config().claudeProjectDir ?? (typeof input.cwd === "string" && input.cwd ? input.cwd : process.cwd());
}

/** The hook's line when no server runs for `bank`, after starting one when `start` is given. */
async function noServerNote(bank: string, why: string, start: { socket?: string; idleExitMs?: number; cwd: string } | null): Promise<void> {
  if (!start) return note(`no gavel server runs for the bank ${bank} (${why}start one with \`gavel serve\`)`);
  // the on-demand start (node:child_process) is loaded only here
  const { startServerLine } = await import("./hook-start.js");
  note(startServerLine(bank, start));
}

/**
 * How long a finished hook lets its connection close before it exits anyway: a busy server reads the
 * cancel and the end of the connection only when its JavaScript thread gets to them, and a wedged
 * one never does, which held the hook (and the prompt) until Claude Code's timeout.
 */
const EXIT_GRACE_MS = 100;

/** The hook itself; always 0 (see the module's comment). The process exits soon after it returns. */
export async function runClaudeCodeHook(args: string[]): Promise<number> {
  process.stdout.on("error", () => undefined); // a reader that has gone (EPIPE): the hook still exits 0
  let code = 0;
  try {
    code = await claudeCodeHook(args);
  } catch (err) {
    note(err instanceof Error ? err.message : String(err)); // e.g. a malformed GAVEL_* variable
  }
  // what is left is the connection; stdout is flushed first (a pipe is asynchronous on macOS)
  setTimeout(() => process.stdout.write("", () => process.exit(code)), EXIT_GRACE_MS).unref();
  return code;
}

type HookValues = { bank?: string; socket?: string; verdict?: boolean; "no-library-cut"?: boolean; "min-score"?: string; "timeout-ms"?: string; "start-server"?: boolean; "idle-exit-ms"?: string };

async function claudeCodeHook(args: string[]): Promise<number> {
  const t0 = performance.now();
  let values: HookValues;
  try {
    values = parseFlags("hook claude-code", { args, options: HOOK_OPTIONS }).values;
  } catch (err) {
    note((err as Error).message);
    return 0;
  }
  const optionProblem = hookOptionProblem(values);
  if (optionProblem) return (note(optionProblem), 0);
  const budget = values["timeout-ms"] === undefined ? DEFAULT_HOOK_TIMEOUT_MS : Number(values["timeout-ms"]);
  const min = values["min-score"] === undefined ? -Infinity : decimalNumber(values["min-score"]);
  const idleExitMs = values["idle-exit-ms"] === undefined ? undefined : Number(values["idle-exit-ms"]);
  const onDemand = values["start-server"] === true || config().startServer;
  const noServer = (bank: string, socket: string | undefined, base: string, why: string) => noServerNote(bank, why, onDemand ? { socket, idleExitMs, cwd: base } : null);
  if (process.stdin.isTTY) {
    note("stdin is a terminal: Claude Code sends the hook's JSON on stdin (gavel hook --help)");
    return 0;
  }
  // the whole run answers within its budget: a stuck read or a busy server is given up on, not waited for
  let waitingFor: "stdin" | "server" = "stdin";
  const watchdog = setTimeout(() => {
    note(waitingFor === "stdin" ? `stdin was not closed within ${budget} ms` : `no answer within ${budget} ms (the gavel server is busy)`);
    process.exit(0);
  }, budget + 250);
  watchdog.unref();
  try {
    const text = await readStdin();
    if (text === null) return (note(`stdin is over ${MAX_HOOK_STDIN_BYTES} bytes (reading stopped there)`), 0);
    const input = parseInput(text);
    waitingFor = "server";
    if (typeof input === "string") {
      note(input);
      return 0;
    }
    if (!input.prompt.trim()) return 0;
    const base = resolve(hookBase(input)); // absolute first: a relative one would be joined twice below
    const bank = resolve(base, bankDir(values.bank, base));
    const socket = values.socket === undefined ? undefined : resolve(base, values.socket);
    // a fallback socket folder taken by another user is PERMISSION_DENIED: a line, never a blocked prompt
    const endpoint = await findEndpoint({ bank, socket }).catch((err: unknown) => {
      note(`cannot look for the gavel server: ${(err as Error).message}`);
      return undefined;
    });
    if (endpoint === undefined) return 0;
    if (!endpoint) {
      await noServer(bank, socket, base, "");
      return 0;
    }
    const client = await ServeClient.open(endpoint).catch(async (err: unknown) => {
      if (isNotRunning(err)) await noServer(bank, socket, base, endpoint.kind === "unix" ? "a stale socket; " : "a stale serve.http.json; ");
      else note(`cannot reach the gavel server: ${(err as Error).message}`);
      return null;
    });
    if (!client) return 0;
    try {
      const left = Math.max(1, Math.ceil(budget - (performance.now() - t0)));
      const params = { task: input.prompt, ...(values["no-library-cut"] ? { libraryCut: false } : {}) };
      const res = await client.request<RouteAnswer>(values.verdict ? "route" : "glance", params, { timeoutMs: left });
      const best = res.shortlist[0];
      if (res.abstained || !res.skill || !res.winner || !best || !((best.S ?? -Infinity) >= min)) return 0;
      process.stdout.write(JSON.stringify({ hookSpecificOutput: { hookEventName: "UserPromptSubmit", additionalContext: hookContext(res) } }) + "\n");
    } catch (err) {
      if (err instanceof GavelError && err.code === "ABORTED") note(`no answer within ${budget} ms (the gavel server is busy)`);
      else if (isNotRunning(err)) await noServer(bank, socket, base, "it stopped; "); // gone since it was found
      else note((err as Error).message);
    } finally {
      client.close();
    }
    return 0;
  } finally {
    clearTimeout(watchdog);
  }
}
