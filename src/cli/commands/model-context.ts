/**
 * The context size a command loads its model with: `--context` when given, else the CLI's
 * default of 8192 tokens, lowered to the model's trained context (GGUF `<arch>.context_length`) when
 * that is smaller — positions past it are out of distribution (gavel-mini is trained at 2048). A
 * `--context` above the trained context is kept, with a warning; so is the default when the trained
 * context is too short to route in (under {@link MIN_FOLLOWED_CONTEXT}: a tiny test model).
 */
import { readGgufHeader } from "../../gguf/index.js";
import { DEFAULT_CONTEXT, defaultContextFor, headerContext, MIN_FOLLOWED_CONTEXT } from "../../model/gguf-file.js";
import { intArg } from "../ui/options.js";
import { CONTEXT_SIZE_RANGE } from "../../model/load-options.js";

/** The CLI's context size when neither `--context` nor the model says less (Model.load's default). */
export const CLI_DEFAULT_CONTEXT = DEFAULT_CONTEXT;

/** The model's trained context (`<arch>.context_length`), or null when the file does not say. */
export async function trainedContext(modelPath: string): Promise<number | null> {
  return headerContext(await readGgufHeader(modelPath));
}

/**
 * The context size to load `modelPath` with, from `--context` (a string, as util.parseArgs gives it)
 * and the model's trained context (Model.load's own default rule, `defaultContextFor`); `warn` hears
 * when `--context` exceeds what the model was trained on, or when the trained context is too short to
 * follow. An unreadable header leaves the choice to `Model.load`, which reports the file's problem itself.
 */
export async function contextFor(modelPath: string, given: string | undefined, warn: (message: string) => void = (m) => console.error(m)): Promise<number> {
  const asked = intArg(given, "context", CONTEXT_SIZE_RANGE);
  let trained: number | null = null;
  try {
    trained = await trainedContext(modelPath);
  } catch {
    trained = null;
  }
  if (asked !== undefined) {
    if (trained !== null && asked > trained) {
      warn(`gavel: warning: --context ${asked} exceeds the ${trained} tokens the model was trained on; routing past them is out of distribution`);
    }
    return asked;
  }
  if (trained !== null && trained < MIN_FOLLOWED_CONTEXT) {
    warn(`gavel: warning: the model was trained on ${trained} tokens only, too few to route in; the context stays at ${CLI_DEFAULT_CONTEXT} (out of distribution past ${trained}; --context sets it)`);
  }
  return defaultContextFor(trained);
}
