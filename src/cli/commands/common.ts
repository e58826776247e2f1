// Options every router command shares, and opening a model + router from them.
import { Model, type ModelLoadOptions } from "../../model/Model.js";
import { CONTEXT_SIZE_RANGE, GPU_LAYERS_RANGE, THREADS_RANGE } from "../../model/load-options.js";
import { Router, type RouterOpenOptions } from "../../route/index.js";
import { KEY_BUDGET_RANGE, SKILL_BUDGET_RANGE } from "../../route/option-keys.js";
import { resolveModelPath, resolveProjectionsPath } from "../../defaults.js";
import { intArg, nonEmptyArgs } from "../ui/options.js";
import { contextFor } from "./model-context.js";
import { bankDir } from "../../config.js";
import { GavelError, invalidArgument, clip, messageNaming } from "../../errors.js";

/** The flags of every command that loads the agent model (util.parseArgs specs). */
export const modelOptions = {
  model: { type: "string", short: "m" },
  context: { type: "string" },
  threads: { type: "string" },
  "gpu-layers": { type: "string" },
} as const;

/** Where the projections and the bank are, and JSON output. */
export const bankOptions = {
  projections: { type: "string", short: "p" },
  bank: { type: "string", short: "b" },
  json: { type: "boolean" },
} as const;

/** The flags every router command shares: the model's, the bank's, and the skill budget. */
export const routerOptions = { ...modelOptions, ...bankOptions, "skill-budget": { type: "string" }, "key-budget": { type: "string" }, truncate: { type: "string" } } as const;

/** {@link routerOptions} as a command's help lists them. */
export const routerOptionsHelp = `
  --model, -m M         the agent model (GGUF)              [$GAVEL_MODEL, default: the embedded gavel-mini]
  --projections, -p P   its projections (GGUF)              [$GAVEL_PROJECTIONS, default: gavel-mini's]
  --bank, -b DIR        the skill bank directory                       [$GAVEL_BANK, default .gavel/bank]
  --context N           context size in tokens (default 8192, or the model's trained context when
                        smaller: 2048 for gavel-mini)
  --threads N           CPU threads
  --gpu-layers N        layers offloaded to a GPU (CUDA build)
  --skill-budget N      most tokens of a skill render, what the verdict reads (default: the
                        projections' skill budget, 512 for gavel-mini's, else ¾ of the context)
  --key-budget N        most tokens of a skill an install reads keys from (default: the projections'
                        key budget or the skill budget, whichever is larger)
  --truncate end|start  which part of a task longer than the context is read (default end: the
                        request usually comes last)
  --json                print JSON`;

/** {@link routerOptions}' values as util.parseArgs gives them. */
export interface RouterArgs {
  model?: string;
  projections?: string;
  bank?: string;
  context?: string;
  threads?: string;
  "gpu-layers"?: string;
  "skill-budget"?: string;
  "key-budget"?: string;
  truncate?: string;
}

/**
 * The shared flags' values checked (numbers and their ranges, `--truncate`, no empty path) without
 * loading anything, so a bad value fails the same way whether a running `gavel serve` answers the
 * command (and ignores the model's flags) or this process does. The ranges are the library's own
 * (Model.load's and Router.open's); what depends on the model's context (a skill budget that leaves
 * no room for a task) is checked here when `--context` gives it, else once the model is loaded.
 *
 * @throws GavelError `INVALID_ARGUMENT` naming the flag; UsageError for an empty `--model`, `--projections` or `--bank`
 */
export function checkRouterArgs(values: RouterArgs): void {
  nonEmptyArgs(values, ["model", "projections", "bank"]);
  const context = intArg(values.context, "context", CONTEXT_SIZE_RANGE);
  intArg(values.threads, "threads", THREADS_RANGE);
  intArg(values["gpu-layers"], "gpu-layers", GPU_LAYERS_RANGE);
  const skillBudget = intArg(values["skill-budget"], "skill-budget", SKILL_BUDGET_RANGE);
  intArg(values["key-budget"], "key-budget", KEY_BUDGET_RANGE);
  if (context !== undefined && skillBudget !== undefined && skillBudget >= context - 16) {
    throw invalidArgument(`--skill-budget ${skillBudget} leaves no room for a task in --context ${context}: lower --skill-budget or raise --context`);
  }
  if (values.truncate !== undefined && values.truncate !== "start" && values.truncate !== "end") {
    throw invalidArgument(`--truncate must be "start" or "end", got ${JSON.stringify(clip(values.truncate))}`);
  }
}

