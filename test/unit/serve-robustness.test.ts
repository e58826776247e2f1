// The resident router's transports under hostile or broken clients (docs/serve-protocol.md, "Limits"):
// aborted HTTP bodies, slow-loris headers and lines, idle connections, oversized bodies, connection
// floods, request floods on one connection and clients that never read. The server runs in this
// process over a stand-in router (no model): these are properties of the transport, not of routing.
// Every wait is for an event (a close, an answer), with generous bounds for a loaded machine.
import { describe, expect, it } from "vitest";
import { connect as netConnect, type Socket } from "node:net";
import { request as httpRequest } from "node:http";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GavelError } from "../../src/errors.js";
import type { Router } from "../../src/route/index.js";
import { residentFixtures } from "../helpers/resident-fixtures.js";
import { ResidentServer, type ServeLimits } from "../../src/serve/server.js";
import { Handlers } from "../../src/serve/handlers.js";
import { getEventListeners } from "node:events";
import { connect as clientConnect } from "../../src/serve/client.js";
import { expectCode } from "../helpers/gavel-error.js";

/** A router stand-in: `route` of "hold" waits until released (or aborted); of "big:N" returns N bytes. */
function fakeRouter(bankDir: string) {
  const held: (() => void)[] = [];
  let started = 0;
  const counting: (() => void)[] = [];
  let counted = 0;
  const router = {
    bankDir,
    // a stand-in tokenizer: one token a word, answering only when let go (`releaseCount`)
    model: {
      tokenizeAsync: (t: string) =>
        new Promise<Int32Array>((resolve) => {
          counted++;
          counting.push(() => resolve(new Int32Array(t.split(" ").filter(Boolean).length)));
        }),
    },
    list: () => [],
    stats: () => ({ skills: 0 }),
    close: async () => undefined,
    route: (task: string, o: { signal?: AbortSignal }) =>
      new Promise((resolve, reject) => {
        started++;
        const result = { skill: null, abstained: true, shortlist: [], verdict: false, load: null, pad: task.startsWith("big:") ? "x".repeat(Number(task.slice(4))) : "" };
        if (task === "refuse") return reject(new GavelError("the skill budget leaves no room", "INVALID_ARGUMENT", { option: "skillBudget" }));
        if (task !== "hold") return resolve(result);
        o.signal?.addEventListener("abort", () => reject(new GavelError("aborted", "ABORTED")), { once: true });
        held.push(() => resolve(result));
      }),
  };
  return { router: router as unknown as Router, release: () => held.splice(0).forEach((f) => f()), started: () => started, releaseCount: () => counting.splice(0).forEach((f) => f()), counted: () => counted };
}

const { model, dirs, servers } = residentFixtures();

async function start(kind: "unix" | "http", limits: Partial<ServeLimits> = {}, extra: { idleExitMs?: number; onIdle?: () => void } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "gavel-serve-rob-"));
  dirs.push(dir);
  const fake = fakeRouter(dir);
  const server = await ResidentServer.start({ router: fake.router, model, modelPath: "fake.gguf", socket: join(dir, "s.sock"), graceMs: 100, limits, ...extra, ...(kind === "http" ? { port: 0 } : {}) });
  servers.push(server);
  const endpoint = kind === "http" ? (JSON.parse(readFileSync(join(dir, "serve.http.json"), "utf8")) as { url: string; token: string }) : null;
  return { server, dir, fake, endpoint, socket: join(dir, "s.sock") };
}

/** A raw connection; resolves `closed` when the server closes it. */
function raw(target: { path: string } | { port: number }): Promise<{ s: Socket; closed: Promise<void>; data: () => string }> {
  return new Promise((resolve, reject) => {
    const s = "path" in target ? netConnect(target.path) : netConnect(target.port, "127.0.0.1");
    let data = "";
    s.setEncoding("utf8").on("data", (d: string) => (data += d));
    const closed = new Promise<void>((r) => s.on("close", () => r()));
    s.on("error", () => undefined);
    s.once("connect", () => resolve({ s, closed, data: () => data }));
    s.once("error", reject);
  });
}

