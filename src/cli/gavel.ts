// The `gavel` command line. Each subcommand lives in its own module under src/cli/commands/.
//
// Commands are imported lazily: `gavel hook claude-code` runs once per prompt and must start fast, so
// it imports only the serve client (node built-ins), never the command table, the model or the addon.
// tsup splits the dynamic imports into chunks (dist/cli/gavel.js imports no addon statically). The
// `gavel` executable is bin.ts (dist/cli/gavel.cjs), which runs the hook itself and imports this
// module for every other command.
import { availableParallelism } from "node:os";
import { GavelError, MESSAGE_CHARS, clip, clipMessage } from "../errors.js";
import type { Command } from "./commands/types.js";
import { LAB_COMMANDS, loadLabCommands } from "./lab.js";
import { ensureThreadPoolSize } from "../config.js";
import { isClaudeCodeHook } from "./hook-argv.js";
import { isUsageError, UsageError } from "./usage-error.js";
import { withOtherCommands } from "./ui/flags.js";
import { errnoCause, NO_SPACE_ERRNOS, PERMISSION_ERRNOS } from "../util/errno.js";

// libuv's pool (4 threads unless told otherwise) runs every native verb, projection, cover and file
// write; an install keeps 8 skills in flight, which a many-core machine can serve at once. Read by
// libuv when the pool first starts, so it is set before any command runs.
ensureThreadPoolSize(Math.min(16, Math.max(4, availableParallelism())));

/**
 * Whether `err` is a GavelError. The lab's commands run from dist/lab, which uses the runtime of
 * dist/index.js, a copy of the classes other than this bundle's, so `instanceof` alone misses theirs.
 */
function isGavelError(err: unknown): err is GavelError {
  return err instanceof GavelError || (err instanceof Error && err.name === "GavelError" && typeof (err as { code?: unknown }).code === "string");
}

/**
 * The runtime's commands and the lab's (loaded from gavel-router/lab, ./lab.ts): `none` leaves the lab
 * unloaded, `optional` (the usage) lists it when it is there, `required` (a lab command) throws without it.
 */
async function commandTable(lab: "none" | "optional" | "required"): Promise<Record<string, Command>> {
  const { commands } = await import("./commands/index.js");
  if (lab === "none") return commands;
  const labCommands = await loadLabCommands().catch((err: unknown) => {
    if (lab === "required" || !isGavelError(err)) throw err;
    return {};
  });
  return { ...commands, ...labCommands };
}

function usage(commands: Record<string, Command>): string {
  const lines = ["usage: gavel <command> [options]", "", "commands:"];
  const width = Math.max(...Object.keys(commands).map((name) => name.length)) + 1; // every summary in one column
  for (const [name, c] of Object.entries(commands)) lines.push(`  ${name.padEnd(width)} ${c.summary}`);
  lines.push("", "gavel <command> --help shows a command's options; gavel --version (-v, -V) the version.");
  return lines.join("\n");
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  // the Claude Code hook's fast path: no command table, no addon (the `gavel` executable, bin.ts, takes
  // it before this module loads)
  if (isClaudeCodeHook(argv)) return (await import("./commands/hook-run.js")).runClaudeCodeHook(rest.slice(1));
  // Ctrl-C: a command that cancels (install, sync, serve, mcp, …) stops its work and closes its bank
  // and model, then exits 130; one that does not, or a second Ctrl-C, exits 130 at once.
  process.on("SIGINT", () => {
    interrupted = true;
    if (process.listenerCount("SIGINT") === 1) process.exit(EXIT_SIGINT);
  });
  if (name === "--version" || name === "-V" || name === "-v" || name === "version") {
    const { packageVersion } = await import("./ui/version.js");
    console.log(`gavel-router ${packageVersion()}`);
    return 0;
  }
  const help = !name || name === "--help" || name === "-h" || name === "help";
  const commands = await commandTable(LAB_COMMANDS.includes(name) ? "required" : help ? "optional" : "none");
  if (help) {
    console.log(usage(commands));
    return name ? 0 : 1;
  }
  const command = commands[name];
  // the usage then lists every command, the lab's too where it is installed, as --help does
  if (!command) throw new UsageError(`unknown command '${clip(name)}' (gavel --help lists them)`, `gavel: unknown command '${clip(name)}'\n\n${usage(await commandTable("optional"))}`);
  // only before a `--`: past it, `-h` is an argument (a skill named -h)
  const flags = rest.includes("--") ? rest.slice(0, rest.indexOf("--")) : rest;
  if (flags.includes("--help") || flags.includes("-h")) {
    console.log(command.help);
    return 0;
  }
  // an unknown option another command takes: its message says which (every command's specs are here)
  return command.run(rest).catch((err: unknown) => {
    throw withOtherCommands(err, commands);
  });
}

/** The exit code after SIGINT (128 + 2, as a shell reports a process that Ctrl-C ended). */
const EXIT_SIGINT = 130;
/** Set once SIGINT arrives: the command then exits 130, whatever it returned. */
let interrupted = false;

/**
 * A failure as the user sees it: the code (a GavelError's, `USAGE` for a usage error), one line of
 * message, and the exit code. A permission failure that reached here untyped is PERMISSION_DENIED,
 * a full disk NO_SPACE, one line each (never a stack); any other untyped error keeps its stack in text output.
 */
function describeFailure(err: unknown): { code: string; message: string; exit: number; text: string } {
  if (isGavelError(err)) return { code: err.code, message: err.message, exit: 1, text: `gavel: ${err.message} [${err.code}]` };
  // a missing or stray argument the command found itself: its help on a terminal, one line in JSON
  // (the help, then what was wrong, last, where the eye lands)
  // (an unknown option, a missing option value, a stray positional argument: one line, no help)
  if (isUsageError(err)) return { code: "USAGE", message: err.message, exit: 2, text: err.text.trim() === "" ? `gavel: ${err.message}` : `${err.text.trimEnd()}\n\ngavel: ${err.message}` };
  if (errnoCause(err, PERMISSION_ERRNOS) !== undefined) {
    const message = `permission denied: ${clipMessage(err)}`;
    return { code: "PERMISSION_DENIED", message, exit: 1, text: `gavel: ${message} [PERMISSION_DENIED]` };
  }
  if (errnoCause(err, NO_SPACE_ERRNOS) !== undefined) {
    const message = `no space left: ${clipMessage(err)}`;
    return { code: "NO_SPACE", message, exit: 1, text: `gavel: ${message} [NO_SPACE]` };
  }
  const message = clip(err instanceof Error ? err.message : String(err), MESSAGE_CHARS);
  return { code: "INTERNAL", message, exit: 1, text: err instanceof Error ? withFrames(err, message) : message };
}

/** An untyped error as a bug report: its name, its message as cut, then its stack's frames (the stack repeats the message whole). */
function withFrames(err: Error, message: string): string {
  const frames = (err.stack ?? "").split("\n").filter((l) => /^\s+at /.test(l));
  return [`${err.name}: ${message}`, ...frames].join("\n");
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = interrupted ? EXIT_SIGINT : code;
  },
  (err: unknown) => {
    const f = describeFailure(err);
    // With --json a failure is one JSON object on stderr (stdout carries only results).
    if (process.argv.includes("--json")) console.error(JSON.stringify({ error: { code: interrupted ? "ABORTED" : f.code, message: f.message, exitCode: interrupted ? EXIT_SIGINT : f.exit } }));
    else console.error(interrupted ? `gavel: interrupted (${f.message}) [ABORTED]` : f.text);
    process.exitCode = interrupted ? EXIT_SIGINT : f.exit;
  },
);
