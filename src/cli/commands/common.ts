// Options every router command shares, and opening a model + router from them.
import { invalidArgument } from "../../errors.js";
import { Model } from "../../model/Model.js";
import { Router } from "../../route/Router.js";
import { resolveModelPath, resolveProjectionsPath } from "../../defaults.js";

export const routerOptions = {
  model: { type: "string", short: "m" },
  projections: { type: "string", short: "p" },
  bank: { type: "string", short: "b" },
  context: { type: "string" },
  threads: { type: "string" },
  "gpu-layers": { type: "string" },
  "skill-budget": { type: "string" },
  json: { type: "boolean" },
} as const;

export const routerOptionsHelp = `
  --model, -m M         the agent model (GGUF)              [$GAVEL_MODEL, default: the embedded gavel-mini]
  --projections, -p P   its projections (GGUF)              [$GAVEL_PROJECTIONS, default: gavel-mini's]
  --bank, -b DIR        the skill bank directory                       [$GAVEL_BANK, default .gavel/bank]
  --context N           context size in tokens (default 8192)
  --threads N           CPU threads
  --gpu-layers N        layers offloaded to a GPU (CUDA build)
  --skill-budget N      most tokens of a skill render
  --json                print JSON`;

/** An integer option's value (undefined when absent); with bounds, one inside them. */
export function intArg(v: string | undefined, name: string, range?: { min: number; max: number }): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (range && !(Number.isInteger(n) && n >= range.min && n <= range.max)) {
    throw invalidArgument(`--${name} must be a whole number from ${range.min} to ${range.max}, got ${v}`);
  }
  if (!Number.isInteger(n)) throw invalidArgument(`--${name} must be an integer, got ${v}`);
  return n;
}

export interface RouterArgs {
  model?: string;
  projections?: string;
  bank?: string;
  context?: string;
  threads?: string;
  "gpu-layers"?: string;
  "skill-budget"?: string;
}

export async function openModel(values: RouterArgs): Promise<Model> {
  // --model, else $GAVEL_MODEL, else the embedded gavel-mini
  const path = resolveModelPath(values.model).path;
  return Model.load(path, {
    contextSize: intArg(values.context, "context"),
    threads: intArg(values.threads, "threads"),
    gpuLayers: intArg(values["gpu-layers"], "gpu-layers"),
  });
}

/** Opens model and router; `use` runs with both and they are closed after, whatever happens. */
export async function withRouter<T>(values: RouterArgs, use: (router: Router, model: Model) => Promise<T>): Promise<T> {
  // --projections, else $GAVEL_PROJECTIONS, else gavel-mini's
  const projections = resolveProjectionsPath(values.projections).path;
  const model = await openModel(values);
  try {
    const router = await Router.open(model, {
      projections,
      bankDir: values.bank ?? process.env.GAVEL_BANK ?? ".gavel/bank",
      skillBudget: intArg(values["skill-budget"], "skill-budget"),
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

/** A plain text table: columns left-aligned, numbers right-aligned. */
export function table(header: string[], rows: (string | number)[][]): string {
  const cells = [header, ...rows.map((r) => r.map((c) => (typeof c === "number" ? c.toFixed(3) : c)))];
  const widths = header.map((_, j) => Math.max(...cells.map((r) => r[j].length)));
  return cells
    .map((r, i) =>
      r
        .map((c, j) => (i > 0 && typeof rows[i - 1][j] === "number" ? c.padStart(widths[j]) : c.padEnd(widths[j])))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}
