/**
 * The command line of the backbone scripts (prepare.ts, pack-corpus.ts, corpus/build.ts), read one
 * way: `--name value` options with defaults, and the repository root they resolve paths against.
 */
import { resolve } from "node:path";

/** The repository root: $GAVEL_ROOT, else the current directory. */
export const ROOT = resolve(process.env.GAVEL_ROOT ?? process.cwd());

/** The script's arguments (after node and the script). */
export const args = process.argv.slice(2);

/** The value after `--name`, or `dflt` when the option is absent or has no value. */
export function opt(name: string, dflt: string): string {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
}
