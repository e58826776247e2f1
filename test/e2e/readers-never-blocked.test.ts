// Issue 17, "readers never blocked": routes and lists read the last committed snapshot while another
// process installs and uninstalls (no BANK_LOCKED, every result one committed state), and in one
// process a route racing an uninstall or a replacing reinstall sees one state from start to end.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GavelError, Model, Projections, Router } from "../../src/index.js";
import { repoRoot, viteNodeCli } from "../helpers/paths.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";
import { READER_TASKS, readerSkill, stateOf } from "../helpers/reader-skills.js";
import { expectCode } from "../helpers/gavel-error.js";

let model: Model;
const PROJ_SEED = 1717;
let projections: Projections;
const dirs: string[] = [];
const open = (bankDir: string, extra: { readOnly?: boolean } = {}) => Router.open(model, { projections, bankDir, skillBudget: 128, ...extra });

beforeAll(async () => {
  model = await Model.load(TINY_LLAMA_PATH, { contextSize: 1024, sequences: 4, threads: 1 });
  projections = await Projections.random(model, { seed: PROJ_SEED, dim: 32 });
});
afterAll(async () => {
  await model?.dispose();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function bankOf(skills: number): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "gavel-readers-"));
  dirs.push(dir);
  const router = await open(dir);
  await router.install(Array.from({ length: skills }, (_, i) => readerSkill(`s${i}`, 1, i)));
  await router.close();
  return dir;
}

describe("readers across processes", () => {
  it("list and route never get BANK_LOCKED while another process installs and uninstalls, and see only committed states", async () => {
    const dir = await bankOf(6);
    const ops = 9;
    const child = spawn(process.execPath, [viteNodeCli, join(repoRoot, "test", "helpers", "bank-writer-child.ts"), dir, String(PROJ_SEED), String(ops)], { cwd: repoRoot });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
    // the writer's lines, as they come
    const states: string[] = [];
    let done = false;
    let waiter: (() => void) | null = null;
    createInterface({ input: child.stdout }).on("line", (line) => {
      if (line.startsWith("state ")) states.push(JSON.parse(line.slice(6)) as string);
      if (line === "done") done = true;
      waiter?.();
    });
    const nextLine = () => new Promise<void>((resolve) => (waiter = resolve));

    type Sample = { kind: string; state: string; chosen: string | null; shortlist: string[]; ms: number; locked: boolean };
    const samples: Sample[] = [];
    const errors: string[] = [];
    const lock = join(dir, "lock");
    const longLived = await open(dir, { readOnly: true });
    const sample = async (i: number) => {
      const task = READER_TASKS[i % READER_TASKS.length];
      const locked = existsSync(lock);
      const t = performance.now();
      try {
        if (i % 2 === 0) {
          // a fresh reader, as `gavel route` / `gavel list` open one
          const r = await open(dir, { readOnly: true });
          try {
            const res = await r.route(task, { abstain: false });
            samples.push({ kind: "fresh", state: stateOf(r.list()), chosen: res.skill, shortlist: res.shortlist.map((c) => c.skill), ms: performance.now() - t, locked });
          } finally {
            await r.close();
          }
        } else {
          const res = await longLived.route(task, { abstain: false });
          samples.push({ kind: "long-lived", state: stateOf(longLived.list()), chosen: res.skill, shortlist: res.shortlist.map((c) => c.skill), ms: performance.now() - t, locked });
        }
      } catch (err) {
        errors.push(err instanceof GavelError ? `${err.code}: ${err.message}` : String(err));
      }
    };
    let i = 0;
    let sent = 0;
    while (!done) {
      if (states.length === 0) {
        await nextLine();
        continue;
      }
      // one "go" per state printed, each after a sample that started once that state was printed
      // (the writer waits for it, so the sample reads that very state): every committed state is read
      const seen = states.length;
      await sample(i++);
      if (sent < seen && sent <= ops) {
        // the last "go" lets the writer close once its last state was read
        child.stdin.write("go\n");
        sent++;
      } else if (sent > ops && !done) {
        await Promise.race([nextLine(), new Promise((r) => setTimeout(r, 50))]);
      }
    }
    await longLived.close();
    expect(await exited, stderr).toBe(0);
    expect(errors).toEqual([]); // no BANK_LOCKED, nor anything else
    expect(states).toHaveLength(ops + 1);
    // every sample is one committed state, whole: its routed skills among its own
    for (const s of samples) {
      expect(states, `${s.kind} sample`).toContain(s.state);
      const ids = new Set(s.state.split("\n").map((l) => l.split("|")[0]));
      for (const id of [s.chosen!, ...s.shortlist]) expect(ids.has(id), `${id} in its state`).toBe(true);
    }
    // every state was read, while the writer held the lock
    expect(new Set(samples.map((s) => s.state))).toEqual(new Set(states));
    expect(samples.filter((s) => s.locked).length).toBeGreaterThanOrEqual(ops + 1);
    // the long-lived reader moves forward only
    const order = samples.filter((s) => s.kind === "long-lived").map((s) => states.indexOf(s.state));
    expect(order).toEqual([...order].sort((a, b) => a - b));
    const ms = samples.map((s) => s.ms).sort((a, b) => a - b);
    console.log(`readers: ${samples.length} samples during ${ops} commits of another process, 0 refused; latency median ${ms[ms.length >> 1].toFixed(0)} ms, max ${ms[ms.length - 1].toFixed(0)} ms`);
  });

  it("a read-only router refuses install and uninstall, and opens no bank that is not there", async () => {
    const dir = await bankOf(2);
    const r = await open(dir, { readOnly: true });
    await expectCode(r.install([readerSkill("x", 1, 0)]), "INVALID_ARGUMENT", /read-only/);
    await expectCode(r.uninstall("s0"), "INVALID_ARGUMENT");
    expect(r.list().map((s) => s.id)).toEqual(["s0", "s1"]);
    await r.close();
    expect(existsSync(join(dir, "lock"))).toBe(false);
    await expectCode(open(join(dir, "nope"), { readOnly: true }), "FILE_NOT_FOUND");
    expect(existsSync(join(dir, "nope"))).toBe(false);
    await expectCode(Router.open(model, { projections, bankDir: dir, readOnly: true, create: true }), "INVALID_ARGUMENT");
  });
});

