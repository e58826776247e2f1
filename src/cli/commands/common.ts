// Options every router command shares, and opening a model + router from them.
import { Model, type ModelLoadOptions } from "../../model/Model.js";
import { Router } from "../../route/index.js";
import { resolveModelPath, resolveProjectionsPath } from "../../defaults.js";
import { intArg } from "../ui/options.js";
import { contextFor } from "./model-context.js";
import { bankDir } from "../../config.js";
import { invalidArgument, clip } from "../../errors.js";

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
 * The shared flags' values checked (numbers, `--truncate`) without loading anything, so a bad value
 * fails the same way whether a running `gavel serve` answers the command (and ignores the model's
 * flags) or this process does.
 *
 * @throws GavelError `INVALID_ARGUMENT` naming the flag
 */
export function checkRouterArgs(values: RouterArgs): void {
  intArg(values.context, "context", { min: 16 });
  intArg(values.threads, "threads");
  intArg(values["gpu-layers"], "gpu-layers");
  intArg(values["skill-budget"], "skill-budget");
  intArg(values["key-budget"], "key-budget");
  if (values.truncate !== undefined && values.truncate !== "start" && values.truncate !== "end") {
    throw invalidArgument(`--truncate must be "start" or "end", got ${JSON.stringify(clip(values.truncate))}`);
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
  return Model.load(path, {
    contextSize: await contextFor(path, values.context),
    threads: intArg(values.threads, "threads"),
    gpuLayers: intArg(values["gpu-layers"], "gpu-layers"),
    ...extra,
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
    const router = await Router.open(model, {
      projections,
      bankDir: bankDir(values.bank),
      skillBudget: intArg(values["skill-budget"], "skill-budget"),
      keyBudget: intArg(values["key-budget"], "key-budget"),
      ...truncateArg(values),
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
