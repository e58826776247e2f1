import { parseArgs } from "node:util";
import { Model } from "../../model/Model.js";
import { intArg } from "../ui/options.js";
import type { Command } from "./types.js";

/** `gavel info`: a model's info as JSON. */
export const info: Command = {
  summary: "print a GGUF model's info as JSON",
  help: "usage: gavel info <model.gguf> [--context N]\n\nLoads the model with llama.cpp and prints model.info as JSON.",
  async run(args) {
    const { positionals, values } = parseArgs({ args, allowPositionals: true, options: { context: { type: "string" } } });
    if (positionals.length !== 1) {
      console.error(this.help);
      return 2;
    }
    const model = await Model.load(positionals[0], { contextSize: intArg(values.context, "context") ?? 256, sequences: 2 });
    try {
      console.log(JSON.stringify(model.info, null, 2));
    } finally {
      await model.dispose();
    }
    return 0;
  },
};
