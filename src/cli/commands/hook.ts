// `gavel hook`: the command, with `gavel hook install claude-code`, which writes the Claude Code hook
// into .claude/settings.json. The hook itself (`gavel hook claude-code`) is hook-run.ts, which the
// `gavel` executable runs without loading this module (bin.ts).
import { access, realpath } from "node:fs/promises";
import { homedir } from "node:os";
import { isAbsolute, join, resolve, sep } from "node:path";
import type { Command } from "./types.js";
import { GavelError } from "../../errors.js";
import { DEFAULT_ON_DEMAND_IDLE_MS } from "../../serve/start.js";
import { DEFAULT_HOOK_TIMEOUT_MS, HOOK_OPTIONS, hookOptionProblem, MAX_HOOK_TIMEOUT_MS, INSTALLED_HOOK_TIMEOUT_S, runClaudeCodeHook } from "./hook-run.js";
import { UsageError } from "../usage-error.js";
import { parseFlags } from "../ui/flags.js";
import { ensureFolder, existingFolder, mergeHook, readSettings, settingsTarget, writeSettings } from "./hook-settings.js";
import { expandHome, pathInside } from "../../util/same-path.js";

export { DEFAULT_HOOK_TIMEOUT_MS, hookBase, hookContext, INSTALLED_HOOK_TIMEOUT_S, runClaudeCodeHook } from "./hook-run.js";

