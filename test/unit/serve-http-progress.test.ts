// A write's progress over the resident router's HTTP transport (docs/serve-protocol.md): a request with
// "progress": true is answered as chunked NDJSON, its progress lines as the install reports them and the
// answer last, as the socket sends them; ServeClient hands them to onProgress over either transport.
// The server runs in this process over a stand-in router whose install reports three skills and then
// waits to be let go, so "before the answer" is observed without timing.
import { describe, expect, it } from "vitest";
import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { InstallOptions, Router } from "../../src/route/index.js";
import { residentFixtures } from "../helpers/resident-fixtures.js";
import { ResidentServer } from "../../src/serve/server.js";
import { connect } from "../../src/serve/client.js";
import { GavelError } from "../../src/errors.js";
import { expectCode } from "../helpers/gavel-error.js";

const SKILLS = ["alpha", "beta", "gamma"];

/** A router stand-in: `install` reports each of SKILLS, then waits until `release` (or its abort). */
function fakeRouter(bankDir: string) {
  const held: (() => void)[] = [];
  const router = {
    bankDir,
    list: () => [],
    stats: () => ({ skills: 0 }),
    close: async () => undefined,
    uninstall: async () => true,
    install: (source: string, o: InstallOptions) =>
      new Promise((resolve, reject) => {
        SKILLS.forEach((skill, i) => {
          o.onProgress?.({ done: i + 1, total: SKILLS.length, skill, status: "installed" });
        });
        o.signal?.addEventListener("abort", () => reject(new GavelError("aborted", "ABORTED")), { once: true });
        held.push(() => resolve({ installed: SKILLS, unchanged: [], failed: [], warnings: [], truncated: [], tokens: 0, keys: 0, rawKeys: 0, seconds: 0, source }));
      }),
  };
  return { router: router as unknown as Router, release: () => held.splice(0).forEach((f) => f()), held: () => held.length };
}

const { model, dirs, servers } = residentFixtures();

async function start(kind: "unix" | "http") {
  const dir = mkdtempSync(join(tmpdir(), "gavel-serve-progress-"));
  dirs.push(dir);
  const fake = fakeRouter(dir);
  const server = await ResidentServer.start({ router: fake.router, model, modelPath: "fake.gguf", socket: join(dir, "s.sock"), graceMs: 100, ...(kind === "http" ? { port: 0 } : {}) });
  servers.push(server);
  const endpoint = kind === "http" ? (JSON.parse(readFileSync(join(dir, "serve.http.json"), "utf8")) as { url: string; token: string }) : null;
  return { dir, fake, endpoint };
}

/** Waits for `check` to hold, polling (bounded generously for a loaded machine). */
async function until(check: () => boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not reached within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** One raw POST /v1; its status, content type and the body's lines as they arrived (each chunk's lines). */
function post(e: { url: string; token: string }, body: object): Promise<{ status: number; type: string; lines: unknown[] }> {
  return new Promise((resolve, reject) => {
    const text = JSON.stringify(body);
    const req = httpRequest(`${e.url}/v1`, { method: "POST", agent: false, headers: { authorization: `Bearer ${e.token}`, "content-type": "application/json", "content-length": Buffer.byteLength(text) } }, (res) => {
      let all = "";
      res.setEncoding("utf8").on("data", (d: string) => (all += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, type: String(res.headers["content-type"]), lines: all.split("\n").filter(Boolean).map((l) => JSON.parse(l)) }));
    });
    req.on("error", reject);
    req.end(text);
  });
}

const progressOf = (skill: string, i: number) => ({ done: i + 1, total: SKILLS.length, skill, status: "installed" });

describe("a write's progress over HTTP", () => {
  it("ServeClient gets the progress lines before the answer, as over the socket", async () => {
    for (const kind of ["unix", "http"] as const) {
      const { dir, fake } = await start(kind);
      const client = await connect({ bank: dir, socket: kind === "unix" ? join(dir, "s.sock") : undefined });
      try {
        expect(client.endpoint.kind).toBe(kind);
        const seen: unknown[] = [];
        let settled = false;
        const answer = client.request<{ installed: string[] }>("install", { source: "skills" }, { onProgress: (p) => seen.push(p) }).finally(() => (settled = true));
        await until(() => seen.length === SKILLS.length);
        expect(settled).toBe(false); // the lines came while the install still ran
        expect(fake.held()).toBe(1);
        fake.release();
        expect((await answer).installed).toEqual(SKILLS);
        expect(seen).toEqual(SKILLS.map(progressOf));
      } finally {
        client.close();
      }
    }
  });

  it("answers NDJSON to a write asking for progress, one JSON answer otherwise", async () => {
    const { fake, endpoint } = await start("http");
    const streamed = post(endpoint!, { v: 1, id: 7, op: "install", source: "skills", progress: true });
    await until(() => fake.held() === 1);
    fake.release();
    const r = await streamed;
    expect(r.status).toBe(200);
    expect(r.type).toBe("application/x-ndjson");
    expect(r.lines.slice(0, -1)).toEqual(SKILLS.map((s, i) => ({ v: 1, id: 7, progress: progressOf(s, i) })));
    expect(r.lines.at(-1)).toMatchObject({ v: 1, id: 7, ok: true, result: { installed: SKILLS } });

    const plain = post(endpoint!, { v: 1, id: 8, op: "install", source: "skills" });
    await until(() => fake.held() === 1);
    fake.release();
    const p = await plain;
    expect(p.type).toBe("application/json");
    expect(p.lines).toHaveLength(1);
    expect(p.lines[0]).toMatchObject({ v: 1, id: 8, ok: true });
    // a read asking for progress has none: its one answer, as JSON
    const ping = await post(endpoint!, { v: 1, id: 9, op: "ping", progress: true });
    expect(ping.type).toBe("application/json");
    expect(ping.lines).toEqual([{ v: 1, id: 9, ok: true, result: { pong: true, v: 1 } }]);
    // a write that reports no progress (uninstall) asking for it: its one answer, as JSON
    const removed = await post(endpoint!, { v: 1, id: 10, op: "uninstall", skill: "alpha", progress: true });
    expect(removed.type).toBe("application/json");
    expect(removed.lines).toEqual([{ v: 1, id: 10, ok: true, result: { removed: true } }]);
  });

  it("a reply cut short after some progress rejects typed (INTERNAL), never hangs", async () => {
    // a server that streams one progress line and then drops the connection (as one that dies mid-install)
    const dir = mkdtempSync(join(tmpdir(), "gavel-serve-progress-"));
    dirs.push(dir);
    const cutter = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(200, { "content-type": "application/x-ndjson" });
        res.write(JSON.stringify({ v: 1, id: 1, progress: progressOf("alpha", 0) }) + "\n", () => res.socket?.destroy());
      });
    });
    await new Promise<void>((r) => cutter.listen(0, "127.0.0.1", () => r()));
    try {
      const url = `http://127.0.0.1:${(cutter.address() as AddressInfo).port}`;
      writeFileSync(join(dir, "serve.http.json"), JSON.stringify({ v: 1, url, token: "t".repeat(64), pid: process.pid }), { mode: 0o600 });
      const client = await connect({ bank: dir });
      const seen: unknown[] = [];
      await expectCode(client.request("install", { source: "skills" }, { onProgress: (p) => seen.push(p) }), "INTERNAL", /closed the connection/);
      expect(seen).toEqual([progressOf("alpha", 0)]);
      client.close();
    } finally {
      await new Promise((r) => cutter.close(r));
    }
  });
});