describe("a route racing an uninstall or a reinstall in one process", () => {
  it("sees one state from start to end: a route that started before an uninstall ranks the skill, and nothing fails", async () => {
    const n = 8;
    const dir = await bankOf(n);
    const refDir = await bankOf(n);
    const order = ["s3", "s0", "s6", "s1"];
    const task = READER_TASKS[0];
    // reference glances of each state, on a second bank changed the same way one step at a time
    const ref = await open(refDir);
    const refState: Map<string, number>[] = [];
    for (let k = 0; k <= order.length; k++) {
      refState.push(new Map((await ref.glance(task, { topK: 100 })).map((h) => [h.skill, h.g])));
      if (k < order.length) await ref.uninstall(order[k]);
    }
    await ref.close();

    const router = await open(dir);
    for (let k = 0; k < order.length; k++) {
      // routes and glances called before the uninstall, then the uninstall, then more of them at once
      const before = [router.glance(task, { topK: 100 }), router.route(task, { abstain: false }), router.glance(task, { topK: 100 })] as const;
      const removed = router.uninstall(order[k]);
      const after = [router.glance(task, { topK: 100 }), router.route(task, { abstain: false })] as const;
      const settled = await Promise.allSettled([...before, removed, ...after]);
      for (const s of settled) expect(s.status === "rejected" ? String((s as PromiseRejectedResult).reason) : "ok").toBe("ok");
      const [g1, r1, g2] = await Promise.all(before);
      // a glance that started before the uninstall saw state k exactly (its skills and their g)
      for (const g of [g1, g2]) {
        expect(new Map(g.map((h) => [h.skill, h.g]))).toEqual(refState[k]);
      }
      // the route too: its shortlist is among state k's skills with state k's g, and it can load its choice
      for (const c of r1.shortlist) expect(c.g).toBe(refState[k].get(c.skill));
      expect(r1.load?.id).toBe(r1.skill);
      // those called after it saw state k or k + 1, whole
      const [g3, r2] = await Promise.all(after);
      const got = new Map(g3.map((h) => [h.skill, h.g]));
      expect([refState[k], refState[k + 1]]).toContainEqual(got);
      for (const c of r2.shortlist) expect(refState[k].get(c.skill) === c.g || refState[k + 1].get(c.skill) === c.g, `${c.skill} g ${c.g}`).toBe(true);
      expect(await removed).toBe(true);
    }
    expect(router.list().map((s) => s.id).sort()).toEqual([...refState[order.length].keys()].sort());
    // a reinstall that replaces a skill while routes run: each route ranks one version of it
    const racing = Array.from({ length: 4 }, () => router.route(task, { abstain: false }));
    const replaced = router.install([readerSkill("s2", 9, 7)]);
    const results = await Promise.allSettled([...racing, replaced]);
    expect(results.map((x) => x.status)).toEqual(["fulfilled", "fulfilled", "fulfilled", "fulfilled", "fulfilled"]);
    expect((await replaced).installed).toEqual(["s2"]);
    expect(router.list().find((s) => s.id === "s2")?.description).toMatch(/^s2 v9:/);
    await router.close();
  });
});
