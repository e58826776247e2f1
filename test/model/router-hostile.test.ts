// Hostile skills contained (issue 17): breadth probes flag hubs at install (kept in the bank),
// echoes are flagged at route time, excludeFlagged / excludeSources filter the glance's columns, and
// trust per source breaks near-ties. The embedded default pair over examples/skills, at the demo's
// settings; the hostile skills are generated here (test/helpers/hostile-skills.ts).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model, Projections, Router } from "../../src/index.js";
import { Library } from "../../src/bank/library.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { PROBE_TASKS } from "../../src/route/probes.js";
import { hostileSkill } from "../helpers/hostile-skills.js";
import { repoRoot } from "../helpers/paths.js";
import { expectCode } from "../helpers/gavel-error.js";

const tasks = JSON.parse(readFileSync(join(repoRoot, "examples", "demo-tasks.json"), "utf8")) as { task: string; expected: string | null }[];
const inDomain = tasks.filter((t) => t.expected !== null);

describe("hostile skills", () => {
  let model: Model;
  let router: Router;
  let bankDir: string;
  const open = () => Router.open(model, { projections: DEFAULT_PROJECTIONS, bankDir, skillBudget: 1024 });
  beforeAll(async () => {
    // The demo's settings, its one pool of 16K cells included: per-sequence streams (the default
    // layout) would be 40 × 16K cells, 3.3 GB of KV cache to allocate and clear, about 30 s of CPU at
    // load (over 6 minutes on this 2-core machine under a load of 16).
    model = await Model.load(DEFAULT_MODEL, { contextSize: 16_384, sequences: 40, kvLayout: "unified", flashAttention: true, threads: 1 });
    bankDir = mkdtempSync(join(tmpdir(), "gavel-hostile-"));
    router = await open();
    const report = await router.install(join(repoRoot, "examples", "skills"));
    expect(report.failed).toEqual([]);
    // no example skill is a hub
    expect(report.warnings.filter((w) => w.warnings.some((x) => x.startsWith("hub:")))).toEqual([]);
  }, 120_000);
  afterAll(async () => {
    await router?.close();
    await model?.dispose();
    if (bankDir) rmSync(bankDir, { recursive: true, force: true });
  });

  it("flags a skill listing the generic probe tasks as a hub at install, kept in the bank", async () => {
    const hub = { name: "do-everything", description: "Handles everyday requests.", body: PROBE_TASKS.map((t) => `- ${t}`).join("\n"), source: "hostile/hub" };
    // a skill installed after it (each committed on its own, as in the lexicon kill test): the flag,
    // written after both, must not move the hub behind it
    const after = { name: "tidy-csv-columns", description: "Cleans up the columns of a CSV file.", body: "Trim the cells, fix the header names and drop empty columns.", source: "hostile/after" };
    const report = await router.install([hub, after], { commitEvery: 1 });
    const rec = report.warnings.find((w) => w.name === "do-everything");
    expect(rec?.warnings.some((w) => w.startsWith("hub:"))).toBe(true);
    await router.close();
    // the flag kept the bank's order, which the lexicon follows: no rebuild at the next open
    const library = await Library.open(bankDir, await Projections.load(DEFAULT_PROJECTIONS), { create: false });
    try {
      expect(library.lexicon.rebuilt).toBeUndefined();
      expect(library.store.entries().map((e) => e.id).slice(-2)).toEqual(["do-everything", "tidy-csv-columns"]);
    } finally {
      await library.close();
      router = await open();
    }
    // kept in the manifest: a reopened router lists it
    expect(router.list().find((s) => s.name === "do-everything")?.warnings?.some((w) => w.startsWith("hub:"))).toBe(true);
    expect(await router.uninstall("tidy-csv-columns")).toBe(true);
    // excluded from the glance's ranking itself: absent from a top list of every skill
    const hits = await router.glance(PROBE_TASKS[0], { topK: 1000, excludeFlagged: ["hub"] });
    expect(hits.map((h) => h.skill)).not.toContain("do-everything");
    expect(hits.length).toBe(24);
    expect(await router.uninstall("do-everything")).toBe(true);
  }, 120_000);

  it("refuses to uninstall by a name two skills share, naming their ids; by id it removes the one meant", async () => {
    const twin = (id: string) => ({ id, name: "Invoice Generator", description: "Makes invoices from order data.", body: "Fill the invoice template.", source: `hostile/${id}` });
    expect((await router.install([twin("acme/invoice"), twin("other/invoice")])).failed).toEqual([]);
    await expectCode(router.uninstall("Invoice Generator"), "INVALID_ARGUMENT", /2 installed skills are named "Invoice Generator" \("acme\/invoice", "other\/invoice"\): give the id/);
    expect(router.list().filter((s) => s.name === "Invoice Generator")).toHaveLength(2);
    expect(await router.uninstall("other/invoice")).toBe(true);
    // one left: its name is now unambiguous
    expect(await router.uninstall("Invoice Generator")).toBe(true);
    expect(router.list().filter((s) => s.name === "Invoice Generator")).toHaveLength(0);
  }, 120_000);

  it("flags an echo winner, and excludeFlagged: echo routes as if it were absent", async () => {
    // Abstention off on both sides: the echo's words move BM25's statistics (idf, mean length) even
    // while it is excluded, so the lexical features abstention reads shift a little (RELIABILITY.md);
    // what this checks is the exclusion, which must leave the same winner.
    const base = await Promise.all(inDomain.map((t) => router.route(t.task, { abstain: false })));
    const echo = hostileSkill("echo", inDomain.map((t) => t.task));
    await router.install([echo]);
    try {
      let won = 0;
      for (const [i, t] of inDomain.entries()) {
        const r = await router.route(t.task);
        if (r.skill === echo.name) {
          won++;
          expect(r.flags).toContain("echo");
        }
        const ex = await router.route(t.task, { excludeFlagged: ["echo"], abstain: false });
        expect(ex.skill).not.toBe(echo.name);
        expect(ex.skill).toBe(base[i].skill);
      }
      expect(won, "the echo skill holds every task verbatim: it should win some").toBeGreaterThan(0);
    } finally {
      await router.uninstall(echo.name);
    }
  }, 300_000);

  it("wins no task with a keyword-stuffed or a generic-task-list skill", async () => {
    for (const kind of ["keywords", "generic-tasks"] as const) {
      const s = hostileSkill(kind);
      await router.install([s]);
      try {
        // it wins nothing (its words move BM25's statistics, so abstention may decline a task: see RELIABILITY.md)
        for (const t of inDomain) expect((await router.route(t.task)).skill, `${kind}: ${t.task}`).not.toBe(s.name);
      } finally {
        await router.uninstall(s.name);
      }
    }
  }, 300_000);

  it("excludes sources inside the glance, and trust breaks a near-tie", async () => {
    // the first demo task; the glance's runner-up reinstalled from another source (records)
    const task = inDomain[0].task;
    const first = (await router.route(task, { abstain: false })).skill!;
    const second = (await router.glance(task, { topK: 2 })).find((h) => h.skill !== first)!.skill;
    const rec = await router.get(second);
    expect(await router.uninstall(second)).toBe(true);
    await router.install([{ id: second, name: rec.name, description: rec.description, body: rec.body, source: `vendor/${second}` }]);
    try {
      const hits = await router.glance(task, { topK: 1000, excludeSources: ["input"] });
      expect(hits.map((h) => h.skill)).not.toContain(second);
      expect(hits.length).toBe(23);
      const margin = { abstain: false, tieMargin: 1e6 };
      expect((await router.route(task, { ...margin })).skill).toBe(first);
      // the trusted source wins the near-tie, either way round
      expect((await router.route(task, { ...margin, trust: { input: 1 } })).skill).toBe(second);
      expect((await router.route(task, { ...margin, trust: { project: 1, input: 0 } })).skill).toBe(first);
      // with no margin there is no tie to break: trust changes nothing
      expect((await router.route(task, { abstain: false, tieMargin: 0, trust: { input: 1 } })).skill).toBe(first);
      await expectCode(router.glance(task, { excludeSources: ["folder", "input"] }), "EMPTY_LIBRARY");
    } finally {
      await router.uninstall(second);
      await router.install(join(repoRoot, "examples", "skills", second));
    }
  }, 120_000);
});
