// ServeClient against a server that refuses a request before reading its id, and two clients of one
// HTTP server (docs/serve-protocol.md): each request settles, typed, with its own answer; a refusal
// never leaves a request pending or the client dead; HTTP clients never share an id, so one's cancel
// never aborts another's request; parameters JSON cannot carry fail that request alone. Also the
// server's winner for a skill a write committed a moment ago. The server runs in this process over a
// stand-in router (no model); every wait is for an answer, bounded generously for a loaded machine.
// And the serve.http.json a killed server leaves: no server, as a stale socket is.
import { describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GavelError } from "../../src/errors.js";
import type { InstalledSkill, Router } from "../../src/route/index.js";
import { residentFixtures } from "../helpers/resident-fixtures.js";
import { ResidentServer, type ServeLimits } from "../../src/serve/server.js";
import { connect, connectIfRunning, isRunning, routeViaServerIfRunning, type ServeClient } from "../../src/serve/client.js";
import { writeStaleEndpoint } from "../helpers/stale-endpoint.js";
import { checkHttpEndpoint } from "../../src/serve/endpoint.js";
import { createServer as createNetServer, type Server as NetServer } from "node:net";
import { serverRouter } from "../../src/serve/client-router.js";
import { MAX_LINE_BYTES } from "../../src/serve/protocol.js";
import { expectCode } from "../helpers/gavel-error.js";

interface Held {
  task: string;
  release: () => void;
  aborted: boolean;
}

/**
 * A router stand-in: `route` of "hold…" waits until released (or aborted) and answers no skill; of
 * "pick:ID" chooses ID. `skills` is what it holds installed (`list` and `installed` read it now).
 */
function fakeRouter(bankDir: string) {
  const held: Held[] = [];
  const skills = new Map<string, InstalledSkill>();
  const router = {
    bankDir,
    model: { tokenizeAsync: async (t: string) => new Int32Array(t.length) },
    list: () => [...skills.values()],
    installed: (id: string) => skills.get(id),
    get: async (idOrName: string) => {
      const s = skills.get(idOrName);
      if (!s) throw new GavelError(`no installed skill ${idOrName}`, "SKILL_NOT_FOUND");
      return { id: s.id, name: s.name, description: s.description };
    },
    stats: () => ({ skills: skills.size }),
    close: async () => undefined,
    route: (task: string, o: { signal?: AbortSignal }) =>
      new Promise((resolve, reject) => {
        const skill = task.startsWith("pick:") ? task.slice(5) : null;
        const result = { skill, abstained: skill === null, shortlist: [], verdict: "skipped", load: null };
        if (!task.startsWith("hold")) return resolve(result);
        const h: Held = { task, release: () => resolve(result), aborted: false };
        o.signal?.addEventListener("abort", () => ((h.aborted = true), reject(new GavelError("aborted", "ABORTED"))), { once: true });
        held.push(h);
      }),
  };
  const add = (id: string) => skills.set(id, { id, name: id, description: `the ${id} skill`, source: join(bankDir, id, "SKILL.md"), keys: 3, renderTokens: 9, disableModelInvocation: false });
  return { router: router as unknown as Router, held, add };
}

const { model, dirs, servers } = residentFixtures();

async function start(kind: "unix" | "http", limits: Partial<ServeLimits> = {}, dir = mkdtempSync(join(tmpdir(), "gavel-serve-ref-")), port?: number) {
  if (!dirs.includes(dir)) dirs.push(dir);
  const fake = fakeRouter(dir);
  const server = await ResidentServer.start({ router: fake.router, model, modelPath: "fake.gguf", socket: join(dir, "s.sock"), graceMs: 100, limits, ...(kind === "http" ? { port: port ?? 0 } : {}) });
  servers.push(server);
  return { server, dir, fake };
}

/** A client of the server in `dir`: its socket, or (no socket given) its HTTP endpoint file. */
function clientOf(kind: "unix" | "http", dir: string): Promise<ServeClient> {
  return connect(kind === "unix" ? { bank: dir, socket: join(dir, "s.sock") } : { bank: dir });
}

