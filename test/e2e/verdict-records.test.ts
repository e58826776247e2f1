// scripts/backbone/verdict-records.ts (issue 14's verdict columns without a bank): for recorded glance
// lists it must read the same L and V as the Router's own verdict over the same candidates, since the
// tables it feeds stand for `gavel eval --methods ruling`. Here: the embedded pair over examples/skills,
// Router.rank's verdict for two demo tasks' top 6, then the script over records holding only their
// glance lists (the skills' text comes from the library folder, not the bank), in a child process as
// a user runs it.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Model, Router } from "../../src/index.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { readPerQuery } from "../../lab/eval/io.js";
import { repoRoot } from "../helpers/paths.js";
import { run } from "../helpers/run.js";

/**
 * Tolerance: the same tokens scored by two model instances that batch differently (the router's
 * default batch against the script's one wave of 6 sequences); with the exact settings log-probs move
 * by float32 reordering only (≤ 1e-4 nats, test/model/score-layout.test.ts), and L is their mean.
 */
const TOL = 1e-4;
const TOP = 6;

const root = mkdtempSync(join(tmpdir(), "gavel-verdict-records-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("verdict-records.ts", () => {
  it("reads the Router's own L and V for the recorded glance lists", async () => {
    const skillsDir = join(repoRoot, "examples", "skills");
    const demo = JSON.parse(readFileSync(join(repoRoot, "examples", "demo-tasks.json"), "utf8")) as { task: string; expected: string | null }[];
    const tasks = demo.filter((t) => t.expected !== null).slice(0, 2).map((t, i) => ({ id: `t${i}`, text: t.task, gold_skill_ids: [t.expected!] }));

    // the eval's settings, which the script uses by default: context 2048, skill budget 512
    const model = await Model.load(DEFAULT_MODEL, { contextSize: 2048, threads: 1 });
    const want = new Map<string, { L: number; V: number }>();
    const records: object[] = [];
    try {
      const router = await Router.open(model, { projections: DEFAULT_PROJECTIONS, bankDir: join(root, "bank"), skillBudget: 512 });
      try {
        await router.install(skillsDir);
        for (const t of tasks) {
          const { glance, verdict } = await router.rank(t.text, { glanceTop: TOP, verdictTop: TOP });
          expect(verdict).toHaveLength(TOP);
          for (const v of verdict) want.set(`${t.id} ${v.skill}`, { L: v.L, V: v.V });
          records.push({ id: t.id, golds: t.gold_skill_ids, accepted: t.gold_skill_ids, glance: glance.map(({ skill, g }) => ({ skill, g })) });
        }
      } finally {
        await router.close();
      }
    } finally {
      await model.dispose();
    }
    const recordsPath = join(root, "glance.jsonl");
    const tasksPath = join(root, "tasks.jsonl");
    const out = join(root, "verdict.jsonl");
    writeFileSync(recordsPath, records.map((r) => JSON.stringify(r)).join("\n") + "\n");
    writeFileSync(tasksPath, tasks.map((t) => JSON.stringify(t)).join("\n") + "\n");

    const args = ["--model", DEFAULT_MODEL, "--records", recordsPath, "--tasks", tasksPath, "--library", skillsDir, "--out", out, "--top", String(TOP), "--threads", "1"];
    const ran = await run(join(repoRoot, "node_modules", ".bin", "vite-node"), [join(repoRoot, "scripts", "backbone", "verdict-records.ts"), "--", ...args], {
      cwd: repoRoot,
      timeoutMs: 240_000,
    });
    expect(ran.code, ran.err).toBe(0);
    const got = await readPerQuery(out);
    expect(got.map((r) => r.id)).toEqual(tasks.map((t) => t.id));
    let compared = 0;
    for (const r of got) {
      // the glance's top TOP, in glance order, each with the router's L and V
      const glance = (records.find((x) => (x as { id: string }).id === r.id) as { glance: { skill: string }[] }).glance;
      expect(r.verdict!.map((v) => v.skill)).toEqual(glance.slice(0, TOP).map((h) => h.skill));
      for (const v of r.verdict!) {
        const w = want.get(`${r.id} ${v.skill}`)!;
        expect(Math.abs(v.L - w.L), `${r.id} ${v.skill} L`).toBeLessThanOrEqual(TOL);
        expect(Math.abs(v.V - w.V), `${r.id} ${v.skill} V`).toBeLessThanOrEqual(TOL);
        compared++;
      }
      expect(r.chosen?.ruling === null || r.verdict!.some((v) => v.skill === r.chosen!.ruling)).toBe(true);
    }
    expect(compared).toBe(tasks.length * TOP);

    // resumable: a second run finds every record done and appends nothing
    const again = await run(join(repoRoot, "node_modules", ".bin", "vite-node"), [join(repoRoot, "scripts", "backbone", "verdict-records.ts"), "--", ...args], {
      cwd: repoRoot,
      timeoutMs: 240_000,
    });
    expect(again.code, again.err).toBe(0);
    expect(await readPerQuery(out)).toHaveLength(tasks.length);
  }, 600_000);
});
