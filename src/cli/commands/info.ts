import { parseArgs } from "node:util";
import { readGgufHeader } from "../../gguf/index.js";
import { Model } from "../../model/Model.js";
import { PROJECTIONS_ARCHITECTURE } from "../../projections/file.js";
import { Projections } from "../../projections/projections.js";
import { intArg } from "../ui/options.js";
import { addonStatus, backendDevices, loadBinding } from "../../native/binding.js";
import type { Command } from "./types.js";
import { UsageError } from "../usage-error.js";

/**
 * A projections file's constants and provenance, as JSON: what a route with it reads (ℓ*, the
 * ruling's α, γ, Δ, β, the lexical expert's T, k1, b, the verdict's pool, the abstention model) and
 * who made it for which model; of the reference idf, its size alone (documents, min df, words). Reads
 * the file alone: no model is loaded.
 */
export async function projectionsReport(path: string): Promise<Record<string, unknown>> {
  const p = await Projections.load(path);
  const { model, ...constants } = p.meta;
  const r = p.referenceIdf;
  return { file: path, kind: "projections", ...constants, referenceIdf: r ? { documents: r.documents, minDf: r.minDf, words: r.words } : null, model };
}

/** Whether a GGUF file is a projections file (its general.architecture), by its header alone. */
export async function isProjectionsFile(path: string): Promise<boolean> {
  const header = await readGgufHeader(path);
  const arch = header.metadata.get("general.architecture");
  return arch !== undefined && arch.value === PROJECTIONS_ARCHITECTURE;
}

/**
 * The native addon this process loads, as JSON: its file and source, what became of the opt-in CUDA
 * package (and why, where it is installed but not used), its build (CUDA or not, CPU features) and
 * the ggml devices it found.
 */
export function addonReport(): Record<string, unknown> {
  const b = loadBinding();
  return { kind: "addon", ...addonStatus(), build: b.buildInfo(), devices: backendDevices(), glance: b.glanceDevice() };
}

/** `gavel info`: a model's info, or a projections file's constants, or the addon's status, as JSON. */
export const info: Command = {
  summary: "print a GGUF model's info, a projections file's constants and provenance, or (--addon) the native addon's status, as JSON",
  help: `usage: gavel info <model.gguf | projections.gguf> [--context N]
       gavel info --addon

A model is loaded with llama.cpp and model.info printed. A projections file (general.architecture
"gavel-projections") is read without loading anything: its layer, dim, τ, ε, the ruling's α, γ, Δ,
β, the lexical expert's T, k1 and b, the verdict's pool (maxShortlist, shortlistGlance,
shortlistLexical), the glance's row weights and vote share, the skill and key budgets a router opens with, the abstention model, and its provenance
(trainedBy, createdAt, the model it was trained for).
With --addon, the native addon this machine loads: its file and where it came from (GAVEL_ADDON, a
local build, the CUDA package gavel-router-linux-x64-cuda, a platform package, the prebuilds), what
became of the CUDA package (loaded, fallback with its reason, off, skipped, not-installed), its build
and the devices ggml found.`,
  async run(args) {
    const { positionals, values } = parseArgs({ args, allowPositionals: true, options: { context: { type: "string" }, addon: { type: "boolean" } } });
    if (values.addon && positionals.length === 0) {
      console.log(JSON.stringify(addonReport(), null, 2));
      return 0;
    }
    if (positionals.length !== 1) {
      throw new UsageError("gavel info takes one model file (or --addon alone)", this.help);
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
