import { defineConfig } from "vitest/config";
import { selfAlias } from "./vite.config.js";

export default defineConfig({
  resolve: { alias: selfAlias },
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 120_000,
    hookTimeout: 300_000,
    pool: "forks",
    // two cores: run files two at a time
    maxWorkers: 2,
  },
});
