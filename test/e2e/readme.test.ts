// The README's examples are run as written (with "gavel-router" pointing at this build).
import { describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot, sharedDir } from "../helpers/paths.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";
import { runNode } from "../helpers/run.js";

function jsBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);
}

/** The output a js block is shown with: the ```text block right after it, if any (by the block's code). */
function shownOutputs(markdown: string): Map<string, string> {
  return new Map([...markdown.matchAll(/```js\n([\s\S]*?)```\n\n```text\n([\s\S]*?)```/g)].map((m) => [m[1], m[2]]));
}

describe("README", () => {
  const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
  const blocks = jsBlocks(readme);
  const outputs = shownOutputs(readme);
  it("has runnable examples", () => {
    expect(blocks.length).toBeGreaterThan(0);
    // the abstention example (issue 13) shows what it prints
    expect([...outputs.keys()].some((code) => code.includes("r.abstained"))).toBe(true);
  });
  it.each(blocks.map((b, i) => [i, b] as const))("example %i runs", async (_, code) => {
    const dir = mkdtempSync(join(tmpdir(), "gavel-readme-"));
    const file = join(dir, "example.mjs");
    writeFileSync(file, code.replaceAll('"gavel-router"', JSON.stringify(join(repoRoot, "dist", "index.js"))));
    // asynchronous: a long spawnSync would block the worker's event loop (no progress, no timeout)
    const res = await runNode([file], {
      cwd: dir,
      timeoutMs: 240_000,
      env: { ...process.env, GAVEL_MODEL: TINY_LLAMA_PATH, GAVEL_SHARED: sharedDir },
    });
    expect(res.code, res.err + res.out).toBe(0);
    expect(res.out.length).toBeGreaterThan(0);
    // an example shown with its output prints exactly that (the abstention example: the embedded pair
    // declines the off-domain prompt and routes the in-domain one, with the reasons)
    const shown = outputs.get(code);
    if (shown !== undefined) expect(res.out).toBe(shown);
  }, 300_000);
});
