/** The package's version, for `gavel --version`: read from the package.json at the package root. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PACKAGE_ROOT } from "../../defaults.js";

/** gavel-router's version, or "unknown" when its package.json cannot be read (a bundle copied out). */
export function packageVersion(root: string = PACKAGE_ROOT): string {
  try {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { name?: unknown; version?: unknown };
    return typeof pkg.version === "string" ? pkg.version : "unknown";
  } catch {
    return "unknown";
  }
}
