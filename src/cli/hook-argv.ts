/**
 * Whether a command line (the arguments after the script) is the Claude Code hook, `gavel hook
 * claude-code …` without --help: the path that both entries (bin.ts, gavel.ts) take before loading
 * anything else.
 */
export function isClaudeCodeHook(argv: readonly string[]): boolean {
  return argv[0] === "hook" && argv[1] === "claude-code" && !argv.includes("--help") && !argv.includes("-h");
}