/** Waits for `check` to hold, polling (bounded generously for a loaded machine). */
async function until(check: () => boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not reached within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** How a promise settles: "ok" with its value's skill, or the error's code. */
async function outcome(p: Promise<unknown>): Promise<string> {
  try {
    const v = (await p) as { skill?: unknown; pong?: unknown } | null;
    return `ok ${v && typeof v === "object" && "skill" in v ? String(v.skill) : JSON.stringify(v)}`;
  } catch (err) {
    return err instanceof GavelError ? err.code : `untyped ${String(err)}`;
  }
}

/** Settles within `ms` or says "pending" (a hang is a failure, never a test timeout). */
function within<T>(p: Promise<T>, ms = 30_000): Promise<T | "pending"> {
  return Promise.race([p, new Promise<"pending">((r) => setTimeout(() => r("pending"), ms).unref())]);
}

describe("ServeClient and refusals", () => {
  it("a request over the server's size bound is refused alone, over HTTP and the socket; the client goes on", async () => {
    for (const kind of ["http", "unix"] as const) {
      // a server that reads less than the client's own bound: the server's refusal (HTTP 413 / a line
      // answered with id null, then the connection closed) reaches the client
      const { dir, fake } = await start(kind, { maxRequestBytes: 64 << 10 });
      const client = await clientOf(kind, dir);
      try {
        const holds = [client.request("route", { task: "hold-1" }), client.request("route", { task: "hold-2" })];
        if (kind === "unix") await until(() => fake.held.length === 2);
        const big = await within(outcome(client.request("route", { task: "x".repeat(100 << 10) })));
        expect(big, kind).toBe("INVALID_ARGUMENT");
        if (kind === "unix") {
          // the server closed that connection and aborted what ran on it: those fail now, typed
          expect(await within(Promise.all(holds.map(outcome)))).toEqual(["INVALID_ARGUMENT", "INVALID_ARGUMENT"]);
          await until(() => fake.held.every((h) => h.aborted));
        } else {
          for (const h of fake.held) h.release();
          expect(await within(Promise.all(holds.map(outcome)))).toEqual(["ok null", "ok null"]);
        }
        // the same client routes next (over the socket it connects again)
        fake.add("pdf");
        expect(await within(outcome(client.request("route", { task: "pick:pdf" }))), kind).toBe("ok pdf");
        // a request over the protocol's own bound is refused before it is sent
        const huge = await within(client.request("route", { task: "y".repeat(MAX_LINE_BYTES) }).catch((e: unknown) => e));
        expect(huge).toBeInstanceOf(GavelError);
        expect((huge as GavelError).code).toBe("INVALID_ARGUMENT");
        expect((huge as GavelError).message).toMatch(/over the 4194304 bytes a gavel server reads in one request/);
        expect(await within(outcome(client.request("ping")))).toBe('ok {"pong":true,"v":1}');
      } finally {
        client.close();
      }
    }
  }, 120_000);

  it("serverRouter routes again right after a refused request", async () => {
    const { dir, fake } = await start("unix", { maxRequestBytes: 64 << 10 });
    fake.add("pdf");
    const r = serverRouter({ bank: dir, socket: join(dir, "s.sock") });
    try {
      expect(await within(outcome(r.route("x".repeat(100 << 10))))).toBe("INVALID_ARGUMENT");
      expect(await within(outcome(r.route("pick:pdf")))).toBe("ok pdf");
      expect(await within(outcome(r.route("pick:pdf")))).toBe("ok pdf");
    } finally {
      r.close();
    }
  }, 60_000);

  it("parameters JSON cannot carry fail that request alone, typed, and leave nothing pending", async () => {
    for (const kind of ["unix", "http"] as const) {
      // an idle connection is closed by the server: with a request left pending the client took the
      // close for a failure and refused every later request
      const { dir, fake } = await start(kind, { idleMs: 300 });
      fake.add("pdf");
      const client = await clientOf(kind, dir);
      try {
        const cyclic: Record<string, unknown> = { role: "user" };
        cyclic.content = cyclic;
        for (const params of [{ task: "a", n: 1n }, { task: [cyclic] }]) {
          const err = await client.request("route", params).catch((e: unknown) => e);
          expect(err, kind).toBeInstanceOf(GavelError);
          expect((err as GavelError).code).toBe("INVALID_ARGUMENT");
          expect((err as GavelError).message).toMatch(/^the route request's parameters cannot be sent as JSON: /);
        }
        expect(await within(outcome(client.request("route", { task: "pick:pdf" })))).toBe("ok pdf");
        await new Promise((r) => setTimeout(r, 900)); // past the server's idle close
        expect(await within(outcome(client.request("route", { task: "pick:pdf" }))), kind).toBe("ok pdf");
      } finally {
        client.close();
      }
    }
  }, 60_000);
});

describe("two clients of one HTTP server", () => {
  it("never share an id: both are served, and one's cancel aborts only its own request", async () => {
    const { dir, fake } = await start("http");
    fake.add("pdf");
    const a = await connect({ bank: dir });
    const b = await connect({ bank: dir });
    try {
      const ac = new AbortController();
      const aHold = outcome(a.request("route", { task: "hold-a" }, { signal: ac.signal }));
      await until(() => fake.held.length === 1);
      const bHold = outcome(b.request("route", { task: "hold-b" }));
      await until(() => fake.held.length === 2);
      ac.abort();
      expect(await within(aHold)).toBe("ABORTED");
      await until(() => fake.held[0].aborted);
      expect(fake.held.map((h) => [h.task, h.aborted])).toEqual([
        ["hold-a", true],
        ["hold-b", false],
      ]);
      fake.held[1].release();
      expect(await within(bHold)).toBe("ok null");
      expect(await within(outcome(a.request("route", { task: "pick:pdf" })))).toBe("ok pdf");
    } finally {
      a.close();
      b.close();
    }
  }, 60_000);

  it("a refused token settles the request, and a server restarted on the same port is found again", async () => {
    const first = await start("http");
    const file = join(first.dir, "serve.http.json");
    const { url } = JSON.parse(readFileSync(file, "utf8")) as { url: string };
    const client: ServeClient = await connect({ bank: first.dir });
    try {
      expect(await within(outcome(client.request("ping")))).toBe('ok {"pong":true,"v":1}');
      // the file names another token while the server keeps its own: refused, and settled
      const real = readFileSync(file, "utf8");
      writeFileSync(file, real.replace(/"token":"[^"]+"/, `"token":"${"0".repeat(64)}"`), { mode: 0o600 });
      const stale = await connect({ bank: first.dir });
      const err = await within(stale.request("ping").catch((e: unknown) => e));
      expect(err).toBeInstanceOf(GavelError);
      expect((err as GavelError).code).toBe("INVALID_ARGUMENT");
      expect((err as GavelError).message).toBe("missing or wrong bearer token");
      stale.close();
      writeFileSync(file, real, { mode: 0o600 });
      // the server restarts on the same port with a new token: the client reads it again
      await first.server.shutdown();
      const port = Number(new URL(url).port);
      const second = await start("http", {}, first.dir, port);
      second.fake.add("pdf");
      expect(await within(outcome(client.request("route", { task: "pick:pdf" })))).toBe("ok pdf");
      expect(client.endpoint.kind === "http" && client.endpoint.url).toBe(url);
    } finally {
      client.close();
    }
  }, 60_000);
});

describe("the server's winner", () => {
  it("names a skill a write committed after the server first listed the skills", async () => {
    const { dir, fake } = await start("unix");
    fake.add("pdf");
    const client = await connect({ bank: dir, socket: join(dir, "s.sock") });
    try {
      const first = (await client.request("route", { task: "pick:pdf" })) as { winner: { id: string } | null };
      expect(first.winner?.id).toBe("pdf");
      // installed now, with no write through this server to tell it (an install under way commits
      // skill by skill; a watcher's sync likewise)
      fake.add("docker");
      const r = (await client.request("route", { task: "pick:docker" })) as { skill: string; winner: { id: string; description: string } | null };
      expect(r.skill).toBe("docker");
      expect(r.winner).toMatchObject({ id: "docker", description: "the docker skill" });
      const doc = (await client.request("get-skill", { skill: "docker" })) as { id: string; keys: number; renderTokens: number };
      expect(doc).toMatchObject({ id: "docker", keys: 3, renderTokens: 9 });
    } finally {
      client.close();
    }
  }, 60_000);
});

describe("isRunning", () => {
  it("takes the bank as a string or every option in one object, as connect does; any other call shape is INVALID_ARGUMENT", async () => {
    const unix = await start("unix");
    const socket = join(unix.dir, "s.sock");
    expect(await isRunning(unix.dir, { socket })).toBe(true);
    expect(await isRunning({ bank: unix.dir, socket, timeoutMs: 5000 })).toBe(true);
    const http = await start("http");
    expect(await isRunning(http.dir, { timeoutMs: 5000 })).toBe(true);
    expect(await isRunning({ bank: http.dir, timeoutMs: 5000 })).toBe(true);
    const none = mkdtempSync(join(tmpdir(), "gavel-serve-none-"));
    dirs.push(none);
    expect(await isRunning({ bank: none })).toBe(false);
    const refused = (message: RegExp) => expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringMatching(message) });
    await expect(isRunning(3 as never)).rejects.toEqual(refused(/^isRunning takes a bank directory \(a string\) or \{ bank, socket, timeoutMs \}: got a number$/));
    await expect(isRunning(null as never)).rejects.toEqual(refused(/got null$/));
    await expect(isRunning({ bank: 3 } as never)).rejects.toEqual(refused(/bank must be a string, got a number$/));
    await expect(isRunning(none, null as never)).rejects.toEqual(refused(/its options must be an object, got null$/));
    await expect(isRunning({ bank: none, socket: {} } as never)).rejects.toEqual(refused(/socket must be a string, got an object$/));
  }, 60_000);

  it.skipIf(process.platform === "win32")("a socket path longer than the platform's limit is refused, not cut short by the kernel to reach another socket", async () => {
    const none = mkdtempSync(join(tmpdir(), "gavel-serve-long-"));
    dirs.push(none);
    const socket = join(none, "s".repeat(120) + ".sock");
    const refused = expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/socket .* cannot be used: the path is \d+ bytes, over the 10[37] bytes/) });
    await expect(isRunning({ bank: none, socket })).rejects.toEqual(refused);
    await expect(connectIfRunning({ socket })).rejects.toEqual(refused);
    await expect(connect({ socket })).rejects.toEqual(refused);
    expect(await connectIfRunning({ socket: join(none, "s.sock") })).toBeNull();
  }, 60_000);
});