/** A path quoted for the shell Claude Code runs hook commands with. */
function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`;
}

/** How the installed command starts gavel (`--runner`). */
export type HookRunner = "project" | "npx" | "path" | "absolute";

/**
 * The launcher the installed command starts with. `project`: the project's own install,
 * `"$CLAUDE_PROJECT_DIR"/node_modules/.bin/gavel` (no npm in the way, so the fastest); `npx`:
 * `npx --no gavel`, which finds gavel in the project's (or a global) install and never downloads
 * anything (`--no`: a missing gavel is a hook error, not an install of whatever package is called
 * "gavel", and npm's own start costs the hook a second); `path`: `gavel`, the executable found on
 * PATH (a global install), as fast as `project`; `absolute`: this node and this CLI by absolute path
 * (one machine only).
 */
export async function hookLauncher(runner: HookRunner): Promise<string> {
  if (runner === "project") return '"$CLAUDE_PROJECT_DIR"/node_modules/.bin/gavel';
  if (runner === "npx") return "npx --no gavel";
  if (runner === "path") return "gavel";
  return [process.execPath, await realpath(process.argv[1])].map(shellQuote).join(" ");
}

/**
 * A path flag as the installed command carries it: in a project's settings (shared through git), a
 * path inside the project is written relative to it (the hook resolves it against
 * `CLAUDE_PROJECT_DIR`); in the user's settings a relative path stays relative (so it names a folder
 * of each project); anything else is made absolute. A leading `~/` is the home folder (the shell
 * leaves it as it is in `--bank=~/b`, and the hook would take it as a folder named `~`).
 */
export function portablePath(given: string, root: string, scope: "project" | "user"): string {
  given = expandHome(given, homedir());
  if (scope === "user") return isAbsolute(given) ? given : given.split(sep).join("/");
  const abs = resolve(given);
  // inside as the platform compares paths (a folder named `..bank` is inside); the root itself is absolute
  const rel = pathInside(root, abs);
  return rel !== null ? rel.split(sep).join("/") : abs;
}

/** What is wrong with the installer's arguments, in one line (they are known to be wrong). */
function installUsageProblem(positionals: string[], values: { project?: boolean; user?: boolean; local?: boolean; dir?: string; runner?: string }, runners: HookRunner[]): string {
  if (positionals[0] !== "claude-code" || positionals.length !== 1) return `gavel hook install takes one hook name, claude-code, not ${JSON.stringify(positionals.join(" "))}`;
  if ([values.project, values.user, values.local].filter(Boolean).length > 1) return "at most one of --project, --user, --local";
  if (values.user && values.dir !== undefined) return "--dir names a project's folder: not with --user (~/.claude)";
  if (values.runner !== undefined && !runners.includes(values.runner as HookRunner)) return `--runner must be one of ${runners.join(", ")}, not ${JSON.stringify(values.runner)}`;
  return "--runner project needs a project: not with --user";
}

/** The installer's options: where to write the hook, and the hook's own (written into its command). */
const INSTALL_OPTIONS = { project: { type: "boolean" }, user: { type: "boolean" }, local: { type: "boolean" }, dir: { type: "string" }, runner: { type: "string" }, ...HOOK_OPTIONS } as const;

/** `gavel hook install claude-code [--project|--user|--local]`. */
async function installHook(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags("hook install", { args, allowPositionals: true, options: INSTALL_OPTIONS });
  const runners: HookRunner[] = ["project", "npx", "path", "absolute"];
  if (
    positionals[0] !== "claude-code" ||
    positionals.length !== 1 ||
    [values.project, values.user, values.local].filter(Boolean).length > 1 ||
    (values.runner !== undefined && !runners.includes(values.runner as HookRunner)) ||
    (values.user && (values.runner === "project" || values.dir !== undefined))
  ) {
    throw new UsageError(installUsageProblem(positionals, values, runners), hook.help);
  }
  // a value the hook would refuse at every prompt is refused here, before it is written
  const optionProblem = hookOptionProblem(values);
  if (optionProblem) throw new GavelError(optionProblem, "INVALID_ARGUMENT");
  // an empty --dir ("$DIR" unset) is not the current folder, as an empty --bank is not the default bank
  if (values.dir === "") throw new GavelError('--dir needs a value, got "" (leave the flag out for the current folder)', "INVALID_ARGUMENT");
  const root = values.user ? homedir() : resolve(values.dir ?? process.cwd());
  // an existing folder: a mistyped --dir is not created, only `.claude` in it
  if (values.dir !== undefined) await existingFolder(root, "--dir");
  const file = join(root, ".claude", values.local ? "settings.local.json" : "settings.json");
  const scope = values.user ? "user" : "project";
  const hasProjectBin = !values.user && (await access(join(root, "node_modules", ".bin", "gavel")).then(() => true, () => false));
  const runner = (values.runner as HookRunner | undefined) ?? (hasProjectBin ? "project" : "npx");
  const flags = [
    ...(values.bank ? ["--bank", portablePath(values.bank, root, scope)] : []),
    ...(values.socket ? ["--socket", portablePath(values.socket, root, scope)] : []),
    ...(values.verdict ? ["--verdict"] : []),
    ...(values["no-library-cut"] ? ["--no-library-cut"] : []),
    ...(values["min-score"] ? ["--min-score", values["min-score"]] : []),
    ...(values["timeout-ms"] ? ["--timeout-ms", values["timeout-ms"]] : []),
    ...(values["start-server"] ? ["--start-server"] : []),
    ...(values["idle-exit-ms"] ? ["--idle-exit-ms", values["idle-exit-ms"]] : []),
  ];
  const command = [await hookLauncher(runner), "hook", "claude-code", ...flags.map(shellQuote)].join(" ");
  const settings = await readSettings(file); // a malformed file stops here, untouched
  const target = await settingsTarget(file); // a symbolic link is written through
  await ensureFolder(join(root, ".claude"));
  // Claude Code's own timeout stays above the hook's budget (node's start and the exit grace besides)
  const budgetMs = values["timeout-ms"] === undefined ? DEFAULT_HOOK_TIMEOUT_MS : Number(values["timeout-ms"]);
  const timeoutS = Math.max(INSTALLED_HOOK_TIMEOUT_S, Math.ceil(budgetMs / 1000) + 5);
  await writeSettings(target, JSON.stringify(mergeHook(settings, command, timeoutS), null, 2) + "\n");
  const how = values["start-server"] ? "the hook starts `gavel serve` when none runs" : "start the router with `gavel serve`, or install with --start-server; without it the hook adds nothing";
  console.log(`gavel hook: UserPromptSubmit → ${command}\n  written to ${file}${target === file ? "" : ` (a link to ${target})`} (${how})`);
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
                        the current folder or --dir DIR, an existing folder; --user: ~/.claude;
                        --local: settings.local.json), merged with what is there; installing again
                        replaces it; a file it cannot edit without loss is refused, left as it is
  --runner R            how the installed command starts gavel: project ("$CLAUDE_PROJECT_DIR"/
                        node_modules/.bin/gavel; the default where the project has it), npx
                        (npx --no gavel; the default otherwise; npm's start adds ~1 s a prompt),
                        path (gavel on PATH: a global install), absolute (this node and CLI's paths)

  --bank, -b DIR        the bank whose server to ask     [$GAVEL_BANK, default <project>/.gavel/bank;
                        <project> is $CLAUDE_PROJECT_DIR, else the prompt's cwd; relative to it]
  --socket PATH         the server's socket (default: the bank's)
  --verdict             ask for the full route (glance + verdict) instead of the glance-only decision
  --no-library-cut      under the abstention reference's size (125 skills for gavel-mini's), abstain
                        by the calibrated model alone, not also at the library's own cut
  --min-score S         print nothing unless the winner's S is at least S
  --timeout-ms N        the run's budget: give up (one line on stderr) after N ms (default ${DEFAULT_HOOK_TIMEOUT_MS}, at most ${MAX_HOOK_TIMEOUT_MS})
  --start-server        when no server runs for the bank, start a detached \`gavel serve --idle-exit-ms\`
                        for it (its output in <socket>.log) and return at once: the prompt that
                        starts it gets nothing, the next ones are served      [$GAVEL_START_SERVER=1]
  --idle-exit-ms N      how long a server the hook started waits with no client before it exits
                        (default ${DEFAULT_ON_DEMAND_IDLE_MS}: 30 minutes)`,
  options: INSTALL_OPTIONS,
  async run(args) {
    if (args[0] === "install") return installHook(args.slice(1));
    if (args[0] === "claude-code") return runClaudeCodeHook(args.slice(1));
    // a hook command with a typo must not block the user's prompt: exit 0, one line on stderr
    console.error(`gavel hook: ${args[0] === undefined ? "no hook named" : `unknown hook ${JSON.stringify(args[0])}`} (expected \`gavel hook claude-code\` or \`gavel hook install claude-code\`; gavel hook --help); nothing added to the prompt`);
    return 0;
  },
};