/** The library's options (`GavelError.option`) the router flags give, as the CLI's flags spell them. */
const FLAG_OF: Readonly<Record<string, string>> = {
  skillBudget: "--skill-budget", keyBudget: "--key-budget", contextSize: "--context", threads: "--threads", gpuLayers: "--gpu-layers",
};

/** The flag that gives library option `option` (`skillBudget` → `--skill-budget`); an option no flag gives keeps its name. */
export function flagOf(option: string): string {
  return Object.hasOwn(FLAG_OF, option) ? FLAG_OF[option] : option;
}

/**
 * `err` in the CLI's words where it refuses an option a flag gives (`GavelError.option`): a GavelError
 * of the same code and option whose message names each option by its flag (`cause`: `err`); any
 * other error as it is.
 */
export function withFlags(err: unknown): unknown {
  if (!(err instanceof GavelError) || err.option === undefined || !Object.hasOwn(FLAG_OF, err.option)) return err;
  return new GavelError(messageNaming(err, flagOf), err.code, { cause: err, option: err.option });
}

/**
 * Router.open with the options the flags give; a refusal of an option (a budget that leaves no room)
 * names the flags, not the library's options.
 */
export async function openRouter(model: Model, values: RouterArgs, options: Omit<RouterOpenOptions, "skillBudget" | "keyBudget" | "truncate">): Promise<Router> {
  try {
    return await Router.open(model, {
      ...options,
      skillBudget: intArg(values["skill-budget"], "skill-budget", SKILL_BUDGET_RANGE),
      keyBudget: intArg(values["key-budget"], "key-budget", KEY_BUDGET_RANGE),
      ...truncateArg(values),
    });
  } catch (err) {
    throw withFlags(err);
  }
}

/** Router.open's `truncate` from `--truncate` (Router.open refuses any value but "start" and "end"). */
export function truncateArg(values: RouterArgs): { truncate?: "start" | "end" } {
  return values.truncate === undefined ? {} : { truncate: values.truncate as "start" | "end" };
}

/**
 * Loads the agent model the options name (the embedded gavel-mini by default), with `--context`, else
 * 8192 tokens lowered to the model's trained context when that is smaller (see model-context.ts).
 */
export async function openModel(values: RouterArgs, extra?: Pick<ModelLoadOptions, "batchSequences">): Promise<Model> {
  // --model, else $GAVEL_MODEL, else the embedded gavel-mini
  const path = resolveModelPath(values.model).path;
  // a refusal of an option the flags give (the KV cache a context needs) names the flag
  return Model.load(path, {
    contextSize: await contextFor(path, values.context),
    threads: intArg(values.threads, "threads", THREADS_RANGE),
    gpuLayers: intArg(values["gpu-layers"], "gpu-layers", GPU_LAYERS_RANGE),
    ...extra,
  }).catch((err: unknown) => {
    throw withFlags(err);
  });
}

/** How {@link withRouter} opens the bank. */
export interface WithRouterOptions {
  /**
   * Create the bank when there is none (`gavel install`). Read-only commands pass false, so a
   * mistyped `--bank` is FILE_NOT_FOUND rather than a new empty bank. A folder holding a bank's
   * files without its manifest is CORRUPT_FILE either way, and nothing is changed.
   * Default false: only the commands that build a bank (`gavel install`, `gavel serve --create`)
   * pass true.
   */
  create?: boolean;
  /**
   * Open the bank's last committed snapshot without its write lock (Router.open's `readOnly`): for
   * commands that only read (`gavel eval`, `gavel calibrate`), which then run beside a `gavel serve`
   * or an install instead of failing with BANK_LOCKED. Default false.
   */
  readOnly?: boolean;
}

/** Opens model and router; `use` runs with both and they are closed after, whatever happens. */
export async function withRouter<T>(
  values: RouterArgs,
  use: (router: Router, model: Model) => Promise<T>,
  options: WithRouterOptions = {},
): Promise<T> {
  // --projections, else $GAVEL_PROJECTIONS, else gavel-mini's
  const projections = resolveProjectionsPath(values.projections).path;
  const model = await openModel(values);
  try {
    const router = await openRouter(model, values, {
      projections,
      bankDir: bankDir(values.bank),
      ...(options.readOnly ? { readOnly: true } : { create: options.create ?? false }),
    });
    try {
      return await use(router, model);
    } finally {
      await router.close();
    }
  } finally {
    await model.dispose();
  }
}
