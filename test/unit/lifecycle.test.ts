// Cancellation and lifecycle of every public async verb that takes `{ signal }`, as one table over
// real objects: the stories260K model, random projections, the examples/skills library installed
// once, a key bank, a live context, and a resident server (its own model and a read-only router on
// the same bank) with a client and a serverRouter. For each verb:
//   (a) an already-aborted signal rejects with GavelError ABORTED, the message naming the verb, the
//       signal's reason as its cause, and no work done (no model call, nothing installed);
//   (b) an abort right after the call returned (the verb has started: its first check passed) rejects
//       the same way, whatever stage noticed it (a native check, an inner stage's own check);
//   (c) the verb on a disposed (closed) object rejects with DISPOSED, and dispose()/close() is idempotent.
// Verbs with nothing to do (Router.warm below the key IVF's threshold, an empty live append) reject
// as well: an aborted call never resolves. Then: a signal from another realm is taken by shape; a
// call queued behind another (an install behind an install, a model call behind a model call, a
// route behind an uninstall's hold on the library, selectLive's tokenization behind the worker pool's)
// rejects as soon as its signal aborts, without waiting for its turn, and the queue goes on.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runInNewContext } from "node:vm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GavelError, KeyBank, Model, Projections, Router, selectLive, serverRouter, type LiveContext } from "../../src/index.js";
import { committedEntries } from "../../src/bank/opening.js";
import { connect, type ServeClient } from "../../src/serve/client.js";
import { ResidentServer } from "../../src/serve/server.js";
import { needsShared, repoRoot, SHARED, storiesPath } from "../helpers/paths.js";

const NO_SHARED = needsShared("stories260K for the lifecycle table over a real model", SHARED.stories);
const SKILLS = join(repoRoot, "examples", "skills");
const TASK = "Write a Dockerfile for a small Go service";

/** The objects the table's calls run on, made once in beforeAll. */
interface Objects {
  model: Model;
  router: Router;
  bank: KeyBank;
  live: LiveContext;
  liveStates: Float32Array;
  client: ServeClient;
  remote: ReturnType<typeof serverRouter>;
}

const tokensOf = (o: Objects, t: string) => o.model.tokenize(t, { addBos: true });
const unitQuery = () => Float32Array.from({ length: 16 }, (_, i) => (i === 0 ? 1 : 0));

/** Every verb: its name as the error names it, and the call under a signal. */
const ROWS: { verb: string; call: (o: Objects, signal: AbortSignal) => Promise<unknown> }[] = [
  { verb: "Router.install", call: (o, signal) => o.router.install(SKILLS, { signal }) },
  { verb: "Router.route", call: (o, signal) => o.router.route(TASK, { signal }) },
  { verb: "Router.glance", call: (o, signal) => o.router.glance(TASK, { signal }) },
  { verb: "Router.rank", call: (o, signal) => o.router.rank(TASK, { signal }) },
  { verb: "Router.warm", call: (o, signal) => o.router.warm({ signal }) },
  { verb: "Model.hiddenStates", call: (o, signal) => o.model.hiddenStates(tokensOf(o, TASK), 2, { signal }) },
  { verb: "Model.hiddenStates", call: (o, signal) => o.model.hiddenStatesAt(tokensOf(o, TASK), [1, 2], { signal }) },
  { verb: "Model.hiddenStatesMany", call: (o, signal) => o.model.hiddenStatesMany([tokensOf(o, TASK), tokensOf(o, "a cat")], [2], { signal }) },
  { verb: "Model.score", call: (o, signal) => o.model.score(tokensOf(o, TASK), tokensOf(o, " yes").subarray(1), { signal }) },
  { verb: "Model.score", call: (o, signal) => o.model.scoreMany([tokensOf(o, TASK), tokensOf(o, "a cat")], tokensOf(o, " no").subarray(1), { signal }) },
  { verb: "Model.logits", call: (o, signal) => o.model.logits(tokensOf(o, TASK), { signal }) },
  { verb: "Model.generate", call: (o, signal) => firstChunk(o.model, signal) },
  { verb: "Model.tokenizeAsync", call: (o, signal) => o.model.tokenizeAsync(TASK, { signal }) },
  { verb: "KeyBank.glance", call: (o, signal) => o.bank.glance(unitQuery(), { signal }) },
  { verb: "LiveContext.append", call: (o, signal) => o.live.append(o.liveStates.subarray(0, o.model.info.nEmbd), { signal }) },
  { verb: "LiveContext.append", call: (o, signal) => o.live.append(new Float32Array(0), { signal }) },
  { verb: "selectLive", call: (o, signal) => selectLive(o.live, TASK, { signal }) },
  { verb: "ServeClient.request(route)", call: (o, signal) => o.client.request("route", { task: TASK }, { signal }) },
  { verb: "serverRouter.route", call: (o, signal) => o.remote.route(TASK, { signal }) },
  { verb: "serverRouter.glance", call: (o, signal) => o.remote.glance(TASK, { signal }) },
];

