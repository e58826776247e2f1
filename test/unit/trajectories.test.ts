// The gate's trajectories from SWE-Skills-Bench: deterministic from their seed, built from the
// selected batches only (no task of batches 6-10 leaks into a training build), shaped as a bash
// agent's context with the need at the decision point and only there.
import { beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { loadTasks, type EvalTask } from "../../lab/eval/tasks.js";
import { AGENT_SYSTEM_PROMPT, buildTrajectories, cutTaskText, splitTrajectories } from "../../lab/gate/trajectories.js";
import { sharedDir, needsShared, SHARED } from "../helpers/paths.js";
import { freshSeed } from "../helpers/random.js";

const NO_SHARED = needsShared("SWE-Skills-Bench's tasks", SHARED.benchTasks);

const tasksPath = join(sharedDir, "data", "swe-skills-bench", "tasks.jsonl");
const batchOf = (t: EvalTask) => Number(/(\d+)$/.exec(String(t.batch))![1]);

describe.skipIf(NO_SHARED)("gate trajectories", () => {
  let tasks: EvalTask[];
  beforeAll(async () => {
    tasks = await loadTasks(tasksPath);
  });

  it("the same seed gives the same trajectories; another seed others", () => {
    const seed = freshSeed();
    const a = buildTrajectories(tasks, { batches: [1, 2, 3, 4, 5], seed });
    const b = buildTrajectories(tasks, { batches: [1, 2, 3, 4, 5], seed });
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
    const c = buildTrajectories(tasks, { batches: [1, 2, 3, 4, 5], seed: (seed + 1) >>> 0 });
    expect(JSON.stringify(c)).not.toBe(JSON.stringify(a));
    expect(a.length).toBe(2 * a.filter((t) => t.needsSkill).length);
  });

  it("a training build holds no task of batches 6-10, not even its text", () => {
    const train = buildTrajectories(tasks, { batches: [1, 2, 3, 4, 5], seed: freshSeed(), perTask: 2 });
    const trainIds = new Set(tasks.filter((t) => batchOf(t) <= 5).map((t) => t.id));
    for (const t of train) {
      if (t.task !== null) {
        expect(trainIds.has(t.task)).toBe(true);
        expect(t.batch).toBeGreaterThanOrEqual(1);
        expect(t.batch).toBeLessThanOrEqual(5);
      }
    }
    // every positive's decision text is the start of its own task, never of a test task
    const testHeads = tasks.filter((t) => batchOf(t) >= 6).map((t) => cutTaskText(t.text, 200));
    const all = train.flatMap((t) => t.messages.map((m) => m.content)).join("\n\u0000");
    for (const h of testHeads) expect(all.includes(h)).toBe(false);
    // and a test build is disjoint from it
    const test = buildTrajectories(tasks, { batches: [6, 7, 8, 9, 10], seed: 1 });
    const testTasks = new Set(test.map((t) => t.task).filter((x) => x !== null));
    expect(train.some((t) => t.task !== null && testTasks.has(t.task))).toBe(false);
  });

  it("a bash agent's context: system prompt, noise, the need at the decision point only", () => {
    const ts = buildTrajectories(tasks, { batches: [2], seed: freshSeed(), negatives: 20 });
    const byId = new Map(tasks.map((t) => [t.id, t]));
    for (const t of ts) {
      expect(t.messages[0]).toEqual({ role: "system", content: AGENT_SYSTEM_PROMPT });
      expect(t.decision).toBe(t.messages.length - 1);
      // roles alternate after the system prompt, starting with the user
      t.messages.slice(1).forEach((m, i) => expect(m.role).toBe(i % 2 === 0 ? "user" : "assistant"));
      // noise before the decision: at least one bash command and its output
      expect(t.messages.slice(1, t.decision).some((m) => m.role === "assistant" && m.content.includes("```bash"))).toBe(true);
      const last = t.messages[t.decision].content;
      if (t.needsSkill) {
        const head = cutTaskText(byId.get(t.task!)!.text, 1500);
        expect(last.includes(head)).toBe(true);
        // the task appears nowhere before the decision point
        expect(t.messages.slice(0, t.decision).some((m) => m.content.includes(head.slice(0, 60)))).toBe(false);
        if (t.scenario === "tool-evidence") expect(t.messages[t.decision - 1].content).toMatch(/cat tickets\/T-\d+\.md/);
      } else {
        expect(t.gold).toEqual([]);
        expect(last).toMatch(/# Task: /);
      }
    }
  });

  it("the held-out split keeps a task's trajectories together and is seeded", () => {
    const ts = buildTrajectories(tasks, { batches: [1, 2], seed: 9, perTask: 2 });
    const a = splitTrajectories(ts, 0.25, 4);
    const b = splitTrajectories(ts, 0.25, 4);
    expect(a.held.map((t) => t.id)).toEqual(b.held.map((t) => t.id));
    const heldTasks = new Set(a.held.map((t) => t.task).filter((x) => x !== null));
    expect(a.train.some((t) => t.task !== null && heldTasks.has(t.task))).toBe(false);
    expect(a.held.length).toBeGreaterThan(0.1 * ts.length);
    expect(a.held.length).toBeLessThan(0.4 * ts.length);
  });

  it("refuses bad options", () => {
    expect(() => buildTrajectories(tasks, { batches: [] })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => buildTrajectories(tasks, { batches: [42] })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => buildTrajectories(tasks, { batches: [1], noise: [3, 1] })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => buildTrajectories(tasks, { batches: [1], seed: -1 })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
  });
});
