// The lexical records' normaliser is read at a projections file's T, which the file stores rounded
// (45.25 for the grid's 2^5.5 = 45.2548…): within 1e-3 relative it is the grid's value, else a typed error.
import { describe, expect, it } from "vitest";
import { Bm25Index } from "../../src/lexical/bm25.js";
import { logPartition } from "../../src/lexical/posterior.js";
import { lexicalReadouts, logZAt } from "../../lab/eval/lexical-fit.js";

describe("logZAt", () => {
  const docs = ["parse pdf tables into csv", "write a dockerfile for a flask app", "tune a slow sql query", "resize images in bulk"].map((t, i) => ({ id: `s${i}`, name: `s${i}`, description: t, body: t }));
  const index = new Bm25Index(docs, { k1: 3, b: 1 });
  const row = new Map(docs.map((d, i) => [d.id, i]));
  const { lexical } = lexicalReadouts(index, row, "get the revenue table out of report.pdf into a csv", ["s0"]);
  it("reads the grid's normaliser at a rounded T and at the exact one", () => {
    const grid = lexical.logZ.find(([T]) => Math.abs(T - 45.25) < 0.01)!;
    expect(grid[0]).not.toBe(45.25);
    expect(logZAt(lexical, 45.25)).toBe(grid[1]);
    expect(logZAt(lexical, grid[0])).toBe(grid[1]);
    // the rounding costs under 1e-3 nats against the normaliser at exactly 45.25
    expect(Math.abs(logZAt(lexical, 45.25) - logPartition(index.scores("get the revenue table out of report.pdf into a csv"), 45.25))).toBeLessThan(1e-3);
  });
  it("refuses a T off the grid with a typed error", () => {
    expect(() => logZAt(lexical, 46)).toThrow(/no normaliser at T = 46/);
  });
});
