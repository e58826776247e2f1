// The README's examples are run as written (with "gavel-router" pointing at this build).
import { describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot, sharedDir } from "../helpers/paths.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";
import { runNode } from "../helpers/run.js";

/** A fenced block's content: anything up to the first closing fence (never across blocks). */
const FENCED = "((?:(?!```)[\\s\\S])*)```";

function jsBlocks(markdown: string): string[] {
  return [...markdown.matchAll(new RegExp("```js\\n" + FENCED, "g"))].map((m) => m[1]);
}

/** The output a js block is shown with: the ```text block right after it, if any (by the block's code). */
function shownOutputs(markdown: string): Map<string, string> {
  return new Map([...markdown.matchAll(new RegExp("```js\\n" + FENCED + "\\n\\n```text\\n" + FENCED, "g"))].map((m) => [m[1], m[2]]));
}

/** A number as the README prints one (a minus sign or U+2212, digits, an optional fraction). */
const NUMBER = /[-\u2212]?\d+(?:\.\d+)?/g;
const numberValue = (text: string): number => Number(text.replace("\u2212", "-"));

/**
 * Whether `out` is what `shown` shows: line for line, where each "…" of a shown line stands for any
 * text, as little as lets the line match (the README shortens the long abstention reasons so), and
 * each number shown matches the number printed in its place within one unit of its last shown digit
 * (the model's floats differ in their last bits between the addon's AVX2 and AVX-512 builds).
 */
function matchesShown(out: string, shown: string): boolean {
  const outLines = out.replace(/\n$/, "").split("\n");
  const shownLines = shown.replace(/\n$/, "").split("\n");
  if (outLines.length !== shownLines.length) return false;
  return shownLines.every((line, i) => {
    const numbers = line.match(NUMBER) ?? [];
    const pattern = line.split(NUMBER).map((text) => text.split("…").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("[\\s\\S]*?"))
      .join("([-\u2212]?\\d+(?:\\.\\d+)?)");
    const m = new RegExp(`^${pattern}$`).exec(outLines[i]);
    return m !== null && numbers.every((text, k) => {
      const unit = 10 ** -(text.split(".")[1]?.length ?? 0);
      return Math.abs(numberValue(m[k + 1]) - numberValue(text)) <= unit * 1.000001;
    });
  });
}

describe("README", () => {
  const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
  const blocks = jsBlocks(readme);
  const outputs = shownOutputs(readme);
  it("has runnable examples", () => {
    expect(blocks.length).toBeGreaterThan(0);
    // the abstention example (issue 13) shows what it prints: one block's code, keyed as the runs look it up
    const shownFor = blocks.filter((code) => outputs.has(code));
    expect(shownFor.length).toBe(outputs.size);
    expect(shownFor.some((code) => code.includes("r.abstained"))).toBe(true);
  });
  it("compares an output with its shortened form line for line", () => {
    expect(matchesShown("a (long reason) 0.5, more\nb\n", "a (…) 0.5, …\nb")).toBe(true);
    expect(matchesShown("a (long reason) 0.7, more\nb\n", "a (…) 0.5, …\nb")).toBe(false);
    expect(matchesShown("a 0.5\n", "a 0.5\nb")).toBe(false);
    // a number within one unit of its last shown digit matches; two units off does not
    expect(matchesShown("p 0.0860, logit \u22122.36 (+3)", "p 0.0859, logit \u22122.37 (+3)")).toBe(true);
    expect(matchesShown("p 0.0861, logit \u22122.37 (+3)", "p 0.0859, logit \u22122.37 (+3)")).toBe(false);
    expect(matchesShown("p 0.0859, logit 2.37 (+3)", "p 0.0859, logit \u22122.37 (+3)")).toBe(false);
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
    if (shown !== undefined) expect(matchesShown(res.out, shown), `printed:\n${res.out}\nshown:\n${shown}`).toBe(true);
  }, 300_000);
});
