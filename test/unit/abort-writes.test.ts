// An install's or uninstall's wait for the library's lock honours its signal (src/bank/library.ts,
// src/bank/rw-lock.ts): while a route holds the library as a reader (held inside its glance, which
// the test takes over through routeGlances, so the model stays free), an install that replaces a
// skill, an install's tidy and an uninstall each reject with ABORTED as soon as their signal aborts,
// before the route ends. Nothing of them is half-written: the route then ends, the library still
// routes, and the same write run again succeeds. Order is read from settle order, never from clocks.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Model, Projections, Router, type RouteResult } from "../../src/index.js";
import type { GlanceVia } from "../../src/route/glance-many.js";
import { applySync } from "../../src/serve/sync-plan.js";
import { expectCode } from "../helpers/gavel-error.js";
import { needsShared, SHARED, storiesPath } from "../helpers/paths.js";
import { tempRoot } from "../helpers/temp-dirs.js";

const NO_SHARED = needsShared("stories260K for installs and routes over a real model", SHARED.stories);
const TASK = "Write a Dockerfile for a small Go service";
const SKILLS = [
  { name: "docker-image", description: "Build a Docker image for a service" },
  { name: "go-service", description: "Write a small Go web service" },
  { name: "sql-query", description: "Write and tune SQL queries" },
];
/** sql-query's next version: its install replaces the installed one (its keys, entry and text). */
const SQL_V2 = { name: "sql-query", description: "Write, tune and explain SQL queries" };
const tmp = tempRoot("gavel-abort-writes-");

/** A promise and its resolve. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** Pushes `name` to `order` when `p` settles (either way); `p` itself. */
function settles<T>(p: Promise<T>, name: string, order: string[]): Promise<T> {
  p.then(() => order.push(name), () => order.push(name));
  return p;
}

/** A route of `router` held inside its glance: `inside` resolves once it reads the library (as a reader, its forward pass done), `release` lets it go on. */
function heldRoute(router: Router, order: string[]): { route: Promise<RouteResult>; inside: Promise<void>; release: () => void } {
  const inside = deferred();
  const gate = deferred();
  const via: GlanceVia = async (keys, task, o) => {
    router.routeGlances(null); // this route's glance only
    inside.resolve();
    await gate.promise;
    return keys.glance(task.queries, { weights: task.weights, k: o.k, handles: o.handles, signal: o.signal, detail: 0 });
  };
  router.routeGlances(via);
  return { route: settles(router.route(TASK), "route", order), inside: inside.promise, release: gate.resolve };
}

const describeOf = (r: Router, name: string) => r.list().find((s) => s.name === name)?.description;

