// `gavel hook claude-code`: a Claude Code UserPromptSubmit hook over the resident router, and
// `gavel hook install claude-code`, which writes it into .claude/settings.json.
//
// The hook runs once per prompt, so it must start fast: this module imports only node built-ins and
// the serve client (no model, no addon). Claude Code reads exit 2 of a UserPromptSubmit hook as "block
// this prompt", and any other non-zero code as a hook error; whatever goes wrong, the hook itself
// exits 0 and prints nothing on stdout (one line on stderr at most): it never blocks the user's prompt.
import { parseArgs } from "node:util";
import { access, mkdir, readFile, realpath, rename, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { findEndpoint, ServeClient } from "../../serve/client.js";
import type { Command } from "./types.js";
import { bankDir, config } from "../../config.js";
import { GavelError } from "../../errors.js";
import { DEFAULT_ON_DEMAND_IDLE_MS, noServerLine } from "./hook-start.js";

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
  shortlist: { skill: string; name: string; g: number | null; S: number | null; V: number | null; B?: number | null }[];
  winner: { name: string; description: string; source: string; path: string | null } | null;
}

const HOOK_OPTIONS = {
  bank: { type: "string", short: "b" },
  socket: { type: "string" },
  verdict: { type: "boolean" },
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
  const why = [
    `${res.verdict === "ran" ? "ruling" : "first-stage"} score S ${fmt(best?.S)} (glance g ${fmt(best?.g)}${best?.B != null ? `, lexical B ${fmt(best.B)}` : ""}${best?.V != null ? `, verdict V ${fmt(best.V)}` : ""})`,
    second ? `next: ${second.name} at S ${fmt(second.S)}` : "the only candidate",
  ];
  if (res.abstention) why.push(`abstention: ${res.abstention.reason}`);
  const load = w.path ? `Before you start, read ${w.path} and follow it (files it mentions are relative to its folder).` : `Its text is installed in the gavel bank (source ${w.source}).`;
  return [`gavel-router: the skill "${w.name}" matches this prompt: ${w.description}`, `Why: ${why.join("; ")}.`, load].join("\n");
}

/** Reads all of stdin (the hook's JSON). */
async function readStdin(): Promise<string> {
  let text = "";
  process.stdin.setEncoding("utf8");
  for await (const chunk of process.stdin) text += chunk as string;
  return text;
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
  console.error(`gavel hook: ${text}; nothing added to the prompt`);
}

/**
 * The folder the hook resolves the bank against: Claude Code's project root (`CLAUDE_PROJECT_DIR`,
 * set for every hook), else the input's `cwd` (the session's working folder, maybe a subfolder),
 * else the process's.
 */
export function hookBase(input: { cwd?: string }): string {
  return config().claudeProjectDir ?? (typeof input.cwd === "string" && input.cwd ? input.cwd : process.cwd());
}

/** The hook itself; always 0 (see the module's comment). */
export async function runClaudeCodeHook(args: string[]): Promise<number> {
  try {
    return await claudeCodeHook(args);
  } catch (err) {
    note(err instanceof Error ? err.message : String(err)); // e.g. a malformed GAVEL_* variable
    return 0;
  }
}

type HookValues = { bank?: string; socket?: string; verdict?: boolean; "min-score"?: string; "timeout-ms"?: string; "start-server"?: boolean; "idle-exit-ms"?: string };

