// The addon users install is the one in prebuilds/: it must be built from the sources in this tree.
import { describe, expect, it } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
// @ts-expect-error plain .mjs build script without types
import { nativeSourcesHash } from "../../scripts/native-sources.mjs";
import { repoRoot } from "../helpers/paths.js";

describe("prebuilt addon", () => {
  const dir = join(repoRoot, "prebuilds", "linux-x64");
  it("exists for linux-x64 and matches the native sources (run `npm run build:prebuild`)", () => {
    expect(existsSync(join(dir, "gavel-router.node"))).toBe(true);
    const recorded = readFileSync(join(dir, "gavel-router.sources.sha256"), "utf8").trim();
    expect(recorded).toBe(nativeSourcesHash());
  });
});
