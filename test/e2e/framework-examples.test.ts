// The framework examples (examples/ai-sdk, examples/langchain, examples/mastra), run as the docs say
// (`node examples/<x>/index.mjs` after the build: they import gavel-router by its own name, which
// resolves to dist/). Each drives its framework's mock model over the embedded gavel-mini pair and the
// 24 example skills, the routed way and then the search tools; this checks that each runs to the end
// and prints the skills the routes and searches chose.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../helpers/paths.js";
import { runNode } from "../helpers/run.js";

/** Runs an example from the repository root; its output, after checking it exited cleanly. */
async function example(name: string): Promise<string> {
  const r = await runNode([join(repoRoot, "examples", name, "index.mjs")], { cwd: repoRoot, timeoutMs: 240_000 });
  expect(r.timedOut, r.err).toBe(false);
  expect(r.code, r.err).toBe(0);
  return r.out;
}

describe.skipIf(!existsSync(join(repoRoot, "dist", "adapters", "ai-sdk.js")))("the framework examples (after the build)", () => {
  it("examples/ai-sdk: prepareStep routes the photos to image-resizing and declines the haiku; searchSkills finds image-resizing for the work restated", async () => {
    const out = await example("ai-sdk");
    expect(out).toMatch(/thumbnails in WebP\.\n→ image-resizing\n/);
    expect(out).toMatch(/<skill name="image-resizing"/);
    expect(out).toMatch(/autumn leaves\.\n→ abstained: /);
    expect(out).toMatch(/searchSkills\("Resize and compress[^"]*"\)\n {2}1\. image-resizing \(score /);
    expect(out).toMatch(/loadSkill → image-resizing; answer: ok/);
  }, 300_000);

  it("examples/langchain: the middleware adds sql-query-tuning, search_skills chooses it and load_skill reads it", async () => {
    const out = await example("langchain");
    expect(out).toMatch(/system message: You are a helpful coding agent\.[^\n]*<skill name="sql-query-tuning"/);
    expect(out).toMatch(/search_skills →\nBest skill: sql-query-tuning\. Shortlist, best first:\n1\. sql-query-tuning /);
    expect(out).toMatch(/load_skill → # Skill: sql-query-tuning \(\d+ characters of its body\)/);
  }, 300_000);

  it("examples/mastra: the processor adds pdf-extract, search_skills chooses it and load_skill reads it cut", async () => {
    const out = await example("mastra");
    expect(out).toMatch(/system prompt: [^\n]*<skill name="pdf-extract"/);
    expect(out).toMatch(/search_skills → chosen pdf-extract; 1\. pdf-extract \(/);
    expect(out).toMatch(/load_skill → pdf-extract: \d+ characters of its body \(cut\), at .*pdf-extract[/\\]SKILL\.md/);
  }, 300_000);
});
