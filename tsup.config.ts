import { defineConfig } from "tsup";

export default defineConfig([
  {
    entry: { index: "src/index.ts" },
    format: ["esm", "cjs"],
    dts: true,
    sourcemap: true,
    clean: true,
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
    sourcemap: true,
    target: "node20",
    banner: { js: "#!/usr/bin/env node" },
    shims: true,
  },
  {
    // The framework adapters (gavel-router/ai-sdk, /langchain, /mastra): subpath exports of their own,
    // importing only their framework (an optional peer dependency) and types from the library, so
    // nothing of them loads unless a user imports the subpath, and the main bundle is unchanged.
    entry: { "adapters/ai-sdk": "src/adapters/ai-sdk.ts", "adapters/langchain": "src/adapters/langchain.ts", "adapters/mastra": "src/adapters/mastra.ts" },
    format: ["esm", "cjs"],
    dts: true,
    sourcemap: true,
    target: "node20",
    external: ["ai", "zod", "langchain", "@langchain/core", "@mastra/core"],
  },
]);
