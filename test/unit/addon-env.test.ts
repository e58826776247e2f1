// GAVEL_ADDON names the addon to load: a path that is missing, a folder or not a .node file is
// NATIVE_UNAVAILABLE saying what is wrong with that path (not what an install lacks), relative paths
// are read from the working folder, and a JSON or JS file is never run as the addon.
import { describe, expect, it } from "vitest";
import { join } from "node:path";
import { explicitAddonMessage } from "../../src/native/binding.js";
import { runNode } from "../helpers/run.js";
import { repoRoot } from "../helpers/paths.js";

describe("GAVEL_ADDON", () => {
  it("says what is wrong with the path it names", () => {
    const err = new Error("dlopen failed\n  at stack");
    expect(explicitAddonMessage(join(repoRoot, "no-such.node"), err)).toMatch(/no-such\.node could not be loaded: no such file\. Unset GAVEL_ADDON/);
    expect(explicitAddonMessage(repoRoot, err)).toMatch(/could not be loaded: not a file\./);
    expect(explicitAddonMessage(join(repoRoot, "package.json"), err)).toMatch(/not a native addon .*: dlopen failed\. Unset/);
    expect(explicitAddonMessage(join(repoRoot, "prebuilds", "linux-x64", "gavel-router.node"), err)).toMatch(/could not be loaded: dlopen failed\. /);
  });

  it("reads a relative path from the working folder, and never requires a file that is not a .node", async () => {
    const cli = join(repoRoot, "dist", "cli", "gavel.js");
    const json = await runNode([cli, "info", "--addon"], { cwd: repoRoot, env: { ...process.env, GAVEL_ADDON: "package.json" }, timeoutMs: 120_000 });
    expect(json.code).toBe(1);
    expect(json.err).toMatch(/GAVEL_ADDON=package\.json could not be loaded: not a native addon/);
    expect(json.err).toMatch(/NATIVE_UNAVAILABLE/);
    const missing = await runNode([cli, "info", "--addon"], { cwd: repoRoot, env: { ...process.env, GAVEL_ADDON: "nope/gavel.node" }, timeoutMs: 120_000 });
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/GAVEL_ADDON=nope\/gavel\.node could not be loaded: no such file/);
  });
});