describe("a serve.http.json left by a killed server", () => {
  it("counts as no server: connectIfRunning and routeViaServerIfRunning answer null, connect FILE_NOT_FOUND; the file is removed once its pid is gone", async () => {
    const bank = mkdtempSync(join(tmpdir(), "gavel-serve-stale-"));
    dirs.push(bank);
    const stale = await writeStaleEndpoint(bank);
    expect(await within(connectIfRunning({ bank }))).toBeNull();
    // its server's process is gone and its port refuses: the file was the stale one, and is gone
    expect(existsSync(stale.file)).toBe(false);
    const seen: string[] = [];
    for (const call of [() => routeViaServerIfRunning("Extract the tables from report.pdf", { bank }), () => isRunning(bank), () => connect({ bank })]) {
      await writeStaleEndpoint(bank);
      seen.push(await within(outcome(call())));
    }
    expect(seen).toEqual(["ok null", "ok false", "FILE_NOT_FOUND"]);
    const { url } = await writeStaleEndpoint(bank);
    const err = await within(connect({ bank }).catch((e: unknown) => e));
    expect(err).toBeInstanceOf(GavelError);
    expect((err as GavelError).message).toBe(`no gavel server is running at ${url} (start one with \`gavel serve\`)`);
  }, 60_000);

  it("keeps the file while the pid it names lives (a server shutting down removes its own), yet counts it as no server", async () => {
    const bank = mkdtempSync(join(tmpdir(), "gavel-serve-stale-live-"));
    dirs.push(bank);
    const stale = await writeStaleEndpoint(bank, process.pid);
    expect(await within(connectIfRunning({ bank }))).toBeNull();
    expect(await within(routeViaServerIfRunning("Extract the tables from report.pdf", { bank }))).toBeNull();
    expect(readFileSync(stale.file, "utf8")).toBe(stale.text);
  }, 60_000);

  it("a live server's file is kept and served", async () => {
    const { dir, fake } = await start("http");
    fake.add("pdf");
    const file = join(dir, "serve.http.json");
    const text = readFileSync(file, "utf8");
    const client = await within(connectIfRunning({ bank: dir }));
    expect(client).not.toBeNull();
    expect(client).not.toBe("pending");
    try {
      expect(await within(outcome((client as ServeClient).request("route", { task: "pick:pdf" })))).toBe("ok pdf");
    } finally {
      (client as ServeClient).close();
    }
    expect(readFileSync(file, "utf8")).toBe(text);
  }, 60_000);
});

