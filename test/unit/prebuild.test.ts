// The addons users install are the ones in prebuilds/: they must be built from the sources in this tree.
import { describe, expect, it } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
// @ts-expect-error plain .mjs build script without types
import { nativeSourcesHash } from "../../scripts/native-sources.mjs";
import { repoRoot } from "../helpers/paths.js";

describe("prebuilt addon", () => {
  // avx2: the baseline; avx512: the one src/native/addon-file.ts picks where the CPU has it
  it.each(["linux-x64", "linux-x64-avx512"])("exists for %s and matches the native sources (run `npm run build:prebuild`)", (folder) => {
    const dir = join(repoRoot, "prebuilds", folder);
    expect(existsSync(join(dir, "gavel-router.node"))).toBe(true);
    const recorded = readFileSync(join(dir, "gavel-router.sources.sha256"), "utf8").trim();
    expect(recorded).toBe(nativeSourcesHash());
  });
});
