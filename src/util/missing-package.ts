/**
 * Which package a failed import names, for the errors that say what to install when an optional peer
 * dependency is missing (`gavel mcp`'s SDK, the framework adapters' frameworks).
 *
 * @module
 */

/**
 * The package an ERR_MODULE_NOT_FOUND (ES modules) or MODULE_NOT_FOUND (CommonJS) names ("zod",
 * "@modelcontextprotocol/sdk"), and whether it is installed but broken (the missing module is a file
 * inside node_modules/<package>, e.g. zod 3.25.0 as published, which has no dist/); `fallback` when the
 * message names none; null for another error.
 */
export function missingPackage(err: unknown, fallback: string): { pkg: string; broken: boolean } | null {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND") return null;
  const message = String((err as Error).message);
  const file = /Cannot find (?:package|module) '([^']*node_modules[\\/][^']*)'/.exec(message);
  if (file) {
    const inside = [...file[1].matchAll(/node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)/g)].at(-1);
    if (inside) return { pkg: inside[1].replace(/\\/g, "/"), broken: true };
  }
  const m = /Cannot find (?:package|module) '((?:@[^/']+\/)?[^/']+)/.exec(message);
  return { pkg: m ? m[1] : fallback, broken: false };
}