/** What a call rejected with (null when it resolved). */
async function outcome(p: Promise<unknown>): Promise<unknown> {
  return p.then(() => null, (e: unknown) => e);
}

function expectAborted(err: unknown, verb: string, reason: unknown): void {
  expect(err, `${verb} resolved instead of rejecting`).toBeInstanceOf(GavelError);
  expect(err).toMatchObject({ code: "ABORTED", message: `${verb}: the operation was aborted` });
  expect((err as Error).cause).toBe(reason);
}

/** An AbortController's shape made in another realm (a vm context, which has no AbortController): not an instance of this realm's AbortSignal. */
interface ForeignController {
  signal: AbortSignal;
  abort(reason?: unknown): void;
  /** Listeners on the signal now. */
  listeners(): number;
}

function foreignController(): ForeignController {
  return runInNewContext(`(() => {
    const listeners = [];
    const signal = {
      aborted: false,
      reason: undefined,
      addEventListener(type, fn) { if (type === "abort" && !listeners.includes(fn)) listeners.push(fn); },
      removeEventListener(type, fn) { const i = listeners.indexOf(fn); if (type === "abort" && i >= 0) listeners.splice(i, 1); },
    };
    const abort = (reason) => {
      if (signal.aborted) return;
      signal.aborted = true;
      signal.reason = reason;
      for (const fn of listeners.splice(0)) fn.call(signal, { type: "abort", target: signal });
    };
    return { signal, abort, listeners: () => listeners.length };
  })()`) as ForeignController;
}

/** Pushes `name` to `order` when `p` settles (either way); `p` itself, its rejection handled. */
function settles<T>(p: Promise<T>, name: string, order: string[]): Promise<T> {
  p.then(() => order.push(name), () => order.push(name));
  return p;
}

/** Reads the first chunk of a generation (the prompt's prefill and one step), then closes it. */
async function firstChunk(model: Model, signal: AbortSignal): Promise<unknown> {
  const it = model.generate("Once upon a time", { maxTokens: 4, temperature: 0, signal });
  try {
    return await it.next();
  } finally {
    await it.return(undefined as never);
  }
}

