#!/usr/bin/env node
// Writes docs/cli.md from the CLI's own help texts (`gavel --help`, `gavel <command> --help`), so the
// reference says exactly what the built CLI says. Run after `npm run build`:
//   node scripts/gen/cli-doc.mjs [path/to/gavel.js] > docs/cli.md
import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const gavel = process.argv[2] ?? join(root, "dist", "cli", "gavel.js");
/** Help text of the CLI (no GAVEL_* variables, so defaults print as a user sees them). */
function help(args) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("GAVEL_")));
  return execFileSync(process.execPath, [gavel, ...args], { encoding: "utf8", env }).trimEnd();
}

const top = help(["--help"]);
const names = [...top.matchAll(/^ {2}([a-z][a-z-]*)\s/gm)].map((m) => m[1]);
const out = [
  "# CLI reference: `gavel`",
  "",
  "Generated from the CLI's help texts by `node scripts/gen/cli-doc.mjs > docs/cli.md` (after `npm run build`);",
  "edit the help texts in `src/cli/commands/`, not this page. Environment variables and defaults:",
  "[configuration.md](configuration.md).",
  "",
  "```text",
  top,
  "```",
  "",
  "## Exit codes",
  "",
  "| code | meaning |",
  "| --- | --- |",
  "| 0 | success (also `--help`, `--version` / `-v` / `-V`; `gavel hook claude-code` always exits 0) |",
  "| 1 | a failure: a `GavelError` (printed as `gavel: <message> [<CODE>]`) or another error; `gavel check` found a problem; `gavel install` installed nothing and some skills failed; `gavel sync` failed to install a skill; `gavel uninstall` removed nothing (its output says so: `no installed skill …`, with `--json` the result `{\"skill\", \"removed\": false, \"server\": false}` on stdout, not an error object); an option value of the wrong kind or out of range (`--context abc`, `--top 0`: `INVALID_ARGUMENT`, naming the flag); a file given to `gavel install` that is not a skill library (a text, a PDF: `INVALID_ARGUMENT`); `gavel` with no command |",
  "| 2 | a usage error: an unknown command or option, a missing option value or argument (a value given but of the wrong kind is exit 1, above). A mistyped flag is one line naming it and the command, with what was probably meant: `gavel: unknown option --tpo for gavel glance; did you mean --top? (gavel glance --help shows the usage)` |",
  "| 75 | `gavel train --stop-after S` stopped with a checkpoint written; run again with `--resume` |",
  "| 130 | interrupted by SIGINT (Ctrl-C) |",
  "",
  "SIGINT (Ctrl-C) stops a long command at its next check; the command still closes its bank and model, then",
  "exits 130. A command with nothing to cancel, or a second Ctrl-C, exits 130 at once.",
  "",
  "With `--json`, a failure is one JSON object on **stderr** (stdout carries only results), with the exit",
  "code as above: `{\"error\":{\"code\":\"FILE_NOT_FOUND\",\"message\":\"…\",\"exitCode\":1}}`. `code` is the",
  "`GavelError` code, `USAGE` for a usage error, `ABORTED` after Ctrl-C, `INTERNAL` for an unexpected error.",
  "A permission failure (EACCES, EPERM) is `PERMISSION_DENIED` with one line, never a stack; a full disk (ENOSPC, EDQUOT) while a bank is written is `NO_SPACE`, and what the bank committed before stands.",
  "",
];
for (const name of names) out.push(`## gavel ${name}`, "", "```text", help([name, "--help"]), "```", "");
process.stdout.write(out.join("\n"));
