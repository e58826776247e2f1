// The package root (src/util/package-root.ts): the nearest folder whose package.json names
// gavel-router, in a clone and in an installed copy (which ships no build files), past a dependent
// project's own package.json and a damaged one.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { findPackageRoot } from "../../src/util/package-root.js";
import { repoRoot } from "../helpers/paths.js";

const root = mkdtempSync(join(tmpdir(), "gavel-root-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("the package root", () => {
  it("is the repository for the sources", () => {
    expect(findPackageRoot(join(repoRoot, "src", "util"))).toBe(repoRoot);
  });

  it("is the installed copy under a dependent project, whatever the project's own package.json says", () => {
    const app = join(root, "app");
    const pkg = join(app, "node_modules", "gavel-router");
    mkdirSync(join(pkg, "dist", "cli"), { recursive: true });
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "my-agent", dependencies: { "gavel-router": "*" } }));
    writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: "gavel-router", version: "0.1.0" }));
    expect(findPackageRoot(join(pkg, "dist", "cli"))).toBe(pkg);
    // a folder with a damaged package.json, or another package's, is walked past
    const nested = join(pkg, "dist", "x");
    mkdirSync(nested, { recursive: true });
    writeFileSync(join(nested, "package.json"), "{ not json");
    writeFileSync(join(pkg, "dist", "package.json"), JSON.stringify({ type: "module" }));
    expect(findPackageRoot(nested)).toBe(pkg);
  });

  it("is null when no folder above names gavel-router", () => {
    const lone = join(root, "lone", "dist");
    mkdirSync(lone, { recursive: true });
    writeFileSync(join(root, "lone", "package.json"), JSON.stringify({ name: "something-else" }));
    // the walk goes on to / : only a folder above the temp dir could name gavel-router, and none does
    expect(findPackageRoot(lone)).toBeNull();
  });
});
