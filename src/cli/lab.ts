/**
 * The lab's commands (`gavel train`, `eval`, `calibrate`, `layer`, `train-gate`) live in lab/, apart
 * from the runtime, and the runtime never imports the lab statically. The CLI loads their table when
 * one of them is called (or the usage lists every command), by a dynamic import of the lab's public
 * entry under the package's own name, `gavel-router/lab`:
 * - built, Node resolves a package's own name from inside it (self-reference through package.json
 *   "exports") to dist/lab/index.js; the CLI's bundle keeps the name external (tsup.config.ts), so the
 *   lab is never copied into dist/cli and `gavel hook` or `gavel route` never load it;
 * - from the sources, tsc, vitest and dependency-cruiser resolve it to lab/index.ts (tsconfig.json
 *   "paths", vite.config.ts); .dependency-cruiser.cjs allows this one dynamic import from src/ to lab/.
 *
 * @module
 */
import { GavelError } from "../errors.js";
import type { Command } from "./commands/types.js";

/** The names of the lab's commands, known without loading the lab. */
export const LAB_COMMANDS: readonly string[] = ["layer", "train", "eval", "calibrate", "train-gate"];

/** Whether an import failed because the lab entry itself is not there (not because of an error inside it). */
function labMissing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const message = err instanceof Error ? err.message : "";
  return (code === "ERR_MODULE_NOT_FOUND" || code === "ERR_PACKAGE_PATH_NOT_EXPORTED" || code === "MODULE_NOT_FOUND") && /gavel-router\/lab|dist\/lab|\blab\b/.test(message);
}

/**
 * The lab's command table, loaded from `gavel-router/lab`.
 *
 * @throws GavelError INTERNAL when the lab entry is missing (a package built without dist/lab)
 */
export async function loadLabCommands(): Promise<Record<string, Command>> {
  try {
    return (await import("gavel-router/lab")).labCommands;
  } catch (err) {
    if (!labMissing(err)) throw err;
    throw new GavelError(`the lab's commands (${LAB_COMMANDS.join(", ")}) need gavel-router/lab (dist/lab/index.js), which is missing; build it with \`npx tsup\` or reinstall gavel-router`, "INTERNAL", { cause: err });
  }
}
