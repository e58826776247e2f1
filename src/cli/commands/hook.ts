// `gavel hook claude-code`: a Claude Code UserPromptSubmit hook over the resident router, and
// `gavel hook install claude-code`, which writes it into .claude/settings.json.
//
// The hook runs once per prompt, so it must start fast: this module imports only node built-ins and
// the serve client (no model, no addon). Whatever goes wrong, it exits 0 and prints nothing on
// stdout (one line on stderr at most): a hook must never break the user's prompt.
import { parseArgs } from "node:util";
import { mkdir, readFile, realpath, rename, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { connectIfRunning } from "../../serve/client.js";
import type { Command } from "./types.js";
import { bankDir } from "../../config.js";

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

/** The hook itself; always 0. */
export async function runClaudeCodeHook(args: string[]): Promise<number> {
  let values: { bank?: string; socket?: string; verdict?: boolean; "min-score"?: string; "timeout-ms"?: string };
  try {
    values = parseArgs({ args, options: HOOK_OPTIONS }).values;
  } catch (err) {
    console.error(`gavel hook: ${(err as Error).message}`);
    return 0;
  }
  const input = parseInput(await readStdin());
  if (typeof input === "string") {
    console.error(`gavel hook: ${input}; nothing added to the prompt`);
    return 0;
  }
  if (!input.prompt.trim()) return 0;
  const bank = bankDir(values.bank, input.cwd ?? process.cwd());
  const client = await connectIfRunning({ bank: resolve(input.cwd ?? process.cwd(), bank), socket: values.socket });
  if (!client) return 0; // no resident router: quietly nothing (no model load here)
  try {
    const timeoutMs = Number(values["timeout-ms"] ?? 5000);
    const res = await client.request<RouteAnswer>(values.verdict ? "route" : "glance", { task: input.prompt }, { timeoutMs });
    const min = values["min-score"] === undefined ? -Infinity : Number(values["min-score"]);
    const best = res.shortlist[0];
    if (res.abstained || !res.skill || !res.winner || !best || !((best.S ?? -Infinity) >= min)) return 0;
    process.stdout.write(JSON.stringify({ hookSpecificOutput: { hookEventName: "UserPromptSubmit", additionalContext: hookContext(res) } }) + "\n");
  } catch (err) {
    console.error(`gavel hook: ${(err as Error).message}; nothing added to the prompt`);
  } finally {
    client.close();
  }
  return 0;
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
  const entry: HookEntry = { type: "command", command, timeout: 10 };
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

/** `gavel hook install claude-code [--project|--user|--local]`. */
async function installHook(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { project: { type: "boolean" }, user: { type: "boolean" }, local: { type: "boolean" }, dir: { type: "string" }, ...HOOK_OPTIONS },
  });
  if (positionals[0] !== "claude-code" || positionals.length !== 1 || [values.project, values.user, values.local].filter(Boolean).length > 1) {
    console.error(hook.help);
    return 2;
  }
  const root = values.user ? homedir() : resolve(values.dir ?? process.cwd());
  const file = join(root, ".claude", values.local ? "settings.local.json" : "settings.json");
  const script = await realpath(process.argv[1]);
  const flags = [
    ...(values.bank ? ["--bank", resolve(values.bank)] : []),
    ...(values.socket ? ["--socket", resolve(values.socket)] : []),
    ...(values.verdict ? ["--verdict"] : []),
    ...(values["min-score"] ? ["--min-score", values["min-score"]] : []),
  ];
  const command = [process.execPath, script, "hook", "claude-code", ...flags].map(shellQuote).join(" ");
  let settings: Record<string, unknown> = {};
  const text = await readFile(file, "utf8").catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return null;
    throw err;
  });
  if (text !== null && text.trim()) {
    const parsed: unknown = JSON.parse(text); // a malformed file stops here, untouched
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error(`${file} is not a JSON object; fix it first`);
    settings = parsed as Record<string, unknown>;
  }
  await mkdir(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(mergeHook(settings, command), null, 2) + "\n");
  await rename(tmp, file);
  console.log(`gavel hook: UserPromptSubmit → ${command}\n  written to ${file} (start the router with \`gavel serve\`; without it the hook does nothing)`);
  return 0;
}

/** `gavel hook`: the Claude Code hook, and its installer. */
export const hook: Command = {
  summary: "Claude Code UserPromptSubmit hook over the resident router (and its installer)",
  help: `usage: gavel hook claude-code [options]          (reads Claude Code's hook JSON on stdin)
       gavel hook install claude-code [--project | --user | --local] [options]

  claude-code           asks the running \`gavel serve\` for the skill the prompt needs and prints
                        {"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":…}}
                        naming it, why, and its SKILL.md; nothing when the ruling abstains, when no
                        server runs, or on any error (always exit 0)
  install claude-code   writes the hook into .claude/settings.json (--project, the default: under
                        the current folder or --dir; --user: ~/.claude; --local: settings.local.json),
                        merged with what is there; installing again replaces it

  --bank, -b DIR        the bank whose server to ask     [$GAVEL_BANK, default <prompt cwd>/.gavel/bank]
  --socket PATH         the server's socket (default: the bank's)
  --verdict             ask for the full route (glance + verdict) instead of the glance-only decision
  --min-score S         print nothing unless the winner's S is at least S
  --timeout-ms N        give up (print nothing) after N ms (default 5000)`,
  async run(args) {
    if (args[0] === "install") return installHook(args.slice(1));
    if (args[0] === "claude-code") return runClaudeCodeHook(args.slice(1));
    console.error(this.help);
    return 2;
  },
};