describe("the check of an HTTP endpoint", () => {
  /** A plain TCP listener on `port` of `host` (0: any free one), and the port it got; null where it cannot listen there. */
  async function listener(host: string, port: number): Promise<{ server: NetServer; port: number } | null> {
    const server = createNetServer((s) => s.destroy());
    const ok = await new Promise<boolean>((resolve) => {
      server.once("error", () => resolve(false));
      server.listen(port, host, () => resolve(true));
    });
    return ok ? { server, port: (server.address() as { port: number }).port } : null;
  }

  it("reaches the port its URL names, the scheme's default (80) included, over IPv4 and IPv6", async () => {
    for (const [host, shown] of [["127.0.0.1", "127.0.0.1"], ["::1", "[::1]"]] as const) {
      const l = await listener(host, 0);
      if (!l) continue; // no IPv6 loopback on this machine
      try {
        await expect(checkHttpEndpoint({ kind: "http", url: `http://${shown}:${l.port}`, token: "t" })).resolves.toBeUndefined();
      } finally {
        await new Promise((r) => l.server.close(r));
      }
    }
    const l80 = await listener("127.0.0.1", 80); // only where this user may listen on port 80
    if (l80) {
      try {
        await expect(checkHttpEndpoint({ kind: "http", url: "http://127.0.0.1:80", token: "t" })).resolves.toBeUndefined();
      } finally {
        await new Promise((r) => l80.server.close(r));
      }
    }
  }, 60_000);

  it("an endpoint whose port is out of range is INVALID_ARGUMENT, never an untyped error", async () => {
    for (const url of ["http://127.0.0.1:0", "http://127.0.0.1:70000", "http://127.0.0.1:"]) {
      await expectCode(checkHttpEndpoint({ kind: "http", url, token: "t" }), "INVALID_ARGUMENT");
    }
  });
});
