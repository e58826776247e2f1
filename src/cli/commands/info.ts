import { parseArgs } from "node:util";
import { readGgufHeader } from "../../gguf/index.js";
import { Model } from "../../model/Model.js";
import { PROJECTIONS_ARCHITECTURE } from "../../projections/file.js";
import { Projections } from "../../projections/projections.js";
import { intArg } from "../ui/options.js";
import type { Command } from "./types.js";

/**
 * A projections file's constants and provenance, as JSON: what a route with it reads (ℓ*, the
 * ruling's α, γ, Δ, β, the lexical expert's T, k1, b, the verdict's pool, the abstention model) and
 * who made it for which model. Reads the file alone: no model is loaded.
 */
export async function projectionsReport(path: string): Promise<Record<string, unknown>> {
  const p = await Projections.load(path);
  const { model, ...constants } = p.meta;
  return { file: path, kind: "projections", ...constants, model };
}

/** Whether a GGUF file is a projections file (its general.architecture), by its header alone. */
export async function isProjectionsFile(path: string): Promise<boolean> {
  const header = await readGgufHeader(path);
  const arch = header.metadata.get("general.architecture");
  return arch !== undefined && arch.value === PROJECTIONS_ARCHITECTURE;
}

/** `gavel info`: a model's info, or a projections file's constants, as JSON. */
export const info: Command = {
  summary: "print a GGUF model's info, or a projections file's constants and provenance, as JSON",
  help: `usage: gavel info <model.gguf | projections.gguf> [--context N]

A model is loaded with llama.cpp and model.info printed. A projections file (general.architecture
"gavel-projections") is read without loading anything: its layer, dim, τ, ε, the ruling's α, γ, Δ,
β, the lexical expert's T, k1 and b, the verdict's pool (maxShortlist, shortlistGlance,
shortlistLexical), the abstention model, and its provenance (trainedBy, createdAt, the model it was
trained for).`,
  async run(args) {
    const { positionals, values } = parseArgs({ args, allowPositionals: true, options: { context: { type: "string" } } });
    if (positionals.length !== 1) {
      console.error(this.help);
      return 2;
    }
    if (await isProjectionsFile(positionals[0])) {
      console.log(JSON.stringify(await projectionsReport(positionals[0]), null, 2));
      return 0;
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
