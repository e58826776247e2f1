export interface Command {
  summary: string;
  help: string;
  run(args: string[]): Promise<number>;
}