async function claudeCodeHook(args: string[]): Promise<number> {
  const t0 = performance.now();
  let values: HookValues;
  try {
    values = parseArgs({ args, options: HOOK_OPTIONS }).values;
  } catch (err) {
    note((err as Error).message);
    return 0;
  }
  const budget = values["timeout-ms"] === undefined ? DEFAULT_HOOK_TIMEOUT_MS : Number(values["timeout-ms"]);
  if (!(Number.isFinite(budget) && budget > 0)) {
    note(`--timeout-ms must be a positive number of milliseconds, not ${JSON.stringify(values["timeout-ms"])}`);
    return 0;
  }
  const min = values["min-score"] === undefined ? -Infinity : Number(values["min-score"]);
  if (Number.isNaN(min)) {
    note(`--min-score must be a number, not ${JSON.stringify(values["min-score"])}`);
    return 0;
  }
  const idleExitMs = values["idle-exit-ms"] === undefined ? DEFAULT_ON_DEMAND_IDLE_MS : Number(values["idle-exit-ms"]);
  if (!(Number.isInteger(idleExitMs) && idleExitMs > 0)) return (note(`--idle-exit-ms must be a positive integer, not ${JSON.stringify(values["idle-exit-ms"])}`), 0);
  const onDemand = values["start-server"] === true || config().startServer;
  const noServer = (bank: string, socket: string | undefined, base: string, why: string) => note(noServerLine(bank, why, onDemand ? { socket, idleExitMs, cwd: base } : null));
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
    const input = parseInput(await readStdin());
    waitingFor = "server";
    if (typeof input === "string") {
      note(input);
      return 0;
    }
    if (!input.prompt.trim()) return 0;
    const base = hookBase(input);
    const bank = resolve(base, bankDir(values.bank, base));
    const socket = values.socket === undefined ? undefined : resolve(base, values.socket);
    // a fallback socket folder taken by another user is PERMISSION_DENIED: a line, never a blocked prompt
    const endpoint = await findEndpoint({ bank, socket }).catch((err: unknown) => {
      note(`cannot look for the gavel server: ${(err as Error).message}`);
      return undefined;
    });
    if (endpoint === undefined) return 0;
    if (!endpoint) {
      noServer(bank, socket, base, "");
      return 0;
    }
    const client = await ServeClient.open(endpoint).catch((err: unknown) => {
      if (err instanceof GavelError && err.code === "FILE_NOT_FOUND") noServer(bank, socket, base, "a stale socket; ");
      else note(`cannot reach the gavel server: ${(err as Error).message}`);
      return null;
    });
    if (!client) return 0;
    try {
      const left = Math.max(1, Math.ceil(budget - (performance.now() - t0)));
      const res = await client.request<RouteAnswer>(values.verdict ? "route" : "glance", { task: input.prompt }, { timeoutMs: left });
      const best = res.shortlist[0];
      if (res.abstained || !res.skill || !res.winner || !best || !((best.S ?? -Infinity) >= min)) return 0;
      process.stdout.write(JSON.stringify({ hookSpecificOutput: { hookEventName: "UserPromptSubmit", additionalContext: hookContext(res) } }) + "\n");
    } catch (err) {
      if (err instanceof GavelError && err.code === "ABORTED") note(`no answer within ${budget} ms (the gavel server is busy)`);
      else note((err as Error).message);
    } finally {
      client.close();
    }
    return 0;
  } finally {
    clearTimeout(watchdog);
  }
}

