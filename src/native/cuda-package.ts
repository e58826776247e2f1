/**
 * The opt-in CUDA addon: the package `gavel-router-linux-x64-cuda` (npm/linux-x64-cuda/ in the
 * repository), which a user installs beside gavel-router (`npm install gavel-router
 * gavel-router-linux-x64-cuda`); gavel-router does not list it, so a plain linux-x64 install downloads
 * only the CPU prebuilds. It holds prebuilds/linux-x64-cuda/gavel-router.node (llama.cpp, ggml and the
 * CUDA runtime linked in statically with hidden symbols; the NVIDIA driver's libcuda.so.1 and cuBLAS
 * linked dynamically) and the native sources hash it was built from.
 *
 * On linux-x64 the loader (./binding.ts) tries it after GAVEL_ADDON and a local build and before the
 * CPU prebuilds, unless GAVEL_CUDA_ADDON=off. When it is installed but cannot serve (its sources hash is
 * not this package's, the dynamic loader cannot open it or a library it needs, it is older than the
 * package, or no CUDA device answers), the loader falls back to the CPU addon and keeps the reason in
 * {@link CudaAddonStatus}, which `addonStatus()` returns and `gavel info --addon` prints; the load
 * never fails for it.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Config } from "../config.js";
import { CLIP_CHARS, clip } from "../errors.js";
import { CUDA_PACKAGE_NAME, CUDA_PLATFORM, hasLocalBuild, resolvePackageDir } from "./platform.js";
import { elfProblem } from "./addon-file.js";

/**
 * What became of the CUDA package in this process: loaded; fallback (installed, tried, not usable:
 * `reason` says why, and the CPU addon runs); off (GAVEL_CUDA_ADDON=off); skipped (GAVEL_ADDON or a
 * local build is loaded instead); not-installed.
 */
export interface CudaAddonStatus {
  package: string;
  state: "loaded" | "fallback" | "off" | "skipped" | "not-installed";
  /** The CUDA addon's file, once the package is found. */
  file?: string;
  /** Why it is not the addon loaded (fallback, off, skipped). */
  reason?: string;
}

/** The sources hash a prebuilds folder records, or null when it has none. */
function recordedHash(dir: string): string | null {
  const file = join(dir, "gavel-router.sources.sha256");
  return existsSync(file) ? readFileSync(file, "utf8").trim() : null;
}

/**
 * The CUDA addon to try under package root `root`: its file, or the status that says why none is tried.
 * Null off linux-x64 (no CUDA package exists there). The package's sources hash must be the one this
 * package's CPU prebuild records (prebuilds/linux-x64/), so a CUDA package of another version of
 * gavel-router is not loaded (when the package has no such record, as in a checkout without prebuilds,
 * nothing is compared).
 */
export function cudaPackageCandidate(
  root: string,
  cfg: Pick<Config, "addon" | "cudaAddon">,
  platform: string = process.platform,
  arch: string = process.arch,
): { file: string } | { status: CudaAddonStatus } | null {
  if (platform !== "linux" || arch !== "x64") return null;
  const pkg = CUDA_PACKAGE_NAME;
  if (cfg.addon) return { status: { package: pkg, state: "skipped", reason: `GAVEL_ADDON is set (${cfg.addon})` } };
  if (cfg.cudaAddon === "off") return { status: { package: pkg, state: "off", reason: "GAVEL_CUDA_ADDON=off" } };
  if (hasLocalBuild(root)) return { status: { package: pkg, state: "skipped", reason: `a local build (${join(root, "build")}) is loaded first` } };
  const dir = resolvePackageDir(root, pkg);
  if (dir === null) return { status: { package: pkg, state: "not-installed" } };
  const prebuilds = join(dir, "prebuilds", CUDA_PLATFORM);
  const file = join(prebuilds, "gavel-router.node");
  if (!existsSync(file)) return { status: { package: pkg, state: "fallback", reason: `${pkg} holds no prebuilds/${CUDA_PLATFORM}/gavel-router.node` } };
  const theirs = recordedHash(prebuilds);
  const ours = recordedHash(join(root, "prebuilds", "linux-x64"));
  if (theirs === null) return { status: { package: pkg, state: "fallback", file, reason: `${pkg} records no sources hash (gavel-router.sources.sha256)` } };
  if (ours !== null && theirs !== ours) {
    const version = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version?: string }).version ?? "?";
    return {
      status: {
        package: pkg,
        state: "fallback",
        file,
        reason: `${pkg} was built from other native sources (sources hash ${theirs.slice(0, 12)}…) than this gavel-router (${ours.slice(0, 12)}…): install ${pkg}@${version}`,
      },
    };
  }
  const bad = elfProblem(file, "x64");
  if (bad !== null) return { status: { package: pkg, state: "fallback", file, reason: `its addon ${bad}${/^is truncated/.test(bad) ? " (reinstall the package)" : ""}` } };
  return { file };
}

/** Why a CUDA addon that threw at load cannot serve, in a user's words. */
export function cudaLoadReason(err: unknown): string {
  const message = clip((err instanceof Error ? err.message : String(err)).split("\n")[0], 2 * CLIP_CHARS);
  const hint = /libcuda|libcublas|libnvidia/i.test(message)
    ? " (the CUDA addon needs the NVIDIA driver's libcuda.so.1 and the cuBLAS libraries, libcublas and libcublasLt, of the CUDA version it was built with)"
    : "";
  if (/^no CUDA device answered/.test(message)) return `its addon loaded, but ${message}`;
  return `its addon did not load: ${message}${hint}`;
}

/**
 * Tries the CUDA package (see {@link cudaPackageCandidate}): `prepare` loads its file and readies it
 * (require, configure, init), throwing when it cannot serve. Returns the prepared addon with status
 * loaded, or no addon with the status that says why (fallback keeps prepare's error as the reason,
 * or why the package's files could not be read: the CPU addon is tried then); status is null off
 * linux-x64. Never throws.
 */
export function loadCudaPackage<T>(
  root: string,
  cfg: Pick<Config, "addon" | "cudaAddon">,
  prepare: (file: string) => T,
  platform: string = process.platform,
  arch: string = process.arch,
): { addon?: T; status: CudaAddonStatus | null } {
  let candidate: ReturnType<typeof cudaPackageCandidate>;
  try {
    candidate = cudaPackageCandidate(root, cfg, platform, arch);
  } catch (err) {
    // an unreadable sources hash (EACCES, a directory in its place), package.json, …
    const why = clip((err instanceof Error ? err.message : String(err)).split("\n")[0], 2 * CLIP_CHARS);
    return { status: { package: CUDA_PACKAGE_NAME, state: "fallback", reason: `its files could not be read: ${why}` } };
  }
  if (candidate === null) return { status: null };
  if ("status" in candidate) return { status: candidate.status };
  try {
    return { addon: prepare(candidate.file), status: { package: CUDA_PACKAGE_NAME, state: "loaded", file: candidate.file } };
  } catch (err) {
    return { status: { package: CUDA_PACKAGE_NAME, state: "fallback", file: candidate.file, reason: cudaLoadReason(err) } };
  }
}
