import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

/**
 * The package's own names resolved to the sources, as tsconfig.json's "paths" resolve them for tsc:
 * the lab (lab/) imports the runtime as `gavel-router` and `gavel-router/internal`, and the CLI
 * loads the lab as `gavel-router/lab`. Used by vitest (vitest.config.ts) and by `npx vite-node` for
 * the scripts; the build keeps these names external instead (tsup.config.ts).
 */
export const selfAlias = [
  { find: /^gavel-router$/, replacement: fileURLToPath(new URL("./src/index.ts", import.meta.url)) },
  { find: /^gavel-router\/internal$/, replacement: fileURLToPath(new URL("./src/internal.ts", import.meta.url)) },
  { find: /^gavel-router\/lab$/, replacement: fileURLToPath(new URL("./lab/index.ts", import.meta.url)) },
];

export default defineConfig({ resolve: { alias: selfAlias } });
