import type { FlagSpecs } from "../ui/flags.js";

/**
 * One `gavel` subcommand: its line in the usage, its --help, its options (util.parseArgs specs, the
 * ones its run parses with parseFlags: the CLI names the commands that take an option another lacks),
 * and what it runs (the exit code).
 */
export interface Command {
  summary: string;
  help: string;
  options: FlagSpecs;
  run(args: string[]): Promise<number>;
}
