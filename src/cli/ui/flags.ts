/**
 * The `gavel` commands' flags: the one place the CLI calls Node's `util.parseArgs`, whose rules stay
 * as they are (short flags and their groups, `--`, strict mode, values). What changes is a mistyped
 * command line: instead of Node's message, a {@link FlagError} (a usage error, exit 2, code USAGE in
 * JSON) that names the flag and the command in the project's words and says what was probably meant:
 * a near option of the command (a unique prefix, or Damerau–Levenshtein distance ≤ 2), the other
 * commands that take it (added by the CLI, which knows every command's {@link FlagSpecs}), and `--`
 * only for an argument that reads as a task or a path starting with '-'.
 *
 * Kept to node:util and the error classes: the Claude Code hook, which loads almost nothing, parses here too.
 */
import { parseArgs, type ParseArgsConfig } from "node:util";
import { clip } from "../../errors.js";
import { editDistance } from "../../util/validate.js";
import { isUsageError, UsageError } from "../usage-error.js";

/** A command's option specs, as util.parseArgs declares them. */
export type FlagSpecs = NonNullable<ParseArgsConfig["options"]>;

/** What {@link parseFlags} returns: util.parseArgs' result for the same config. */
export type ParsedFlags<T extends ParseArgsConfig> = ReturnType<typeof parseArgs<T>>;

/** What is wrong with a command line, as a {@link FlagError} carries it. */
export interface FlagProblem {
  /** The command, as typed after `gavel` ("route", "hook claude-code"). */
  command: string;
  /**
   * `unknown`: no such option; `missing-value`: a string option with nothing after it; `dash-value`:
   * a string option followed by an argument starting with '-'; `no-value`: a boolean given `=value`;
   * `positional`: an argument where the command takes options only.
   */
  kind: "unknown" | "missing-value" | "dash-value" | "no-value" | "positional";
  /** The command-line argument at fault, whole (`-top` for an unknown `-t`, `--json=1`). */
  arg: string;
  /** The option's name as parseArgs read it (`top`, `t`, `bank`); absent for a positional. */
  name?: string;
  /** The option as typed (`--top`, `-b`); absent for a positional. */
  raw?: string;
  /** The long name of a known option typed short (`bank` for `-b`). */
  long?: string;
  /** The value the option was given (`--json` in `--bank --json`, `1` in `--json=1`). */
  value?: string;
  /** The command's options it was probably meant as (`--topk`). */
  suggestions: readonly string[];
  /** Whether to say that an argument starting with '-' goes after `--`. */
  dashHint: boolean;
  /** The other commands that take this option (filled in by {@link withOtherCommands}). */
  elsewhere: readonly string[];
  /** For a positional: what the command takes instead, when it says (else "options only"). */
  takes?: string;
}

/** A mistyped command line: a usage error (exit 2), one line, the same on a terminal and in JSON. */
export class FlagError extends UsageError {
  readonly flag: FlagProblem;
  constructor(problem: FlagProblem) {
    super(flagMessage(problem), "");
    this.flag = problem;
  }
}

/** Whether `err` is a {@link FlagError}, this bundle's or another's (the lab's commands load apart). */
export function isFlagError(err: unknown): err is FlagError {
  const flag = (err as { flag?: Partial<FlagProblem> } | null)?.flag;
  return isUsageError(err) && typeof flag === "object" && flag !== null && typeof flag.kind === "string" && typeof flag.command === "string";
}

/**
 * util.parseArgs(config), for the command `command` (as typed after `gavel`, for the messages).
 *
 * @throws FlagError for an unknown option, an option's missing or unwanted value, or a positional
 *   argument the command does not take: whatever util.parseArgs refuses in strict mode
 */
export function parseFlags<T extends ParseArgsConfig & { args: string[] }>(command: string, config: T): ParsedFlags<T> {
  try {
    return parseArgs(config);
  } catch (err) {
    if (!String((err as NodeJS.ErrnoException).code).startsWith("ERR_PARSE_ARGS_")) throw err;
    const problem = findProblem(command, config);
    // every refusal of strict mode is one of the problems above; Node's own words only past that
    throw problem ? new FlagError(problem) : new UsageError(`${(err as Error).message.split("\n")[0]}${usageTail(command)}`, "");
  }
}

/** A usage error for a stray argument the command found itself (`takes`: what it takes instead). */
export function strayArgument(command: string, arg: string, takes: string): FlagError {
  return new FlagError({ command, kind: "positional", arg, suggestions: [], dashHint: false, elsewhere: [], takes });
}

/**
 * `err` with the other commands that take its unknown option added to its message (the CLI knows
 * every command's specs; a command parsing its own flags knows only its own); any other error as is.
 */
export function withOtherCommands(err: unknown, commands: Readonly<Record<string, { options: FlagSpecs }>>): unknown {
  if (!isFlagError(err) || err.flag.kind !== "unknown" || !err.flag.raw?.startsWith("--")) return err;
  const name = err.flag.name ?? "";
  const own = err.flag.command.split(" ")[0]; // `hook install` is `gavel hook`'s
  const others = Object.keys(commands).filter((c) => c !== own && Object.hasOwn(commands[c].options, name));
  return others.length === 0 ? err : new FlagError({ ...err.flag, elsewhere: others });
}