describe.skipIf(NO_SHARED)("cancellation and lifecycle of the public async verbs", () => {
  let dir: string;
  let projections: Projections;
  let server: ResidentServer | undefined;
  const o = {} as Objects;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "gavel-lifecycle-"));
    o.model = await Model.load(storiesPath, { contextSize: 512, threads: 1 });
    projections = await Projections.random(o.model, { seed: 3, dim: 16 });
    o.router = await Router.open(o.model, { projections, bankDir: join(dir, "bank"), skillBudget: 256 });
    const report = await o.router.install(SKILLS);
    expect(report.installed.length).toBeGreaterThan(10);
    o.bank = new KeyBank(16);
    o.bank.add(unitQuery());
    o.bank.add(Float32Array.from({ length: 32 }, (_, i) => (i === 1 || i === 18 ? 1 : 0)));
    o.live = o.router.live();
    o.liveStates = await o.model.hiddenStates(tokensOf(o, "Once upon a time there was a"), o.live.layer);
    await o.live.append(o.liveStates);
    // the server: its own model and a read-only router over the same bank (shutdown closes both)
    const serveModel = await Model.load(storiesPath, { contextSize: 512, threads: 1 });
    const readOnly = await Router.open(serveModel, { projections, bankDir: o.router.bankDir, skillBudget: 256, readOnly: true });
    server = await ResidentServer.start({ router: readOnly, model: serveModel, modelPath: storiesPath, socket: join(dir, "serve.sock") });
    o.client = await connect({ bank: o.router.bankDir, socket: join(dir, "serve.sock") });
    o.remote = serverRouter({ bank: o.router.bankDir, socket: join(dir, "serve.sock") });
  }, 120_000);

  afterAll(async () => {
    o.remote?.close();
    o.client?.close();
    await server?.shutdown();
    o.live?.dispose();
    o.bank?.dispose();
    await o.router?.close();
    await o.model?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(ROWS)("$verb resolves when its signal is not aborted (the table's call is valid)", async ({ call }) => {
    expect(await outcome(call(o, new AbortController().signal))).toBeNull();
  }, 60_000);

  it.each(ROWS)("(a) $verb with an already-aborted signal: ABORTED naming it, the reason as cause, no model call, nothing installed", async ({ verb, call }) => {
    const installed = o.router.list().length;
    const reason = new Error(`stop ${verb}`);
    const before = o.model.cacheStats();
    expectAborted(await outcome(call(o, AbortSignal.abort(reason))), verb, reason);
    expect(o.model.cacheStats()).toEqual(before);
    expect(o.router.list().length).toBe(installed);
  }, 60_000);

  it.each(ROWS)("(b) $verb aborted once it has started: ABORTED naming it, the reason as cause", async ({ verb, call }) => {
    const controller = new AbortController();
    const reason = new Error(`stop ${verb} on the way`);
    const p = call(o, controller.signal);
    controller.abort(reason);
    expectAborted(await outcome(p), verb, reason);
  }, 60_000);

  const FOREIGN: { verb: string; call: (signal: AbortSignal) => Promise<unknown> }[] = [
    { verb: "KeyBank.glance", call: (signal) => o.bank.glance(unitQuery(), { signal }) },
    { verb: "Model.tokenizeAsync", call: (signal) => o.model.tokenizeAsync(TASK, { signal }) },
    { verb: "Model.logits", call: (signal) => o.model.logits(tokensOf(o, TASK), { signal }) },
    { verb: "Router.route", call: (signal) => o.router.route(TASK, { signal }) },
  ];

  it.each(FOREIGN)("$verb takes a signal from another realm: it resolves, then an abort rejects with ABORTED", async ({ verb, call }) => {
    const free = foreignController();
    expect(free.signal instanceof AbortSignal).toBe(false);
    expect(await outcome(call(free.signal))).toBeNull();
    expect(free.listeners()).toBe(0); // every listener removed once the call settled
    const early = foreignController();
    const reason = new Error(`stop ${verb} from another realm`);
    early.abort(reason);
    expectAborted(await outcome(call(early.signal)), verb, reason);
    const late = foreignController();
    const p = call(late.signal);
    late.abort(reason);
    expectAborted(await outcome(p), verb, reason);
  }, 60_000);

  it("KeyBank.glance aborted after its bank was disposed mid-glance rejects with ABORTED, and nothing is thrown from the abort listener", async () => {
    const b = new KeyBank(16);
    b.add(unitQuery());
    const controller = new AbortController();
    const reason = new Error("stop after dispose");
    const p = b.glance(unitQuery(), { signal: controller.signal });
    b.dispose();
    // the glance's listener is still on the signal (its rejection has not come back yet): telling the
    // disposed bank to stop must not throw out of the listener (an uncaught exception)
    controller.abort(reason);
    expectAborted(await outcome(p), "KeyBank.glance", reason);
  });

  it("an install queued behind another rejects as soon as its signal aborts; the running install and the next queued one still install", async () => {
    const r = await Router.open(o.model, { projections, bankDir: join(dir, "queue-bank"), skillBudget: 256 });
    try {
      const order: string[] = [];
      const controller = new AbortController();
      const reason = new Error("stop the queued install");
      const first = settles(r.install(SKILLS), "first", order);
      const second = settles(r.install([{ name: "queued-aborted", description: "Never installed: its install was aborted in the queue" }], { signal: controller.signal }), "second", order);
      const third = settles(r.install([{ name: "queued-after", description: "Installed after an aborted install in the queue" }]), "third", order);
      controller.abort(reason);
      expectAborted(await outcome(second), "Router.install", reason);
      expect(order).toEqual(["second"]); // before the install ahead of it finished
      expect((await first).installed.length).toBeGreaterThan(10);
      expect((await third).installed).toEqual(["queued-after"]);
      expect(order).toEqual(["second", "first", "third"]);
      const names = r.list().map((s) => s.name);
      expect(names).toContain("queued-after");
      expect(names).not.toContain("queued-aborted");
    } finally {
      await r.close();
    }
  }, 120_000);

  it("a model call queued behind another rejects as soon as its signal aborts; the running call and the next queued one still resolve", async () => {
    const tokens = tokensOf(o, TASK);
    const order: string[] = [];
    const controller = new AbortController();
    const reason = new Error("stop the queued call");
    const running = settles(o.model.hiddenStates(tokens, 2), "running", order);
    const queued = settles(o.model.logits(tokens, { signal: controller.signal }), "queued", order);
    const next = settles(o.model.logits(tokens), "next", order);
    controller.abort(reason);
    expectAborted(await outcome(queued), "Model.logits", reason);
    expect(order).toEqual(["queued"]); // before the call ahead of it finished
    expect((await running).length).toBe(tokens.length * o.model.info.nEmbd);
    expect((await next).length).toBe(tokens.length * o.model.info.nVocab);
    expect(order).toEqual(["queued", "running", "next"]);
  }, 60_000);

  it("a route waiting for the library behind an uninstall rejects as soon as its signal aborts; the route inside, the uninstall and the route after it still run", async () => {
    const r = await Router.open(o.model, { projections, bankDir: join(dir, "lock-bank"), skillBudget: 256 });
    try {
      await r.install([
        { name: "docker-image", description: "Build a Docker image for a service" },
        { name: "go-service", description: "Write a small Go web service" },
        { name: "sql-query", description: "Write and tune SQL queries" },
      ]);
      const order: string[] = [];
      const controller = new AbortController();
      const reason = new Error("stop the waiting route");
      // the first route holds the library as a reader; the uninstall waits for it, and the routes
      // called after the uninstall wait for the uninstall
      const inside = settles(r.route(TASK), "inside", order);
      const removing = settles(r.uninstall("sql-query"), "uninstall", order);
      const waiting = settles(r.route(TASK, { signal: controller.signal }), "waiting", order);
      const after = settles(r.route(TASK), "after", order);
      controller.abort(reason);
      expectAborted(await outcome(waiting), "Router.route", reason);
      expect(order).toEqual(["waiting"]); // before the route and the uninstall ahead of it finished
      expect((await inside).shortlist.length).toBeGreaterThan(0);
      expect(await removing).toBe(true);
      const routed = await after;
      expect(routed.shortlist.length).toBeGreaterThan(0);
      expect(routed.shortlist.map((c) => c.name)).not.toContain("sql-query"); // it read the library after the uninstall
      expect(r.list().map((s) => s.name).sort()).toEqual(["docker-image", "go-service"]);
    } finally {
      await r.close();
    }
  }, 120_000);

  it("selectLive aborted while its verdict text waits to be tokenized rejects at once, before the tokenizations queued ahead of it", async () => {
    // every thread of the libuv pool busy with a tokenization: selectLive's own waits behind them
    const pool = Number(process.env.UV_THREADPOOL_SIZE) || 4;
    const order: string[] = [];
    const long = "Once upon a time there was a little dog who liked to run. ".repeat(2000);
    const busy = Array.from({ length: pool }, (_, i) => settles(o.model.tokenizeAsync(long), `busy ${i}`, order));
    const controller = new AbortController();
    const reason = new Error("stop the selection");
    const selecting = settles(selectLive(o.live, TASK, { signal: controller.signal }), "selectLive", order);
    controller.abort(reason);
    expectAborted(await outcome(selecting), "selectLive", reason);
    expect(order).toEqual(["selectLive"]);
    await Promise.all(busy);
  }, 60_000);

  it("the objects stay usable after the aborts", async () => {
    expect((await o.router.route(TASK)).shortlist.length).toBeGreaterThan(0);
    expect((await o.bank.glance(unitQuery())).g.length).toBe(2);
    expect((await o.remote.glance(TASK)).length).toBeGreaterThan(0);
    expect(await outcome(o.model.logits(tokensOf(o, "a")))).toBeNull();
  }, 60_000);

  it("(c) a verb on a disposed or closed object: DISPOSED; dispose() and close() are idempotent", async () => {
    const m = await Model.load(storiesPath, { contextSize: 512, threads: 1 });
    const r = await Router.open(m, { projections, bankDir: join(dir, "closed-bank"), skillBudget: 256 });
    const l = r.live();
    const b = new KeyBank(16);
    const c = await connect({ bank: o.router.bankDir, socket: join(dir, "serve.sock") });
    await r.close();
    await r.close();
    l.dispose();
    l.dispose();
    b.dispose();
    b.dispose();
    c.close();
    c.close();
    const toks = m.tokenize(TASK, { addBos: true });
    const q = new Float32Array(16);
    q[0] = 1;
    const closedRouter: [string, () => Promise<unknown>][] = [
      ["Router.install", () => r.install(SKILLS)],
      ["Router.route", () => r.route(TASK)],
      ["Router.glance", () => r.glance(TASK)],
      ["Router.rank", () => r.rank(TASK)],
      ["Router.warm", () => r.warm()],
      ["Router.get", () => r.get("dockerfile")],
      ["Router.uninstall", () => r.uninstall("dockerfile")],
      ["LiveContext.append", () => l.append(o.liveStates)],
      ["selectLive", () => selectLive(l, TASK)],
      ["KeyBank.glance", () => b.glance(q)],
      ["ServeClient.request", () => c.request("route", { task: TASK })],
    ];
    await m.dispose();
    await m.dispose();
    const disposedModel: [string, () => Promise<unknown>][] = [
      ["Model.hiddenStates", () => m.hiddenStates(toks, 2)],
      ["Model.hiddenStatesMany", () => m.hiddenStatesMany([toks], [2])],
      ["Model.score", () => m.score(toks, toks)],
      ["Model.logits", () => m.logits(toks)],
      ["Model.tokenizeAsync", () => m.tokenizeAsync(TASK)],
      ["Model.clearCache", () => m.clearCache()],
      ["Model.generate", async () => m.generate(toks).next()],
    ];
    for (const [verb, call] of [...closedRouter, ...disposedModel]) {
      expect(await outcome(call()), verb).toMatchObject({ code: "DISPOSED" });
    }
    // with an aborted signal too, the disposal is what a closed router and a disposed model report
    expect(await outcome(r.route(TASK, { signal: AbortSignal.abort() }))).toMatchObject({ code: "DISPOSED" });
    expect(await outcome(r.uninstall("dockerfile", { signal: AbortSignal.abort() }))).toMatchObject({ code: "DISPOSED" });
    expect(await outcome(m.logits(toks, { signal: AbortSignal.abort() }))).toMatchObject({ code: "DISPOSED" });
    expect(m.disposed).toBe(true);
  }, 120_000);

  // Before, close() marked the router closed only after the writes called before it had finished, so
  // an install, uninstall or route called right after it (same tick) passed the check, started work and
  // failed deep inside on the closed bank (or, an uninstall, removed its skill first).
  it("(c) calls made right after close(), in the same tick, are refused at once with DISPOSED and change nothing; a write called before it finishes", async () => {
    const bankDir = join(dir, "close-now-bank");
    const r = await Router.open(o.model, { projections, bankDir, skillBudget: 256 });
    await r.install([{ name: "first", description: "writes Dockerfiles for small Go services", body: "Use a multi-stage build." }]);
    const early = r.install([{ name: "early", description: "reviews pull requests", body: "Read the diff first." }]);
    const closing = r.close();
    const late = [
      outcome(r.install([{ name: "late", description: "plans database migrations", body: "Back up first." }])),
      outcome(r.uninstall("first")),
      outcome(r.route(TASK)),
      outcome(r.glance(TASK)),
      outcome(Promise.resolve().then(() => r.list())),
    ];
    expect((await early).installed).toEqual(["early"]);
    await closing;
    for (const e of await Promise.all(late)) expect(e).toMatchObject({ name: "GavelError", code: "DISPOSED", message: "this router was closed" });
    expect((await committedEntries(bankDir)).map((e) => e.id).sort()).toEqual(["early", "first"]);
    expect(r.close()).toBe(closing); // idempotent: the same close
  }, 120_000);
});
