import { stat } from "node:fs/promises";
import { clip, invalidArgument } from "../../errors.js";
import { Projections, MAX_RANDOM_DIM } from "../../projections/projections.js";
import { intArg, nonEmptyArgs } from "../ui/options.js";
import { checkOutPath } from "../ui/out-path.js";
import { resolveModelPath } from "../../defaults.js";
import { Model } from "../../model/Model.js";
import { projectionsReport } from "./info.js";
import type { Command } from "./types.js";
import { UsageError } from "../usage-error.js";
import { parseFlags, strayArgument } from "../ui/flags.js";

/** `gavel projections`' options. */
const PROJECTIONS_OPTIONS = { model: { type: "string", short: "m" }, out: { type: "string", short: "o" }, seed: { type: "string" }, dim: { type: "string" }, layer: { type: "string" } } as const;

/** `gavel projections`: random W_q, W_s for a model. */
export const projections: Command = {
  summary: "print a projections file's constants, or write random projections for a model",
  help: `usage: gavel projections FILE
       gavel projections --model M --out P [--seed N] [--dim D] [--layer L]

With FILE: prints its constants and provenance as JSON (as gavel info does).
With --out: random W_q and W_s, which route no better than chance: train real ones for a real model.`,
  options: PROJECTIONS_OPTIONS,
  async run(args) {
    const { values, positionals } = parseFlags("projections", { args, allowPositionals: true, options: PROJECTIONS_OPTIONS });
    nonEmptyArgs(values, ["model", "out"]);
    if (positionals.length === 1 && !values.out && !values.model) {
      console.log(JSON.stringify(await projectionsReport(positionals[0]), null, 2));
      return 0;
    }
    if (positionals.length > 0) {
      // FILE with --out / --model, or two files: one line, as for any stray argument
      throw strayArgument("projections", positionals[positionals.length > 1 ? 1 : 0], "FILE alone, or --model and --out");
    }
    if (!values.out) {
      throw new UsageError("gavel projections needs --out (and --model), or one FILE to describe", this.help);
    }
    // the values and the output path first: a bad --out fails before the model loads, in one line
    // (a layer past the model's last is known only once it loads)
    const shape = { seed: intArg(values.seed, "seed"), dim: intArg(values.dim, "dim", { min: 1, max: MAX_RANDOM_DIM }), layer: intArg(values.layer, "layer", { min: 0 }) };
    await checkOutPath(values.out, "the projections file");
    // only the model's shape and fingerprint are read: a small context, and no warning about a
    // --context this command does not take (the CLI's warns when it exceeds the trained context)
    const model = await Model.load(resolveModelPath(values.model).path, { contextSize: 256 });
    try {
      // the model file itself (or a link to it) is never the output: the save would replace the model
      const [o, m] = await Promise.all([stat(values.out).catch(() => null), stat(model.path).catch(() => null)]);
      if (o && m && o.dev === m.dev && o.ino === m.ino) throw invalidArgument(`--out ${clip(values.out)} is the model file: give another path for the projections`);
      const p = await Projections.random(model, shape);
      await p.save(values.out);
      console.log(`wrote ${values.out}: layer ${p.layer}, dim ${p.dim}, for ${model.info.architecture} (${model.info.nLayer} layers)`);
    } finally {
      await model.dispose();
    }
    return 0;
  },
};
