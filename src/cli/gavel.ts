// The `gavel` command line. Each subcommand lives in its own module under src/cli/commands/.
import { GavelError } from "../errors.js";
import { commands } from "./commands/index.js";

function usage(): string {
  const lines = ["usage: gavel <command> [options]", "", "commands:"];
  for (const [name, c] of Object.entries(commands)) lines.push(`  ${name.padEnd(10)} ${c.summary}`);
  lines.push("", "gavel <command> --help shows a command's options.");
  return lines.join("\n");
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "--help" || name === "-h" || name === "help") {
    console.log(usage());
    return name ? 0 : 1;
  }
  const command = commands[name];
  if (!command) {
    console.error(`gavel: unknown command '${name}'\n\n${usage()}`);
    return 2;
  }
  if (rest.includes("--help") || rest.includes("-h")) {
    console.log(command.help);
    return 0;
  }
  return command.run(rest);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof GavelError) console.error(`gavel: ${err.message} [${err.code}]`);
    else if (err instanceof Error && (err as NodeJS.ErrnoException).code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") console.error(`gavel: ${err.message}`);
    else console.error(err);
    process.exitCode = 1;
  },
);
