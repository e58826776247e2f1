/** One `gavel` subcommand: its line in the usage, its --help, and what it runs (the exit code). */
export interface Command {
  summary: string;
  help: string;
  run(args: string[]): Promise<number>;
}
