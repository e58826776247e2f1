/**
 * Where the addon of this platform comes from. linux-x64 ships in the package itself (prebuilds/
 * linux-x64/ and prebuilds/linux-x64-avx512/, see ./cpu.ts); every other supported platform gets its
 * addon from one optional package, `gavel-router-<platform>-<arch>`, which the package lists in its
 * optionalDependencies with `os` and `cpu` fields, so npm downloads only the one this machine matches
 * (npm/<platform>-<arch>/ in the repository; scripts/build-all-platforms.mjs builds and packs them).
 * Such a package holds prebuilds/<platform>-<arch>/gavel-router.node, which the loader takes from it
 * (./addon-file.ts).
 *
 * linux-x64 has one more package, `gavel-router-linux-x64-cuda` (llama.cpp with ggml's CUDA backend and
 * the CUDA glance), which the package does NOT list: a user opts in by installing it beside
 * gavel-router, and the loader takes it before the CPU prebuilds (./cuda-package.ts).
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/** The platforms whose addon comes in an optional package, as `${process.platform}-${process.arch}`. */
export const OPTIONAL_PACKAGE_PLATFORMS = ["linux-arm64", "win32-x64", "darwin-arm64", "darwin-x64"] as const;

/** Every platform with a prebuilt addon: linux-x64 in the package, the rest in their optional package. */
export const PREBUILT_PLATFORMS = ["linux-x64", ...OPTIONAL_PACKAGE_PLATFORMS] as const;

/** The optional package that carries the addon of `platform`-`arch`, or null where none does. */
export function platformPackageName(platform: string = process.platform, arch: string = process.arch): string | null {
  const here = `${platform}-${arch}`;
  return (OPTIONAL_PACKAGE_PLATFORMS as readonly string[]).includes(here) ? `gavel-router-${here}` : null;
}

/** The prebuilds folder and name suffix of the opt-in CUDA package (linux-x64 only). */
export const CUDA_PLATFORM = "linux-x64-cuda";

/** The opt-in CUDA package's name: never in the package's optionalDependencies (npm/linux-x64-cuda/). */
export const CUDA_PACKAGE_NAME = `gavel-router-${CUDA_PLATFORM}`;

/** The local build under `root` the loader takes before any package: build/Release/gavel.node, else build/Debug/gavel.node; null when neither exists. */
export function localBuildFile(root: string): string | null {
  for (const config of ["Release", "Debug"]) {
    const file = join(root, "build", config, "gavel.node");
    if (existsSync(file)) return file;
  }
  return null;
}

/** Whether `root` holds a local build ({@link localBuildFile}), which the loader prefers to any package. */
export function hasLocalBuild(root: string): boolean {
  return localBuildFile(root) !== null;
}

/** The folder of package `name` as Node resolves it from the package root `root`, or null when it is not installed. */
export function resolvePackageDir(root: string, name: string): string | null {
  try {
    return dirname(createRequire(join(root, "package.json")).resolve(`${name}/package.json`));
  } catch {
    return null;
  }
}

/**
 * The folder of this platform's optional package as Node resolves it from the package root `root`,
 * or null: no such package for this platform, not installed, or a local build under `root`
 * (build/Release, build/Debug), which the loader prefers.
 */
export function platformPackageDir(root: string, platform: string = process.platform, arch: string = process.arch): string | null {
  const name = platformPackageName(platform, arch);
  if (name === null) return null;
  if (hasLocalBuild(root)) return null;
  return resolvePackageDir(root, name);
}
