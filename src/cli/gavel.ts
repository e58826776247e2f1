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
    else if (err instanceof Error && String((err as NodeJS.ErrnoException).code).startsWith("ERR_PARSE_ARGS_")) {
      // an unknown option, a missing option value, a stray positional argument: a usage error
      console.error(`gavel: ${err.message} (gavel ${process.argv[2] ?? ""} --help shows the usage)`);
      process.exitCode = 2;
      return;
    } else console.error(err);
    process.exitCode = 1;
  },
);