describe.skipIf(NO_SHARED)("an install's or uninstall's wait for the library, aborted", () => {
  let model: Model;
  let projections: Projections;

  beforeAll(async () => {
    model = await Model.load(storiesPath, { contextSize: 512, threads: 1 });
    projections = await Projections.random(model, { seed: 5, dim: 16 });
  }, 120_000);

  afterAll(async () => {
    await model?.dispose();
  });

  /** A router over a fresh bank holding {@link SKILLS}. */
  async function routerWithSkills(): Promise<Router> {
    const r = await Router.open(model, { projections, bankDir: tmp.fresh(), skillBudget: 256 });
    expect((await r.install(SKILLS)).installed).toHaveLength(3);
    return r;
  }

  it("an install that replaces a skill rejects with ABORTED while a route holds the library; the old version stands, and the install run again replaces it", async () => {
    const r = await routerWithSkills();
    const forward = model.hiddenStates;
    try {
      const order: string[] = [];
      const held = heldRoute(r, order);
      await held.inside;
      const controller = new AbortController();
      const reason = new Error("stop the replacing install");
      // The abort comes as the replacement's forward pass returns (the route's passes are done: only the
      // install's run now); the install's next wait is for the library, to replace the old version.
      model.hiddenStates = async (...args: Parameters<Model["hiddenStates"]>) => {
        try {
          return await forward.apply(model, args);
        } finally {
          controller.abort(reason);
        }
      };
      const installing = settles(r.install([SQL_V2], { signal: controller.signal }), "install", order);
      const err = await expectCode(installing, "ABORTED", /^Router\.install: the operation was aborted$/);
      expect(err.cause).toBe(reason);
      expect(order).toEqual(["install"]); // the route still held the library
      model.hiddenStates = forward;
      held.release();
      expect((await held.route).shortlist.length).toBeGreaterThan(0);
      // nothing of the aborted install was written: the old version's entry, text and keys stand
      expect(describeOf(r, "sql-query")).toBe(SKILLS[2].description);
      expect((await r.get("sql-query")).description).toBe(SKILLS[2].description);
      expect(r.stats().skills).toBe(3);
      expect((await r.route(TASK)).shortlist.length).toBeGreaterThan(0);
      const again = await r.install([SQL_V2]);
      expect(again.installed).toEqual(["sql-query"]);
      expect(describeOf(r, "sql-query")).toBe(SQL_V2.description);
      expect((await r.get("sql-query")).description).toBe(SQL_V2.description);
      expect((await r.route(TASK)).shortlist.length).toBeGreaterThan(0);
    } finally {
      model.hiddenStates = forward;
      await r.close();
    }
  }, 120_000);

  it("an install whose tidy waits for a route rejects with ABORTED before the route ends; the library stays whole and the install runs again", async () => {
    const r = await routerWithSkills();
    try {
      const order: string[] = [];
      const held = heldRoute(r, order);
      await held.inside;
      const controller = new AbortController();
      const reason = new Error("stop the install before its tidy");
      // every skill unchanged: the last one's progress is the install's last check of its signal
      // before the tidy, which waits for the library
      const onProgress = (p: { done: number; total: number }) => void (p.done === p.total && controller.abort(reason));
      const installing = settles(r.install(SKILLS, { signal: controller.signal, onProgress }), "install", order);
      const err = await expectCode(installing, "ABORTED", /^Router\.install: the operation was aborted$/);
      expect(err.cause).toBe(reason);
      expect(order).toEqual(["install"]);
      held.release();
      expect((await held.route).shortlist.length).toBeGreaterThan(0);
      expect(r.list().map((s) => s.name).sort()).toEqual(SKILLS.map((s) => s.name).sort());
      expect((await r.route(TASK)).shortlist.length).toBeGreaterThan(0);
      expect((await r.install(SKILLS)).unchanged).toHaveLength(3);
    } finally {
      await r.close();
    }
  }, 120_000);

  it("an uninstall waiting for a route rejects with ABORTED as its signal aborts, before the route ends; the skill stays, and the uninstall run again removes it", async () => {
    const r = await routerWithSkills();
    try {
      const order: string[] = [];
      const held = heldRoute(r, order);
      await held.inside;
      // refused at the call, before any wait: a bad option, a bad name, an already-aborted signal
      await expectCode(r.uninstall("sql-query", { sigal: new AbortController().signal } as never), "INVALID_ARGUMENT", /uninstall options/);
      await expectCode(r.uninstall(42 as never), "INVALID_ARGUMENT", /uninstall takes a skill id or name/);
      const early = new Error("stopped before the call");
      expect((await expectCode(r.uninstall("sql-query", { signal: AbortSignal.abort(early) }), "ABORTED", /^Router\.uninstall: the operation was aborted$/)).cause).toBe(early);
      const controller = new AbortController();
      const reason = new Error("stop the waiting uninstall");
      const removing = settles(r.uninstall("sql-query", { signal: controller.signal }), "uninstall", order);
      controller.abort(reason);
      const err = await expectCode(removing, "ABORTED", /^Router\.uninstall: the operation was aborted$/);
      expect(err.cause).toBe(reason);
      expect(order).toEqual(["uninstall"]); // the route still held the library
      held.release();
      expect((await held.route).shortlist.length).toBeGreaterThan(0);
      expect(r.list().map((s) => s.name)).toContain("sql-query");
      expect((await r.get("sql-query")).description).toBe(SKILLS[2].description);
      expect(await r.uninstall("sql-query", { signal: new AbortController().signal })).toBe(true);
      expect(r.list().map((s) => s.name).sort()).toEqual(["docker-image", "go-service"]);
      expect((await r.route(TASK)).shortlist.map((c) => c.name)).not.toContain("sql-query");
    } finally {
      await r.close();
    }
  }, 120_000);

  it("a sync with nothing to install, aborted, uninstalls nothing", async () => {
    const r = await routerWithSkills();
    try {
      const gone = r.list().filter((s) => s.name !== "docker-image").map((s) => ({ id: s.id, name: s.name, source: s.source })); // the recorded source, as planSync plans it
      const plan = { add: [], update: [], unchanged: ["docker-image"], remove: gone, kept: [], conflicts: [] };
      const reason = new Error("sync stopped");
      const err = await expectCode(applySync(r, plan, { signal: AbortSignal.abort(reason) }), "ABORTED");
      expect(err.cause).toBe(reason);
      expect(r.list().map((s) => s.name).sort()).toEqual(["docker-image", "go-service", "sql-query"]);
      expect(await applySync(r, plan, { signal: new AbortController().signal })).toBeNull();
      expect(r.list().map((s) => s.name)).toEqual(["docker-image"]);
    } finally {
      await r.close();
    }
  }, 120_000);
});
