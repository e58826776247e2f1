/**
 * The embedded default pair: gavel-mini (a 26M-parameter llama trained for this package, see
 * docs/BACKBONE.md) and the projections trained for it. They ship in `models/` at the package root so
 * that `gavel demo`, and any router command given no `--model` / `--projections`, work on a fresh
 * install with nothing else present.
 *
 * Lookup order everywhere: an explicit argument (CLI flag), then the environment (`GAVEL_MODEL`,
 * `GAVEL_PROJECTIONS`), then the embedded default.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { GavelError } from "./errors.js";
import { findPackageRoot, moduleDir } from "./util/package-root.js";
import { config, resolveConfig } from "./config.js";

/**
 * The package root, or — when the walk finds none (a copied-out bundle) — the folder above this
 * module. Never throws at import: importing the library must not fail because a default is absent;
 * the absence is reported, with a remedy, when a default is actually needed.
 */
export const PACKAGE_ROOT: string = findPackageRoot() ?? join(moduleDir(), "..");

/** The embedded default model: gavel-mini (llama, 26M parameters, context 2048, Q8_0). */
export const DEFAULT_MODEL: string = join(PACKAGE_ROOT, "models", "gavel-mini.gguf");

/** The projections (W_q, W_s, ℓ*, α, γ, Δ) trained for {@link DEFAULT_MODEL}. */
export const DEFAULT_PROJECTIONS: string = join(PACKAGE_ROOT, "models", "gavel-mini.projections.gguf");

/** The embedded default pair and whether both files are present. */
export interface DefaultModelPaths {
  model: string;
  projections: string;
  /** Both files exist. */
  available: boolean;
  modelAvailable: boolean;
  projectionsAvailable: boolean;
}

/** The embedded default model and projections paths, with which of them exist right now. */
export function defaultModelPaths(): DefaultModelPaths {
  const modelAvailable = existsSync(DEFAULT_MODEL);
  const projectionsAvailable = existsSync(DEFAULT_PROJECTIONS);
  return {
    model: DEFAULT_MODEL,
    projections: DEFAULT_PROJECTIONS,
    available: modelAvailable && projectionsAvailable,
    modelAvailable,
    projectionsAvailable,
  };
}

/** Where a resolved path came from. */
export type PathSource = "argument" | "env" | "default";

export interface ResolvedPath {
  path: string;
  source: PathSource;
}

/** How to get each default file back, for error messages. */
const REMEDY = {
  model:
    "it ships with gavel-router in models/; reinstall the package (npm ci), or pass --model <file.gguf> / set GAVEL_MODEL",
  projections:
    "it is trained for gavel-mini and shipped in models/ (docs/BACKBONE.md: gavel layer, gavel train --self-supervised, gavel calibrate); " +
    "update or reinstall the package, or pass --projections <file.gguf> / set GAVEL_PROJECTIONS " +
    "(gavel projections --out p.gguf writes random ones, which only exercise the pipeline)",
} as const;

function resolvePath(kind: "model" | "projections", given: string | undefined, envName: string, fallback: string, fromEnv: string | undefined): ResolvedPath {
  // An empty value means "not set", as shells and test harnesses use GAVEL_MODEL="" to clear a variable.
  if (given) return { path: given, source: "argument" };
  if (fromEnv) return { path: fromEnv, source: "env" };
  if (!existsSync(fallback)) {
    throw new GavelError(
      `no ${kind} given (--${kind}, ${envName}) and the embedded default ${kind} ${fallback} is missing: ${REMEDY[kind]}`,
      "FILE_NOT_FOUND",
    );
  }
  return { path: fallback, source: "default" };
}

/**
 * The model to load: `given` (a CLI flag or an API argument), else `$GAVEL_MODEL` (of `env` when
 * given, else of the process's configuration, config.ts), else {@link DEFAULT_MODEL}.
 *
 * @throws GavelError `FILE_NOT_FOUND` when it falls back to the default and the default is missing
 *   (the message names the file and how to get it). An explicit path is returned unchecked: loading
 *   it reports its own error.
 */
export function resolveModelPath(given?: string, env?: Readonly<Record<string, string | undefined>>): ResolvedPath {
  return resolvePath("model", given, "GAVEL_MODEL", DEFAULT_MODEL, (env ? resolveConfig(env) : config()).model);
}

/**
 * The projections to load: `given`, else `$GAVEL_PROJECTIONS`, else {@link DEFAULT_PROJECTIONS}.
 *
 * Note that the default projections belong to the default model: pairing them with another model
 * fails at `Router.open` with `PROJECTIONS_MISMATCH`, which is the intended loud failure.
 *
 * @throws GavelError `FILE_NOT_FOUND` when it falls back to the default and the default is missing.
 */
export function resolveProjectionsPath(given?: string, env?: Readonly<Record<string, string | undefined>>): ResolvedPath {
  return resolvePath("projections", given, "GAVEL_PROJECTIONS", DEFAULT_PROJECTIONS, (env ? resolveConfig(env) : config()).projections);
}