const within = <T>(p: Promise<T>, ms: number, what: string) => Promise.race([p, new Promise<never>((_, rej) => setTimeout(() => rej(new Error(`${what}: not within ${ms} ms`)), ms))]);
const portOf = (url: string) => Number(new URL(url).port);

/** One authorised POST /v1 over a fresh connection. */
function post(e: { url: string; token: string }, body: string, headers: Record<string, string | number> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${e.url}/v1`, { method: "POST", agent: false, headers: { authorization: `Bearer ${e.token}`, "content-type": "application/json", ...headers } }, (res) => {
      let text = "";
      res.setEncoding("utf8").on("data", (d: string) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

const ping = (id = 1) => JSON.stringify({ v: 1, id, op: "ping" });

describe("HTTP transport", () => {
  it("survives a client that drops mid-body (no unhandled rejection) and keeps answering", async () => {
    const { endpoint } = await start("http");
    const rejections: unknown[] = [];
    const onRej = (e: unknown) => rejections.push(e);
    process.on("unhandledRejection", onRej);
    try {
      for (let i = 0; i < 5; i++) {
        const c = await raw({ port: portOf(endpoint!.url) });
        c.s.write(`POST /v1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${endpoint!.token}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"v":1,"id":1,`);
        await new Promise((r) => setTimeout(r, 50));
        c.s.resetAndDestroy();
        await c.closed;
      }
      await new Promise((r) => setTimeout(r, 200));
      const r = await post(endpoint!, ping());
      expect(r.status).toBe(200);
      expect(JSON.parse(r.body)).toMatchObject({ ok: true, result: { pong: true } });
      expect(rejections).toEqual([]);
    } finally {
      process.off("unhandledRejection", onRej);
    }
  });

  it("closes a connection whose headers never finish (slow loris)", async () => {
    const { endpoint } = await start("http", { requestMs: 400 });
    const c = await raw({ port: portOf(endpoint!.url) });
    c.s.write("POST /v1 HTTP/1.1\r\nHost: x\r\n");
    const drip = setInterval(() => c.s.writable && c.s.write("X-Slow: 1\r\n"), 100);
    try {
      await within(c.closed, 15_000, "slow-loris connection closed");
    } finally {
      clearInterval(drip);
    }
  });

  it("closes a connection whose body never finishes", async () => {
    const { endpoint } = await start("http", { requestMs: 400 });
    const c = await raw({ port: portOf(endpoint!.url) });
    c.s.write(`POST /v1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${endpoint!.token}\r\nContent-Length: 1000\r\n\r\n{`);
    const drip = setInterval(() => c.s.writable && c.s.write(" "), 100);
    try {
      await within(c.closed, 15_000, "slow-body connection closed");
    } finally {
      clearInterval(drip);
    }
  });

  it("answers a request whose id is not a string or a number with the id null, as the socket does", async () => {
    const { endpoint } = await start("http");
    for (const id of [{ x: 1 }, [1], true]) {
      const r = await post(endpoint!, JSON.stringify({ v: 1, id, op: "ping" }));
      expect(r.status).toBe(400);
      expect(JSON.parse(r.body)).toMatchObject({ id: null, ok: false, error: { code: "INVALID_ARGUMENT" } });
    }
  });

  it("closes a connection that never sends anything", async () => {
    const { endpoint } = await start("http", { requestMs: 400, idleMs: 400 });
    const c = await raw({ port: portOf(endpoint!.url) });
    await within(c.closed, 15_000, "silent connection closed");
  });

  it("never closes a connection waiting for a long answer, whatever its bounds", async () => {
    const { endpoint, fake } = await start("http", { requestMs: 300, idleMs: 300 });
    const answer = post(endpoint!, JSON.stringify({ v: 1, id: 1, op: "route", task: "hold" }));
    await new Promise((r) => setTimeout(r, 1500)); // many request and idle periods
    fake.release();
    const r = await within(answer, 15_000, "held route answered");
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toMatchObject({ id: 1, ok: true });
  });

  it("refuses a body over the bound from its Content-Length, before reading it", async () => {
    const { endpoint } = await start("http", { maxRequestBytes: 1000 });
    const c = await raw({ port: portOf(endpoint!.url) });
    c.s.write(`POST /v1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${endpoint!.token}\r\nContent-Length: 5000\r\n\r\n`);
    await within(c.closed, 15_000, "oversized request answered and closed");
    expect(c.data()).toMatch(/^HTTP\/1\.1 413/);
    expect(c.data()).toContain('"INVALID_ARGUMENT"');
  });

  it("reads the rest of a body over the bound before it answers 413 and closes (no reset under a plain client)", async () => {
    const { endpoint } = await start("http", { maxRequestBytes: 1000 });
    const port = portOf(endpoint!.url);
    const c = await raw({ port });
    const errors: string[] = [];
    c.s.on("error", (e: NodeJS.ErrnoException) => errors.push(e.code ?? e.message));
    // a plain client (no Expect: 100-continue): its headers and the first part of a 3,000-byte body ...
    c.s.write(`POST /v1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${endpoint!.token}\r\nContent-Length: 3000\r\n\r\n${"a".repeat(1000)}`);
    // ... taken in by the server (a ping over another connection answered after it) ...
    expect((await post(endpoint!, ping())).status).toBe(200);
    expect(c.data()).toBe(""); // not answered while the body still comes
    // ... then the rest: the 413 comes after it, the connection closed cleanly
    c.s.write("a".repeat(2000));
    await within(c.closed, 15_000, "oversized request answered and closed");
    expect(errors).toEqual([]);
    expect(c.data()).toMatch(/^HTTP\/1\.1 413/);
    expect(c.data()).toContain('"INVALID_ARGUMENT"');
  });

  it("takes the token only with the Bearer scheme, its name in any case", async () => {
    const { endpoint } = await start("http");
    const status = (authorization: string) => post(endpoint!, ping(), { authorization }).then((r) => r.status);
    expect(await status(`bearer ${endpoint!.token}`)).toBe(200);
    expect(await status(`BEARER ${endpoint!.token}`)).toBe(200);
    expect(await status(endpoint!.token)).toBe(401); // the token alone, without its scheme
    expect(await status(`Basic ${endpoint!.token}`)).toBe(401);
    expect(await status(`Bearer ${endpoint!.token}`)).toBe(200);
  });

  it("refuses a chunked body once it passes the bound", async () => {
    const { endpoint } = await start("http", { maxRequestBytes: 1000 });
    const r = await post(endpoint!, JSON.stringify({ v: 1, id: 1, op: "route", task: "é".repeat(600) }), { "transfer-encoding": "chunked" });
    expect(r.status).toBe(413); // 1,200 bytes of UTF-8 in 600 characters: the bound is in bytes
    const ok = await post(endpoint!, ping());
    expect(ok.status).toBe(200);
  });

  it("caps connections: one over the cap is closed, and a slot freed is usable again", async () => {
    const { endpoint } = await start("http", { maxConnections: 3 });
    const port = portOf(endpoint!.url);
    const held = await Promise.all([0, 1, 2].map(() => raw({ port })));
    const extra = await raw({ port });
    await within(extra.closed, 15_000, "connection over the cap closed");
    held[0].s.destroy();
    await held[0].closed;
    // the server sees the close asynchronously: retry until a slot is free (bounded)
    let status = 0;
    for (let i = 0; i < 100 && status !== 200; i++) {
      status = await post(endpoint!, ping()).then((r) => r.status, () => 0);
      if (status !== 200) await new Promise((r) => setTimeout(r, 50));
    }
    expect(status).toBe(200);
    for (const h of held.slice(1)) h.s.destroy();
  });
});

describe("socket transport", () => {
  it("closes an idle connection, but never one waiting for its answer", async () => {
    const { socket, fake } = await start("unix", { idleMs: 300 });
    const idle = await raw({ path: socket });
    await within(idle.closed, 15_000, "idle connection closed");
    const busy = await raw({ path: socket });
    busy.s.write(JSON.stringify({ v: 1, id: 1, op: "route", task: "hold" }) + "\n");
    // many idle periods pass while its route is held
    await new Promise((r) => setTimeout(r, 1500));
    expect(busy.s.destroyed).toBe(false);
    fake.release();
    await within(
      new Promise<void>((r) => {
        const t = setInterval(() => busy.data().includes('"ok":true') && (clearInterval(t), r()), 20);
      }),
      15_000,
      "held route answered",
    );
    await within(busy.closed, 15_000, "idle again, then closed");
  });

  it("answers a client that stops sending after its requests (half-close), then ends the connection", async () => {
    const { socket, fake } = await start("unix");
    const c = await raw({ path: socket });
    // as socat or nc -N send: the requests, the last without its "\n", then the sending side closed
    c.s.end(JSON.stringify({ v: 1, id: 1, op: "route", task: "hold" }) + "\n" + JSON.stringify({ v: 1, id: 2, op: "route", task: "short" }));
    await within(
      new Promise<void>((r) => {
        const t = setInterval(() => fake.started() === 2 && (clearInterval(t), r()), 20);
      }),
      15_000,
      "both routes started",
    );
    expect(c.s.destroyed).toBe(false);
    fake.release();
    await within(c.closed, 15_000, "closed once both are answered");
    const answers = c.data().trim().split("\n").map((l) => JSON.parse(l) as { id: number; ok: boolean });
    expect(answers.map((a) => [a.id, a.ok]).sort()).toEqual([[1, true], [2, true]]);
  });

  it("a ServeClient queues requests over the connection's bound instead of getting BUSY", async () => {
    const { socket, fake, server } = await start("unix");
    const c = await clientConnect({ socket });
    const stop = new AbortController();
    const answers = Array.from({ length: 100 }, (_, i) => c.request("route", { task: "hold" }, i === 99 ? { signal: stop.signal } : {}).then(() => "ok", (e: GavelError) => e.code));
    const waitFor = (ok: () => boolean, what: string) =>
      within(
        new Promise<void>((r) => {
          const t = setInterval(() => ok() && (clearInterval(t), r()), 20);
        }),
        15_000,
        what,
      );
    await waitFor(() => server.inFlight === 64, "64 in flight");
    await new Promise((r) => setTimeout(r, 200));
    expect(server.inFlight).toBe(64); // the other 36 wait on the client's side
    stop.abort(); // the last one, never sent: it rejects at once
    await expect(answers[99]).resolves.toBe("ABORTED");
    const releasing = setInterval(() => fake.release(), 20);
    const codes = await within(Promise.all(answers), 15_000, "all answered");
    clearInterval(releasing);
    expect(codes.filter((x) => x === "ok")).toHaveLength(99);
    expect(fake.started()).toBe(99);
    c.close();
  });

  it("a refusal of an option carries the option (GavelError.option) over the wire, and the client's error has it", async () => {
    const { socket } = await start("unix");
    const c = await clientConnect({ socket });
    const err = await c.request("route", { task: "refuse" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GavelError);
    expect(err).toMatchObject({ code: "INVALID_ARGUMENT", option: "skillBudget", message: "the skill budget leaves no room" });
    // an error that refuses no option has none
    const other = await c.request("uninstall", { skill: "" }).catch((e: unknown) => e);
    expect(other).toBeInstanceOf(GavelError);
    expect((other as GavelError).option).toBeUndefined();
    c.close();
    const line = await raw({ path: socket });
    line.s.write(JSON.stringify({ v: 1, id: 1, op: "route", task: "refuse" }) + "\n");
    await within(new Promise<void>((r) => { const t = setInterval(() => line.data().includes("\n") && (clearInterval(t), r()), 20); }), 15_000, "the answer");
    expect(JSON.parse(line.data().split("\n")[0])).toMatchObject({ id: 1, ok: false, error: { code: "INVALID_ARGUMENT", option: "skillBudget" } });
    line.s.destroy();
  });

  it("a ServeClient fails a request whose line the server refused with the server's own reason", async () => {
    const { socket } = await start("unix", { maxRequestBytes: 1000 });
    const c = await clientConnect({ socket });
    await expectCode(c.request("route", { task: "word ".repeat(400) }), "INVALID_ARGUMENT", /over 1000 bytes/);
    c.close();
  });

  it("cancels what a ServeClient still waits for when it closes, over the socket and over HTTP", async () => {
    for (const kind of ["unix", "http"] as const) {
      const { socket, dir, fake, server } = await start(kind);
      // over HTTP the client finds the server by the bank's serve.http.json
      const c = await clientConnect(kind === "unix" ? { socket } : { bank: dir });
      expect(c.endpoint.kind).toBe(kind);
      const held = c.request("route", { task: "hold" });
      await within(
        new Promise<void>((r) => {
          const t = setInterval(() => server.inFlight === 1 && (clearInterval(t), r()), 20);
        }),
        15_000,
        `the route in flight (${kind})`,
      );
      c.close();
      await expectCode(held, "DISPOSED");
      // the server stops the route without it being released (over HTTP: the client dropped its
      // exchange; a route run to its end would also keep the client's process alive)
      await within(
        new Promise<void>((r) => {
          const t = setInterval(() => server.inFlight === 0 && (clearInterval(t), r()), 20);
        }),
        15_000,
        `the route cancelled (${kind})`,
      );
      expect(fake.started()).toBe(1);
    }
  });

  it("closes a connection whose request line never ends (slow loris)", async () => {
    const { socket } = await start("unix", { requestMs: 400, idleMs: 60_000 });
    const c = await raw({ path: socket });
    c.s.write('{"v":1,"id":1,');
    const drip = setInterval(() => c.s.writable && c.s.write(" "), 100);
    try {
      await within(c.closed, 15_000, "unfinished line closed");
    } finally {
      clearInterval(drip);
    }
    expect(c.data()).toContain('"INVALID_ARGUMENT"');
  });

  it("answers requests over the per-connection bound with a typed error and still serves the rest", async () => {
    const { socket, fake } = await start("unix", { maxInFlightPerConnection: 4 });
    const c = await raw({ path: socket });
    const lines = Array.from({ length: 50 }, (_, i) => JSON.stringify({ v: 1, id: i, op: "route", task: "hold" })).join("\n") + "\n";
    c.s.write(lines);
    const answers = () => c.data().split("\n").filter(Boolean).map((l) => JSON.parse(l) as { id: number; ok: boolean; error?: { code: string } });
    await within(
      new Promise<void>((r) => {
        const t = setInterval(() => answers().length >= 46 && (clearInterval(t), r()), 20);
      }),
      15_000,
      "46 refusals",
    );
    expect(answers().every((a) => !a.ok && a.error?.code === "BUSY")).toBe(true);
    expect(fake.started()).toBe(4);
    fake.release();
    await within(
      new Promise<void>((r) => {
        const t = setInterval(() => answers().length >= 50 && (clearInterval(t), r()), 20);
      }),
      15_000,
      "the held four answered",
    );
    expect(answers().filter((a) => a.ok).map((a) => a.id).sort((a, b) => a - b)).toEqual([0, 1, 2, 3]);
    c.s.destroy();
  });

  it("does not count ping and status in flight against the per-connection bound", async () => {
    const { socket, fake } = await start("unix", { maxInFlightPerConnection: 4 });
    const c = await raw({ path: socket });
    const answers = () => c.data().split("\n").filter(Boolean).map((l) => JSON.parse(l) as { id: number | string; ok: boolean; error?: { code: string } });
    const line = (id: number | string, op: string) => JSON.stringify({ v: 1, id, op, ...(op === "route" ? { task: "hold" } : {}) }) + "\n";
    // three held routes, then in one write a ping and a status (in flight until the next turn) and the fourth route
    c.s.write(line(0, "route") + line(1, "route") + line(2, "route"));
    await within(new Promise<void>((r) => { const t = setInterval(() => fake.started() >= 3 && (clearInterval(t), r()), 20); }), 15_000, "three routes started");
    c.s.write(line("p", "ping") + line("s", "status") + line(3, "route"));
    await within(new Promise<void>((r) => { const t = setInterval(() => answers().length >= 2 && (clearInterval(t), r()), 20); }), 15_000, "ping and status answered");
    expect(answers().filter((a) => !a.ok)).toEqual([]);
    expect(fake.started()).toBe(4);
    fake.release();
    await within(new Promise<void>((r) => { const t = setInterval(() => answers().length >= 6 && (clearInterval(t), r()), 20); }), 15_000, "all answered");
    expect(answers().every((a) => a.ok)).toBe(true);
    c.s.destroy();
  });

  it("drops a client that stops reading once its unread answers pass the bound", async () => {
    const { socket, server } = await start("unix", { maxOutputBytes: 256 << 10 });
    const c = await raw({ path: socket });
    c.s.pause(); // never reads
    const lines = Array.from({ length: 40 }, (_, i) => JSON.stringify({ v: 1, id: i, op: "route", task: "big:1000000" })).join("\n") + "\n";
    c.s.write(lines);
    // the server lets go of it (a paused client does not see the close until it reads)
    await within(
      new Promise<void>((r) => {
        const t = setInterval(() => server.connections === 0 && (clearInterval(t), r()), 20);
      }),
      30_000,
      "non-reading client dropped",
    );
    c.s.resume();
    await within(c.closed, 30_000, "the client sees the close");
    expect(c.data().length).toBeLessThan(40 * 1_000_000); // it never got all 40 answers
    // and the server is still there for others
    const other = await clientConnect({ socket });
    await expect(other.request("ping")).resolves.toMatchObject({ pong: true });
    other.close();
  });

  it("caps connections", async () => {
    const { socket } = await start("unix", { maxConnections: 2 });
    const held = await Promise.all([0, 1].map(() => raw({ path: socket })));
    const extra = await raw({ path: socket });
    await within(extra.closed, 15_000, "connection over the cap closed");
    for (const h of held) h.s.destroy();
  });
});

describe("per-request budget", () => {
  it("refuses a task over the budget before the router reads it, and answers control requests while it is counted", async () => {
    const { socket, fake } = await start("unix", { maxTaskTokens: 100 });
    const c = await clientConnect({ socket });
    const order: string[] = [];
    const long = c.request("route", { task: "word ".repeat(5000) }).then(
      () => order.push("long ok"),
      (e: GavelError) => order.push(`long ${e.code}: ${e.message}`),
    );
    // the count is held: ping and status answer meanwhile
    await expect(c.request("ping")).resolves.toMatchObject({ pong: true });
    await expect(c.request("status")).resolves.toMatchObject({ maxTaskTokens: 100 });
    order.push("ping");
    // let every count go (the head of the task, then perhaps the whole) until it answers
    const releasing = setInterval(() => fake.releaseCount(), 20);
    await long;
    clearInterval(releasing);
    expect(order[0]).toBe("ping");
    expect(order[1]).toMatch(/^long CONTEXT_OVERFLOW: the task is (more than )?\d+ tokens, over this server's budget of 100 tokens/);
    expect(fake.started()).toBe(0); // the router never saw it
    c.close();
  });

  it("counts a chat message's role as the router reads it: a long role is refused like a long content", async () => {
    const { socket, fake } = await start("unix", { maxTaskTokens: 100 });
    const c = await clientConnect({ socket });
    const long = c.request("route", { task: [{ role: "docker ".repeat(5000), content: "write a dockerfile" }] });
    const releasing = setInterval(() => fake.releaseCount(), 20);
    await expectCode(long, "CONTEXT_OVERFLOW");
    clearInterval(releasing);
    expect(fake.started()).toBe(0); // the router never saw it
    c.close();
  });

  it("routes a task within the budget: short ones without counting, longer ones once counted", async () => {
    const { socket, fake } = await start("unix", { maxTaskTokens: 100 });
    const c = await clientConnect({ socket });
    await expect(c.request("route", { task: "a short task" })).resolves.toMatchObject({ abstained: true });
    expect(fake.counted()).toBe(0); // fewer bytes than the budget: within it, not counted
    const spaced = c.request("route", { task: "word".padEnd(300, " ") }); // 300 bytes, 2 "tokens"
    for (let i = 0; i < 200 && fake.counted() === 0; i++) await new Promise((r) => setTimeout(r, 10));
    fake.releaseCount();
    await expect(spaced).resolves.toMatchObject({ abstained: true });
    expect(fake.counted()).toBe(1);
    expect(fake.started()).toBe(2);
    c.close();
  });

  it("the count leaves no listener on the request's signal, and a cancel during it answers the server's ABORTED at once", async () => {
    // Handlers over a router whose count answers at once (or never, for "held"): the signal is the
    // request's own, as the server passes it
    const router = {
      bankDir: "/nonexistent",
      model: { tokenizeAsync: (t: string) => (t.startsWith("held") ? new Promise<Int32Array>(() => undefined) : Promise.resolve(new Int32Array(t.split(" ").filter(Boolean).length))) },
      route: async () => ({ skill: null, abstained: true, shortlist: [], verdict: false, load: null }),
      glance: async () => [],
    } as unknown as Router;
    const handlers = new Handlers(router, { pid: 1, bank: "b", model: "m", listen: "l", startedAt: 0, inFlight: () => 0, maxTaskTokens: 100 });
    const listeners = (s: AbortSignal) => getEventListeners(s, "abort").length;
    // counted once (within the window), counted twice (head, then the whole) and refused, glance-top
    const within = new AbortController().signal;
    await expect(handlers.route({ task: "word ".repeat(50) }, false, within)).resolves.toMatchObject({ abstained: true });
    const over = new AbortController().signal;
    await expectCode(handlers.route({ task: "word ".repeat(1000) }, false, over), "CONTEXT_OVERFLOW");
    const top = new AbortController().signal;
    await expect(handlers.glanceTop({ task: "word ".repeat(50) }, top)).resolves.toEqual([]);
    await new Promise((r) => setImmediate(r)); // whatever settles after the answer has settled
    expect([listeners(within), listeners(over), listeners(top)]).toEqual([0, 0, 0]);
    const controller = new AbortController();
    const held = handlers.route({ task: "held " + "word ".repeat(50) }, false, controller.signal);
    controller.abort(new Error("client gone"));
    await expect(held).rejects.toMatchObject({ code: "ABORTED", message: "the request was cancelled" });
    expect(listeners(controller.signal)).toBe(0);
  });

  it("maxTaskTokens 0 turns the budget off", async () => {
    const { socket, fake } = await start("unix", { maxTaskTokens: 0 });
    const c = await clientConnect({ socket });
    await expect(c.request("route", { task: "word ".repeat(5000) })).resolves.toMatchObject({ abstained: true });
    expect(fake.counted()).toBe(0);
    c.close();
  });
});

it("a request cancelled while its task is counted answers ABORTED at once, and shutdown does not wait for the count", async () => {
  const { socket, fake } = await start("unix", { maxTaskTokens: 100 });
  const c = await clientConnect({ socket });
  const ac = new AbortController();
  const long = c.request("route", { task: "word ".repeat(5000) }, { signal: ac.signal });
  for (let i = 0; i < 500 && fake.counted() === 0; i++) await new Promise((r) => setTimeout(r, 10));
  ac.abort();
  await expectCode(long, "ABORTED");
  c.close(); // the count is never let go: afterEach's shutdown must still finish
});

it("a client whose idle connection the server closed connects again on its next request", async () => {
  const { socket, server } = await start("unix", { idleMs: 200 });
  const c = await clientConnect({ socket });
  await expect(c.request("ping")).resolves.toMatchObject({ pong: true });
  await within(
    new Promise<void>((r) => {
      const t = setInterval(() => server.connections === 0 && (clearInterval(t), r()), 20);
    }),
    15_000,
    "idle connection closed by the server",
  );
  await new Promise((r) => setTimeout(r, 50)); // the client sees the close
  await expect(c.request("ping")).resolves.toMatchObject({ pong: true });
  c.close();
});

it("an on-demand server calls onIdle once nobody has been connected for idleExitMs, not while a client is", async () => {
  let idled = 0;
  const { socket } = await start("unix", {}, { idleExitMs: 300, onIdle: () => idled++ });
  const c = await clientConnect({ socket });
  await new Promise((r) => setTimeout(r, 1200)); // connected through several idle periods
  expect(idled).toBe(0);
  c.close();
  await within(
    new Promise<void>((r) => {
      const t = setInterval(() => idled > 0 && (clearInterval(t), r()), 20);
    }),
    15_000,
    "onIdle called",
  );
  await new Promise((r) => setTimeout(r, 500));
  expect(idled).toBe(1);
});
