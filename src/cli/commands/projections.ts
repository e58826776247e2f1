import { parseArgs } from "node:util";
import { Projections } from "../../projections/projections.js";
import { intArg } from "../ui/options.js";
import { openModel } from "./common.js";
import type { Command } from "./types.js";

/** `gavel projections`: random W_q, W_s for a model. */
export const projections: Command = {
  summary: "write random projections for a model (for trying the pipeline before training)",
  help: `usage: gavel projections --model M --out P [--seed N] [--dim D] [--layer L]

Random W_q and W_s route no better than chance: train real ones for a real model.`,
  async run(args) {
    const { values } = parseArgs({
      args,
      options: { model: { type: "string", short: "m" }, out: { type: "string", short: "o" }, seed: { type: "string" }, dim: { type: "string" }, layer: { type: "string" } },
    });
    if (!values.out) {
      console.error(this.help);
      return 2;
    }
    const model = await openModel({ model: values.model, context: "256" });
    try {
      const p = await Projections.random(model, {
        seed: intArg(values.seed, "seed"),
        dim: intArg(values.dim, "dim"),
        layer: intArg(values.layer, "layer"),
      });
      await p.save(values.out);
      console.log(`wrote ${values.out}: layer ${p.layer}, dim ${p.dim}, for ${model.info.architecture} (${model.info.nLayer} layers)`);
    } finally {
      await model.dispose();
    }
    return 0;
  },
};
