// `gavel calibrate --write` on records none of which holds a gold in its verdict pool refuses to
// write (every setting scores 0, so any fit is arbitrary), and writes when one does; the ceiling line
// names the records' own pool.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { runNode } from "../helpers/run.js";
import { cli } from "../helpers/serve-process.js";

const dir = mkdtempSync(join(tmpdir(), "gavel-calibrate-guard-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A record whose verdict pool (pool 3) holds `skills`, the gold being "gold". */
const record = (id: string, skills: [string, number, number, number][]) =>
  JSON.stringify({ id, golds: ["gold"], accepted: ["gold"], pool: 3, glance: skills.map(([skill, g]) => ({ skill, g })), verdict: skills.map(([skill, g, L, V]) => ({ skill, g, L, V })) });

describe("gavel calibrate --write", () => {
  it("refuses records with no gold in any verdict pool, and writes when there is one", async () => {
    const none = join(dir, "none.jsonl");
    writeFileSync(none, [record("t1", [["a", 0.9, -1, 0], ["b", 0.8, -2, 0]]), record("t2", [["c", 0.7, -1, 1], ["d", 0.6, -1, 0]])].join("\n") + "\n");
    const out = join(dir, "none.gguf");
    const r = await runNode([cli, "calibrate", "--per-query", none, "--projections", DEFAULT_PROJECTIONS, "--out", out], { timeoutMs: 120_000 });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/none of the 2 records has a gold in its verdict pool \(ceiling 0%\).*nothing was written.*\[INVALID_ARGUMENT\]/);
    expect(existsSync(out)).toBe(false);
    const some = join(dir, "some.jsonl");
    writeFileSync(some, [record("t1", [["a", 0.9, -1, 0], ["gold", 0.8, -0.5, 1]]), record("t2", [["c", 0.7, -1, 1], ["d", 0.6, -1, 0]])].join("\n") + "\n");
    const out2 = join(dir, "some.gguf");
    const w = await runNode([cli, "calibrate", "--per-query", some, "--projections", DEFAULT_PROJECTIONS, "--out", out2], { timeoutMs: 120_000 });
    expect(w.code, w.err).toBe(0);
    expect(w.out).toMatch(/ceiling \(a gold anywhere in the verdict pool of 3\): 50\.0%/);
    expect(existsSync(out2)).toBe(true);
  });
});
