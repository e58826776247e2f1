// The README's examples are run as written (with "gavel-router" pointing at this build).
import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot, storiesPath } from "../helpers/paths.js";

function jsBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);
}

describe("README", () => {
  const blocks = jsBlocks(readFileSync(join(repoRoot, "README.md"), "utf8"));
  it("has runnable examples", () => {
    expect(blocks.length).toBeGreaterThan(0);
  });
  it.each(blocks.map((b, i) => [i, b] as const))("example %i runs", (_, code) => {
    const dir = mkdtempSync(join(tmpdir(), "gavel-readme-"));
    const file = join(dir, "example.mjs");
    writeFileSync(file, code.replaceAll('"gavel-router"', JSON.stringify(join(repoRoot, "dist", "index.js"))));
    const res = spawnSync(process.execPath, [file], {
      encoding: "utf8",
      cwd: dir,
      timeout: 240_000,
      env: { ...process.env, GAVEL_MODEL: storiesPath, GAVEL_SHARED: join(repoRoot, "..", "shared") },
    });
    expect(res.status, res.stderr + res.stdout).toBe(0);
    expect(res.stdout.length).toBeGreaterThan(0);
  });
});
