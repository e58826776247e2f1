// A model whose vocabulary spells "yes" and "no" with several tokens (the tiny llama's 512-token
// vocabulary) gives V = 0 for every skill: Router.open says so once per model file, as a process
// warning with the code GAVEL_NO_ANSWER_TOKENS; gavel-mini, which has them, opens without it.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Model, Projections, Router } from "../../src/index.js";
import { modelFingerprint } from "../../src/model/fingerprint.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";

const dir = mkdtempSync(join(tmpdir(), "gavel-answers-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function warningsDuring(use: () => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  const on = (w: Error & { code?: string }) => seen.push(`${w.code}: ${w.message}`);
  process.on("warning", on);
  try {
    await use();
    await new Promise((r) => setImmediate(r)); // emitWarning reports on the next tick
  } finally {
    process.off("warning", on);
  }
  return seen.filter((w) => w.startsWith("GAVEL_NO_ANSWER_TOKENS"));
}

describe("a model with no single-token yes/no", () => {
  it("is warned about once per model file when a router opens on it; gavel-mini is not", async () => {
    const tiny = await Model.load(TINY_LLAMA_PATH, { contextSize: 512, threads: 1 });
    try {
      const projections = await Projections.random(await modelFingerprint(tiny), { seed: 3, dim: 8 });
      const seen = await warningsDuring(async () => {
        for (const b of ["a", "b"]) await (await Router.open(tiny, { projections, bankDir: join(dir, b), skillBudget: 256 })).close();
      });
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatch(/no single token for "yes" or "no".*V is 0 for every skill/);
    } finally {
      await tiny.dispose();
    }
    const mini = await Model.load(DEFAULT_MODEL, { contextSize: 2048, threads: 1 });
    try {
      const seen = await warningsDuring(async () => (await Router.open(mini, { projections: DEFAULT_PROJECTIONS, bankDir: join(dir, "c") })).close());
      expect(seen).toEqual([]);
    } finally {
      await mini.dispose();
    }
  });
});
