import { defineConfig, type Options } from "tsup";

/**
 * The package's own names. The lab (lab/) imports the runtime as `gavel-router` and
 * `gavel-router/internal`, and the CLI loads the lab as `gavel-router/lab`; tsconfig.json's "paths"
 * map them to the sources for tsc, vitest and dependency-cruiser, while the bundles keep them
 * external, so Node resolves them at run time by self-reference (package.json "exports"): dist/lab
 * then shares dist/index.js's modules (one GavelError, one Router class) instead of carrying a copy.
 */
const SELF = ["gavel-router", "gavel-router/internal", "gavel-router/lab"];

/**
 * Source maps without the sources' text: with `node --enable-source-maps` a user's stack traces name
 * src/ files, lines and columns (src/ itself is not in the package), at under a third of the bytes
 * of maps that carry every source file whole (sourcesContent, three quarters of them).
 */
const SOURCE_MAPS = {
  sourcemap: true,
  esbuildOptions(options) {
    options.sourcesContent = false;
  },
} satisfies Options;

export default defineConfig([
  {
    // ESM: the runtime (index), its internal entry for the lab and tools (internal: not a stable API)
    // and the lab (gavel-router/lab) in one build, so index and internal share their chunks (one
    // GavelError, one Router class); the lab imports both by name (external: SELF), never a copy.
    entry: { index: "src/index.ts", internal: "src/internal.ts", "lab/index": "lab/index.ts" },
    format: ["esm"],
    dts: true,
    ...SOURCE_MAPS,
    clean: true,
    target: "node20",
    shims: true,
    external: SELF,
  },
  {
    // CommonJS: the runtime only (internal and the lab are ESM only)
    entry: { index: "src/index.ts" },
    format: ["cjs"],
    dts: true,
    ...SOURCE_MAPS,
    target: "node20",
    shims: true,
  },
  {
    // The CLI loads its commands lazily (src/cli/gavel.ts): esbuild splits them into chunks, kept in
    // dist/cli/ beside gavel.js, so that `gavel hook claude-code` never loads the addon or the model.
    entry: { gavel: "src/cli/gavel.ts" },
    outDir: "dist/cli",
    format: ["esm"],
    splitting: true,
    ...SOURCE_MAPS,
    target: "node20",
    banner: { js: "#!/usr/bin/env node" },
    shims: true,
    // the lab's commands: a dynamic import of gavel-router/lab at run time (src/cli/lab.ts), not bundled
    external: SELF,
  },
  {
    // The `gavel` executable (package.json "bin"): one CommonJS file that runs `gavel hook claude-code`
    // itself (src/cli/bin.ts; node's CommonJS loader, no chunks: the hook's start is most of its time)
    // and imports dist/cli/gavel.js for every other command.
    entry: { gavel: "src/cli/bin.ts" },
    outDir: "dist/cli",
    format: ["cjs"],
    target: "node20",
    banner: { js: "#!/usr/bin/env node" },
    shims: true,
  },
  // The framework adapters (gavel-router/ai-sdk, /langchain, /mastra): subpath exports of their own,
  // importing only their framework (optional peer dependencies) and types from the library, so
  // nothing of them loads unless a user imports the subpath, and the main bundle is unchanged. Each
  // loads its framework apart (src/adapters/peer.ts): the ES modules by an awaited import() (top-level
  // await), the CommonJS build by require(), chosen by __GAVEL_CJS__ (the other branch is dead code).
  // The CommonJS build has no import.meta: peer.ts's import.meta.resolve (used by the ES module build
  // alone, to name a peer's installed version) is defined away there, not left as an empty object.
  ...(["esm", "cjs"] as const).map((format) => ({
    entry: { "adapters/ai-sdk": "src/adapters/ai-sdk.ts", "adapters/langchain": "src/adapters/langchain.ts", "adapters/mastra": "src/adapters/mastra.ts" },
    format: [format],
    dts: true,
    ...SOURCE_MAPS,
    target: "node20",
    define: { __GAVEL_CJS__: format === "cjs" ? "true" : "false", ...(format === "cjs" ? { "import.meta.resolve": "undefined" } : {}) },
    external: ["ai", "zod", "langchain", "@langchain/core", "@mastra/core"],
  })),
]);
