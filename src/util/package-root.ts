/**
 * The package root of gavel-router, found once for the addon loader and the embedded defaults.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The folder of this module (the CommonJS bundle has `__dirname`; ES modules have `import.meta.url`). */
export function moduleDir(): string {
  return typeof __dirname !== "undefined" ? __dirname : dirname(fileURLToPath(import.meta.url));
}

/** Whether `dir` holds gavel-router's own package.json (its name tells our root from a dependent project's). */
function isOurRoot(dir: string): boolean {
  let text: string;
  try {
    text = readFileSync(join(dir, "package.json"), "utf8");
  } catch {
    return false;
  }
  try {
    return (JSON.parse(text) as { name?: unknown }).name === "gavel-router";
  } catch {
    return false;
  }
}

/**
 * The package root: the nearest folder above this module whose package.json names gavel-router.
 * dist/index.js, dist/cli/gavel.js and the sources all sit below it, so one walk serves the bundles
 * and the sources, in a clone and in an installed copy alike.
 *
 * @returns the root, or null when the walk finds none (e.g. a bundle copied out of the package)
 */
export function findPackageRoot(from: string = moduleDir()): string | null {
  let dir = from;
  while (!isOurRoot(dir)) {
    const up = dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
  return dir;
}
