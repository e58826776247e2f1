/**
 * The package root of gavel-router, found once for the addon loader and the embedded defaults.
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The folder of this module (the CommonJS bundle has `__dirname`; ES modules have `import.meta.url`). */
export function moduleDir(): string {
  return typeof __dirname !== "undefined" ? __dirname : dirname(fileURLToPath(import.meta.url));
}

/**
 * The package root: the nearest folder above this module holding both package.json and
 * CMakeLists.txt (the pair tells our root from a dependent project's). dist/index.js,
 * dist/cli/gavel.js and the sources all sit below it, so one walk serves the bundles and the sources.
 *
 * @returns the root, or null when the walk finds none (e.g. a bundle copied out of the package)
 */
export function findPackageRoot(from: string = moduleDir()): string | null {
  let dir = from;
  while (!existsSync(join(dir, "package.json")) || !existsSync(join(dir, "CMakeLists.txt"))) {
    const up = dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
  return dir;
}
