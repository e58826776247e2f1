import { stat } from "node:fs/promises";
import { committedManifest } from "../../bank/opening.js";
import { defaultModelPaths } from "../../defaults.js";
import { describeMismatch } from "../../model/fingerprint.js";
import { readGgufHeader } from "../../gguf/index.js";
import { clip, invalidArgument } from "../../errors.js";
import { Model } from "../../model/Model.js";
import { PROJECTIONS_ARCHITECTURE } from "../../projections/file.js";
import { Projections } from "../../projections/projections.js";
import { intArg } from "../ui/options.js";
import { addonStatus, backendDevices, loadBinding } from "../../native/binding.js";
import type { Command } from "./types.js";
import { UsageError } from "../usage-error.js";
import { parseFlags } from "../ui/flags.js";

/**
 * A projections file's constants and provenance, as JSON: what a route with it reads (ℓ*, the
 * ruling's α, γ, Δ, β, the lexical expert's T, k1, b, the verdict's pool, the abstention model) and
 * who made it for which model; of the reference idf, its size alone (documents, min df, words); of the
 * domain table, its size and bias. Reads
 * the file alone: no model is loaded.
 */
export async function projectionsReport(path: string): Promise<Record<string, unknown>> {
  const p = await Projections.load(path);
  const { model, ...constants } = p.meta;
  const r = p.referenceIdf;
  const d = p.domain;
  return { file: path, kind: "projections", keysHash: p.keysHash, ...constants, referenceIdf: r ? { documents: r.documents, minDf: r.minDf, words: r.words } : null, domain: d ? { words: d.words, bias: d.bias } : null, model };
}

/**
 * An installed bank's header and size, as JSON: the model (its fingerprint) and the projections (the
 * `keysHash` that `gavel info <projections.gguf>` prints) it was built with, ℓ*, ε and the key width,
 * its skills and key rows, and whether the embedded pair built it (null when the package has no
 * embedded projections). Reads the last committed manifest alone: no model, no lock.
 */
export async function bankReport(dir: string): Promise<Record<string, unknown>> {
  const m = await committedManifest(dir);
  const { model, projectionsHash, layer, eps, dim } = m.header;
  const defaults = defaultModelPaths();
  let embedded: boolean | null = null;
  if (defaults.projectionsAvailable) {
    const p = await Projections.load(defaults.projections);
    embedded = p.keysHash === projectionsHash && describeMismatch(p.model, model) === undefined;
  }
  const keys = m.entries.reduce((n, e) => n + e.nKeys, 0);
  return { bank: dir, kind: "bank", formatVersion: m.formatVersion, generation: m.generation, skills: m.entries.length, keys, builtWithEmbeddedPair: embedded, projectionsHash, layer, eps, dim, model };
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

/** `gavel info`'s options. */
const INFO_OPTIONS = { context: { type: "string" }, addon: { type: "boolean" } } as const;

/** `gavel info`: a model's info, a projections file's constants, a bank's header, or the addon's status, as JSON. */
export const info: Command = {
  summary: "print a GGUF model's info, a projections file's constants and provenance, what a bank was built with, or (--addon) the native addon's status, as JSON",
  help: `usage: gavel info <model.gguf | projections.gguf | bank-dir> [--context N]
       gavel info --addon

A model is loaded with llama.cpp and model.info printed (--context N, default 256: llama.cpp rounds
the context up to a multiple of 256; --context is for a model file only). A projections file
(general.architecture "gavel-projections") is read without loading anything: the keysHash a bank
built with it records, its layer, dim, τ, ε, the ruling's α, γ, Δ, β, the lexical expert's T, k1 and
b, the verdict's pool (maxShortlist, shortlistGlance, shortlistLexical), the glance's row weights
and vote share, the skill and key budgets a router opens with, the abstention model, and its
provenance (trainedBy, createdAt, the model it was trained for).
A bank directory is read from its last committed manifest, without a model or its lock: the model
(fingerprint) and projections (projectionsHash, a projections file's keysHash) it was built with,
whether that is the embedded pair (builtWithEmbeddedPair), its layer, ε and key width, and its skills
and key rows. A route over a bank needs the pair it was built with (else BANK_MISMATCH).
With --addon, the native addon this machine loads: its file and where it came from (GAVEL_ADDON, a
local build, the CUDA package gavel-router-linux-x64-cuda, a platform package, the prebuilds), what
became of the CUDA package (loaded, fallback with its reason, off, skipped, not-installed), its build
and the devices ggml found.`,
  options: INFO_OPTIONS,
  async run(args) {
    const { positionals, values } = parseFlags("info", { args, allowPositionals: true, options: INFO_OPTIONS });
    // --context sizes a model's context: where no model loads it would be dropped without a word
    const noModel = (what: string) => invalidArgument(`--context is for a model file: ${what}; run it without --context`);
    if (values.addon && positionals.length === 0) {
      if (values.context !== undefined) throw noModel("gavel info --addon loads no model");
      console.log(JSON.stringify(addonReport(), null, 2));
      return 0;
    }
    // the usage gives --addon alone: with a file it would be dropped without a word
    if (values.addon) {
      throw invalidArgument(`--addon takes no file: it prints the native addon's status (gavel info --addon alone); to describe ${clip(positionals.join(" "))}, run gavel info without --addon`);
    }
    if (positionals.length !== 1) {
      throw new UsageError("gavel info takes one model file, projections file or bank directory (or --addon alone)", this.help);
    }
    const isDir = await stat(positionals[0]).then((s) => s.isDirectory(), () => false);
    if (isDir) {
      if (values.context !== undefined) throw noModel(`${clip(positionals[0])} is a bank directory, read without a model`);
      console.log(JSON.stringify(await bankReport(positionals[0]), null, 2));
      return 0;
    }
    if (await isProjectionsFile(positionals[0])) {
      if (values.context !== undefined) throw noModel(`${clip(positionals[0])} is a projections file, read without a model`);
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