/** A path quoted for the shell Claude Code runs hook commands with. */
function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`;
}

/** Whether a hook command is one of ours (so that a second install replaces it). */
function isGavelHook(command: unknown): boolean {
  return typeof command === "string" && /\bhook claude-code\b/.test(command) && /gavel/.test(command);
}

interface HookEntry {
  type: string;
  command?: string;
  timeout?: number;
}
interface MatcherGroup {
  matcher?: string;
  hooks?: HookEntry[];
}

/**
 * Merges the gavel hook into a settings object: other settings and other hooks are kept; an earlier
 * gavel hook is replaced in place (idempotent).
 */
export function mergeHook(settings: Record<string, unknown>, command: string): Record<string, unknown> {
  const hooks = (typeof settings.hooks === "object" && settings.hooks !== null ? settings.hooks : {}) as Record<string, MatcherGroup[]>;
  const groups = Array.isArray(hooks.UserPromptSubmit) ? hooks.UserPromptSubmit : [];
  const entry: HookEntry = { type: "command", command, timeout: INSTALLED_HOOK_TIMEOUT_S };
  let found = false;
  const next = groups.map((g) => ({
    ...g,
    hooks: (g.hooks ?? []).map((h) => {
      if (!isGavelHook(h.command)) return h;
      found = true;
      return entry;
    }),
  }));
  if (!found) next.push({ hooks: [entry] });
  return { ...settings, hooks: { ...hooks, UserPromptSubmit: next } };
}

/** How the installed command starts gavel (`--runner`). */
export type HookRunner = "project" | "npx" | "absolute";

/**
 * The launcher the installed command starts with. `project`: the project's own install,
 * `"$CLAUDE_PROJECT_DIR"/node_modules/.bin/gavel` (no npm in the way, so the fastest); `npx`:
 * `npx --no gavel`, which finds gavel in the project's (or a global) install and never downloads
 * anything (`--no`: a missing gavel is a hook error, not an install of whatever package is called
 * "gavel"); `absolute`: this node and this CLI by absolute path (one machine only).
 */
export async function hookLauncher(runner: HookRunner): Promise<string> {
  if (runner === "project") return '"$CLAUDE_PROJECT_DIR"/node_modules/.bin/gavel';
  if (runner === "npx") return "npx --no gavel";
  return [process.execPath, await realpath(process.argv[1])].map(shellQuote).join(" ");
}

/**
 * A path flag as the installed command carries it: in a project's settings (shared through git), a
 * path inside the project is written relative to it (the hook resolves it against
 * `CLAUDE_PROJECT_DIR`); in the user's settings a relative path stays relative (so it names a folder
 * of each project); anything else is made absolute.
 */
export function portablePath(given: string, root: string, scope: "project" | "user"): string {
  if (scope === "user") return isAbsolute(given) ? given : given.split(sep).join("/");
  const abs = resolve(given);
  const rel = relative(root, abs);
  return rel && !rel.startsWith("..") && !isAbsolute(rel) ? rel.split(sep).join("/") : abs;
}

/** The settings file's object; a missing or empty file is `{}`, anything but a JSON object a GavelError. */
export async function readSettings(file: string): Promise<Record<string, unknown>> {
  const text = await readFile(file, "utf8").catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return null;
    throw new GavelError(`cannot read ${file}: ${err.code ?? err.message}`, "FILE_NOT_FOUND", { cause: err });
  });
  if (text === null || !text.trim()) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new GavelError(`${file} is not valid JSON (${(err as Error).message.split("\n")[0]}); fix it, then install the hook again`, "INVALID_ARGUMENT");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new GavelError(`${file} is not a JSON object; fix it, then install the hook again`, "INVALID_ARGUMENT");
  return parsed as Record<string, unknown>;
}

/** `gavel hook install claude-code [--project|--user|--local]`. */
async function installHook(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { project: { type: "boolean" }, user: { type: "boolean" }, local: { type: "boolean" }, dir: { type: "string" }, runner: { type: "string" }, ...HOOK_OPTIONS },
  });
  const runners: HookRunner[] = ["project", "npx", "absolute"];
  if (
    positionals[0] !== "claude-code" ||
    positionals.length !== 1 ||
    [values.project, values.user, values.local].filter(Boolean).length > 1 ||
    (values.runner !== undefined && !runners.includes(values.runner as HookRunner)) ||
    (values.user && values.runner === "project")
  ) {
    console.error(hook.help);
    return 2;
  }
  const root = values.user ? homedir() : resolve(values.dir ?? process.cwd());
  const file = join(root, ".claude", values.local ? "settings.local.json" : "settings.json");
  const scope = values.user ? "user" : "project";
  const hasProjectBin = !values.user && (await access(join(root, "node_modules", ".bin", "gavel")).then(() => true, () => false));
  const runner = (values.runner as HookRunner | undefined) ?? (hasProjectBin ? "project" : "npx");
  const flags = [
    ...(values.bank ? ["--bank", portablePath(values.bank, root, scope)] : []),
    ...(values.socket ? ["--socket", portablePath(values.socket, root, scope)] : []),
    ...(values.verdict ? ["--verdict"] : []),
    ...(values["min-score"] ? ["--min-score", values["min-score"]] : []),
    ...(values["timeout-ms"] ? ["--timeout-ms", values["timeout-ms"]] : []),
    ...(values["start-server"] ? ["--start-server"] : []),
    ...(values["idle-exit-ms"] ? ["--idle-exit-ms", values["idle-exit-ms"]] : []),
  ];
  const command = [await hookLauncher(runner), "hook", "claude-code", ...flags.map(shellQuote)].join(" ");
  const settings = await readSettings(file); // a malformed file stops here, untouched
  await mkdir(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(mergeHook(settings, command), null, 2) + "\n");
  await rename(tmp, file);
  const how = values["start-server"] ? "the hook starts `gavel serve` when none runs" : "start the router with `gavel serve`, or install with --start-server; without it the hook adds nothing";
  console.log(`gavel hook: UserPromptSubmit → ${command}\n  written to ${file} (${how})`);
  return 0;
}

/** `gavel hook`: the Claude Code hook, and its installer. */
export const hook: Command = {
  summary: "Claude Code UserPromptSubmit hook over the resident router (and its installer)",
  help: `usage: gavel hook claude-code [options]          (reads Claude Code's hook JSON on stdin)
       gavel hook install claude-code [--project | --user | --local] [--runner R] [options]

  claude-code           asks the running \`gavel serve\` for the skill the prompt needs and prints
                        {"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":…}}
                        naming it, why, and its SKILL.md; nothing when the ruling abstains, and
                        nothing but one line on stderr when no server runs, the server is busy past
                        the budget, or anything fails. Always exit 0 (exit 2 would block the prompt)
  install claude-code   writes the hook into .claude/settings.json (--project, the default: under
                        the current folder or --dir; --user: ~/.claude; --local: settings.local.json),
                        merged with what is there; installing again replaces it
  --runner R            how the installed command starts gavel: project ("$CLAUDE_PROJECT_DIR"/
                        node_modules/.bin/gavel; the default where the project has it), npx
                        (npx --no gavel; the default otherwise), absolute (this node and CLI's paths)

  --bank, -b DIR        the bank whose server to ask     [$GAVEL_BANK, default <project>/.gavel/bank;
                        <project> is $CLAUDE_PROJECT_DIR, else the prompt's cwd; relative to it]
  --socket PATH         the server's socket (default: the bank's)
  --verdict             ask for the full route (glance + verdict) instead of the glance-only decision
  --min-score S         print nothing unless the winner's S is at least S
  --timeout-ms N        the run's budget: give up (one line on stderr) after N ms (default ${DEFAULT_HOOK_TIMEOUT_MS})
  --start-server        when no server runs for the bank, start a detached \`gavel serve --idle-exit-ms\`
                        for it (its output in <socket>.log) and return at once: the prompt that
                        starts it gets nothing, the next ones are served      [$GAVEL_START_SERVER=1]
  --idle-exit-ms N      how long a server the hook started waits with no client before it exits
                        (default ${DEFAULT_ON_DEMAND_IDLE_MS}: 30 minutes)`,
  async run(args) {
    if (args[0] === "install") return installHook(args.slice(1));
    if (args[0] === "claude-code") return runClaudeCodeHook(args.slice(1));
    // a hook command with a typo must not block the user's prompt: exit 0, one line on stderr
    console.error(`gavel hook: ${args[0] === undefined ? "no hook named" : `unknown hook ${JSON.stringify(args[0])}`} (expected \`gavel hook claude-code\` or \`gavel hook install claude-code\`; gavel hook --help); nothing added to the prompt`);
    return 0;
  },
};
