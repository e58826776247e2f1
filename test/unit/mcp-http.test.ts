// `gavel mcp --port`'s HTTP endpoint (src/cli/mcp/server.ts, startMcpHttp) against floods and aborted
// bodies, over a stand-in skill source (no model): connections are capped (one over the cap is closed
// as it is accepted; it was unbounded), a client that drops mid-body leaves a server that answers, and
// a request whose params do not fit its method is -32602 invalid params.
import { afterEach, describe, expect, it } from "vitest";
import { connect, type Socket } from "node:net";
import { startMcpHttp, type McpHttpEndpoint } from "../../src/cli/mcp/server.js";
import type { SkillSource } from "../../src/adapters/skill-tools.js";

const source: SkillSource = {
  route: () => Promise.reject(new Error("not used")),
  glance: () => Promise.resolve([]),
  list: () => [{ id: "pdf", name: "pdf", description: "PDF files" }],
  get: () => Promise.reject(new Error("not used")),
};

const open: { end: McpHttpEndpoint[]; sockets: Socket[] } = { end: [], sockets: [] };
afterEach(async () => {
  for (const s of open.sockets.splice(0)) s.destroy();
  for (const e of open.end.splice(0)) await e.close();
});

async function start(maxConnections?: number): Promise<McpHttpEndpoint> {
  const e = await startMcpHttp(source, { version: "0.0.0", bankDir: "/nowhere" }, { port: 0, token: "t0k3n", ...(maxConnections ? { maxConnections } : {}) });
  open.end.push(e);
  return e;
}

/** A raw TCP connection to the endpoint; resolves once connected. */
function raw(url: string): Promise<Socket> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const s = connect(Number(port), "127.0.0.1", () => resolve(s));
    s.on("error", reject);
    open.sockets.push(s);
  });
}

/** Whether the server closes `s` within `ms`. */
function closedWithin(s: Socket, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    if (s.destroyed || s.readableEnded) return resolve(true);
    const t = setTimeout(() => resolve(false), ms);
    s.once("close", () => (clearTimeout(t), resolve(true)));
    s.once("end", () => (clearTimeout(t), resolve(true)));
    s.on("error", () => undefined);
    s.resume();
  });
}

/** A POST without the token: answered 401 by any server that still serves. */
async function status(url: string): Promise<number> {
  const r = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  await r.arrayBuffer();
  return r.status;
}

describe("gavel mcp --port under floods", () => {
  it("caps connections: one over the cap is closed as it is accepted, and a slot freed is usable again", async () => {
    const e = await start(2);
    const a = await raw(e.url);
    await raw(e.url);
    const third = await raw(e.url);
    expect(await closedWithin(third, 5000)).toBe(true);
    a.destroy();
    await new Promise((r) => setTimeout(r, 200));
    expect(await status(e.url)).toBe(401);
  });

  it("has a cap by default", async () => {
    const e = await start();
    const sockets = await Promise.all(Array.from({ length: 300 }, () => raw(e.url)));
    const closed = await Promise.all(sockets.map((s) => closedWithin(s, 5000)));
    expect(closed.filter(Boolean).length).toBeGreaterThan(0);
  });

  it("survives a client with the token that drops mid-body, and keeps answering", async () => {
    const e = await start();
    const { port } = new URL(e.url);
    const s = await raw(e.url);
    s.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer t0k3n\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"jsonrpc":`);
    await new Promise((r) => setTimeout(r, 100));
    s.resetAndDestroy();
    await new Promise((r) => setTimeout(r, 200));
    expect(await status(e.url)).toBe(401);
  });

  it("answers a request whose params do not fit its method -32602 invalid params, as stdio does", async () => {
    const e = await start();
    const call = async (id: number, method: string, params?: Record<string, unknown>) => {
      const r = await fetch(e.url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: "Bearer t0k3n", "mcp-protocol-version": "2025-06-18" },
        body: JSON.stringify({ jsonrpc: "2.0", id, method, ...(params ? { params } : {}) }),
      });
      return (await r.json()) as { id: number; result?: { contents: { text: string }[] }; error?: { code: number; message: string } };
    };
    expect((await call(1, "resources/read", { uri: 5 })).error).toEqual({ code: -32602, message: "MCP error -32602: resources/read: params.uri: Invalid input: expected string, received number" });
    expect((await call(2, "resources/read")).error).toEqual({ code: -32602, message: "MCP error -32602: resources/read: params: Invalid input: expected object, received undefined" });
    expect((await call(3, "prompts/get", {})).error).toMatchObject({ code: -32602, message: expect.stringMatching(/^MCP error -32602: prompts\/get: params\.name: /) });
    // a URI that fits the schema but names no skill is still the server's own answer
    expect((await call(4, "resources/read", { uri: "file:///etc/passwd" })).error?.code).toBe(-32002);
  });
});