/** The first argument strict mode refuses, in the order util.parseArgs checks them. */
function findProblem(command: string, config: ParseArgsConfig & { args: string[] }): FlagProblem | undefined {
  const options: FlagSpecs = config.options ?? {};
  const { tokens } = parseArgs({ ...config, strict: false, allowPositionals: true, tokens: true });
  const base = { command, suggestions: [] as string[], dashHint: false, elsewhere: [] as string[] };
  for (const t of tokens) {
    if (t.kind === "positional" && !config.allowPositionals) {
      const suggestions = Object.hasOwn(options, t.value) ? [`--${t.value}`] : [];
      return { ...base, kind: "positional", arg: t.value, suggestions };
    }
    if (t.kind !== "option") continue;
    const arg = config.args[t.index];
    const spec = Object.hasOwn(options, t.name) ? options[t.name] : undefined;
    if (!spec) return unknownOption(base, options, arg, t.name, t.rawName, config.allowPositionals === true);
    const named = { ...base, arg, name: t.name, raw: t.rawName, ...(t.rawName.startsWith("--") ? {} : { long: t.name }) };
    if (spec.type === "string" && t.value === undefined) return { ...named, kind: "missing-value" };
    if (spec.type === "boolean" && t.value !== undefined) return { ...named, kind: "no-value", value: t.value };
    // util.parseArgs' "ambiguous" value: `--bank --json` took `--json` as the value
    if (!t.inlineValue && t.value !== undefined && t.value.length > 1 && t.value.startsWith("-")) return { ...named, kind: "dash-value", value: t.value };
  }
  return undefined;
}

/** An unknown option's problem, with what it was probably meant as. */
function unknownOption(base: Omit<FlagProblem, "kind" | "arg">, options: FlagSpecs, arg: string, name: string, raw: string, positionals: boolean): FlagProblem {
  const short = !raw.startsWith("--");
  // `-top` is one short flag, -t, to util.parseArgs; typed for --top more likely
  const typed = short ? (arg.startsWith("-") && !arg.startsWith("--") ? arg.slice(1).split("=")[0] : "") : name;
  const suggestions = typed === "" ? [] : nearOptions(typed, Object.keys(options));
  // a task or a path that starts with '-' reads as flags: `--` before it says it is an argument
  const dashHint = positionals && (/\s/.test(arg) || (short && suggestions.length === 0));
  return { ...base, kind: "unknown", arg, name, raw, suggestions: suggestions.map((n) => `--${n}`), dashHint };
}

/**
 * The options `typed` was probably meant as: the one it is a prefix of, else those within
 * Damerau–Levenshtein distance 2 (less for a name of one or two letters) at the least distance, case
 * ignored; at most three, in the command's order.
 */
export function nearOptions(typed: string, names: readonly string[]): string[] {
  const t = typed.toLowerCase();
  if (t === "") return [];
  const exact = names.filter((n) => n.toLowerCase() === t); // --WATCH, -watch: the option itself
  if (exact.length > 0) return exact;
  const prefixed = names.filter((n) => n.length > t.length && n.toLowerCase().startsWith(t));
  if (prefixed.length === 1) return prefixed;
  const limit = Math.min(2, t.length - 1);
  let best: string[] = [];
  let bestD = limit + 1;
  for (const n of names) {
    const d = editDistance(t, n.toLowerCase());
    if (d > limit) continue;
    if (d < bestD) [best, bestD] = [[n], d];
    else if (d === bestD) best.push(n);
  }
  return best.slice(0, 3);
}

/** An argument as a message quotes it: bare when it is plain, else JSON-quoted (one line, clipped). */
function quoted(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? clip(s) : JSON.stringify(clip(s));
}

/** " (gavel route --help shows the usage)": the end of every usage message of a command line. */
function usageTail(command: string): string {
  return ` (gavel ${command} --help shows the usage)`;
}

/** "gavel glance", "gavel glance and gavel mcp", "gavel a, gavel b and 4 other commands". */
function commandList(names: readonly string[]): string {
  const shown = names.slice(0, names.length > 3 ? 2 : 3).map((n) => `gavel ${n}`);
  if (names.length > 3) shown.push(`${names.length - 2} other commands`);
  return shown.length === 1 ? shown[0] : `${shown.slice(0, -1).join(", ")} and ${shown[shown.length - 1]}`;
}

/** A {@link FlagProblem} in words, one line, ending with where the usage is. */
export function flagMessage(p: FlagProblem): string {
  const cmd = `gavel ${p.command}`;
  const raw = p.raw ?? "";
  const option = `${quoted(raw)}${p.long !== undefined ? ` (--${p.long})` : ""}`;
  const parts: string[] = [];
  if (p.kind === "positional") parts.push(`unexpected argument ${quoted(p.arg)}: ${cmd} takes ${p.takes ?? "options only"}`);
  else if (p.kind === "unknown") parts.push(`unknown option ${quoted(raw)}${p.arg !== raw && !p.arg.startsWith(`${raw}=`) ? ` (in ${quoted(p.arg)})` : ""} for ${cmd}`);
  else if (p.kind === "missing-value") parts.push(`option ${option} of ${cmd} needs a value`);
  else if (p.kind === "no-value") parts.push(`option ${option} of ${cmd} takes no value, got ${quoted(p.arg)}`);
  else parts.push(`option ${option} of ${cmd} needs a value, not the option-like ${quoted(p.value ?? "")} (a value starting with '-' is written ${quoted(`--${p.name ?? ""}=${p.value ?? ""}`)})`);
  if (p.elsewhere.length > 0) parts.push(`${commandList(p.elsewhere)} take${p.elsewhere.length === 1 ? "s" : ""} ${quoted(raw)}`);
  if (p.dashHint) parts.push(`an argument starting with '-' goes after --: ${cmd} -- ${quoted(p.arg)}`);
  if (p.suggestions.length > 0) parts.push(`did you mean ${p.suggestions.join(" or ")}?`);
  return `${parts.join("; ")}${usageTail(p.command)}`;
}
