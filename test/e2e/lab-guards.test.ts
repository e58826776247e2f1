// The lab's commands say when a result means nothing: `gavel calibrate` on records none of which
// holds a gold in its verdict pool warns that its fit is arbitrary (every setting scores 0), not when
// one does, and its ceiling line names the records' own pool; `gavel eval` refuses a task file with no
// task to score (it printed a table of zeros); `gavel train-gate` and `gavel layer` check their output
// paths and --batches before any work, in one typed line.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { runNode } from "../helpers/run.js";
import { cli } from "../helpers/serve-process.js";
import { repoRoot } from "../helpers/paths.js";

const dir = mkdtempSync(join(tmpdir(), "gavel-calibrate-guard-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A record whose verdict pool (pool 3) holds `skills`, the gold being "gold". */
const record = (id: string, skills: [string, number, number, number][]) =>
  JSON.stringify({ id, golds: ["gold"], accepted: ["gold"], pool: 3, glance: skills.map(([skill, g]) => ({ skill, g })), verdict: skills.map(([skill, g, L, V]) => ({ skill, g, L, V })) });

describe("the lab's commands on inputs with nothing to measure", () => {
  it("gavel calibrate warns when no record has a gold in its verdict pool, and not when one does", async () => {
    const none = join(dir, "none.jsonl");
    writeFileSync(none, [record("t1", [["a", 0.9, -1, 0], ["b", 0.8, -2, 0]]), record("t2", [["c", 0.7, -1, 1], ["d", 0.6, -1, 0]])].join("\n") + "\n");
    const out = join(dir, "none.gguf");
    const r = await runNode([cli, "calibrate", "--per-query", none, "--projections", DEFAULT_PROJECTIONS, "--out", out], { timeoutMs: 120_000 });
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(/warning: none of the 2 records has a gold in its verdict pool \(ceiling 0%\).*arbitrary \(written as asked\)/);
    expect(existsSync(out)).toBe(true);
    const some = join(dir, "some.jsonl");
    writeFileSync(some, [record("t1", [["a", 0.9, -1, 0], ["gold", 0.8, -0.5, 1]]), record("t2", [["c", 0.7, -1, 1], ["d", 0.6, -1, 0]])].join("\n") + "\n");
    const out2 = join(dir, "some.gguf");
    const w = await runNode([cli, "calibrate", "--per-query", some, "--projections", DEFAULT_PROJECTIONS, "--out", out2], { timeoutMs: 120_000 });
    expect(w.code, w.err).toBe(0);
    expect(w.err).not.toMatch(/warning/);
    expect(w.out).toMatch(/ceiling \(a gold anywhere in the verdict pool of 3\): 50\.0%/);
    expect(existsSync(out2)).toBe(true);
  });

  it("gavel eval refuses a task file with no task, or none in the batches asked for", async () => {
    const empty = join(dir, "empty.jsonl");
    writeFileSync(empty, "");
    const one = join(dir, "one.jsonl");
    writeFileSync(one, JSON.stringify({ id: "a", text: "Write a Dockerfile for the app", gold_skill_ids: ["dockerfile"], batch: "batch1" }) + "\n");
    const base = ["eval", "--library", join(repoRoot, "examples", "skills"), "--methods", "bm25"];
    const e = await runNode([cli, ...base, "--tasks", empty], { timeoutMs: 120_000 });
    expect(e.code).toBe(1);
    expect(e.err).toMatch(/no tasks: .*empty\.jsonl holds none \[INVALID_ARGUMENT\]/);
    const b = await runNode([cli, ...base, "--tasks", one, "--batches", "6-10"], { timeoutMs: 120_000 });
    expect(b.code).toBe(1);
    expect(b.err).toMatch(/none of the 1 in .*one\.jsonl is in batches 6-10/);
    const ok = await runNode([cli, ...base, "--tasks", one], { timeoutMs: 120_000 });
    expect(ok.code, ok.err).toBe(0);
    expect(ok.out).toMatch(/bm25 +1\.000 +1\.000 +1/);
  });

  it("gavel train-gate and gavel layer refuse a bad output path or --batches before any work, typed, in one line", async () => {
    const tasks = join(dir, "gate-tasks.jsonl");
    writeFileSync(tasks, JSON.stringify({ id: "a", text: "Write a Dockerfile for the app", gold_skill_ids: ["dockerfile"], batch: "batch1" }) + "\n");
    const folder = join(dir, "a-folder");
    mkdirSync(folder);
    const missing = join(dir, "missing", "gate.json");
    const gate = (...args: string[]) => runNode([cli, "train-gate", "--tasks", tasks, ...args], { timeoutMs: 120_000, env: { ...process.env, GAVEL_MODEL: "", GAVEL_PROJECTIONS: "" } });
    const out = await gate("--out", missing);
    expect(out.code).toBe(1);
    expect(out.err).toBe(`gavel: --out ${missing}: its folder ${join(dir, "missing")} does not exist [FILE_NOT_FOUND]\n`);
    // --out with --trajectories-only would be ignored: a usage error, and nothing is written
    const both = await gate("--trajectories-only", "--out", join(dir, "gate.gguf"));
    expect(both.code).toBe(2);
    expect(both.err).toContain("gavel train-gate --trajectories-only writes no gate file: drop --out");
    expect(existsSync(join(dir, "gate.gguf"))).toBe(false);
    const save = await gate("--trajectories-only", "--save-trajectories", folder);
    expect(save.code).toBe(1);
    expect(save.err).toBe(`gavel: --save-trajectories ${folder} is a folder: give the trajectories file to write [INVALID_ARGUMENT]\n`);
    expect(readdirSync(folder)).toEqual([]); // no temporary file left behind
    for (const spec of ["1-100000000", "1-30000000"]) {
      const b = await gate("--trajectories-only", "--batches", spec, "--json");
      expect(b.code).toBe(1);
      expect(JSON.parse(b.err)).toMatchObject({ error: { code: "INVALID_ARGUMENT", message: expect.stringMatching(/^--batches .* names more than 10000 batches/) } });
    }
    const ev = await runNode([cli, "eval", "--library", join(repoRoot, "examples", "skills"), "--methods", "bm25", "--tasks", tasks, "--batches", "1-30000000"], { timeoutMs: 120_000 });
    expect(ev.code).toBe(1);
    expect(ev.err).toMatch(/--batches 1-30000000 names more than 10000 batches.*\[INVALID_ARGUMENT\]/);
    // gavel layer makes a missing folder, but a folder in the file's place fails before the model loads
    const layer = await runNode([cli, "layer", join(repoRoot, "examples", "skills"), "--model", join(dir, "no-model.gguf"), "--out", folder], { timeoutMs: 120_000 });
    expect(layer.code).toBe(1);
    expect(layer.err).toBe(`gavel: --out ${folder} is a folder: give the layer choice file to write [INVALID_ARGUMENT]\n`);
  });
});
