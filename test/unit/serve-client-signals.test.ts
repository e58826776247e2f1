// The serve client's per-request signals (src/serve/client.ts): a request's `signal` (often one
// long-lived signal for many requests) and its `timeoutMs` each abort it, and once it settled the
// caller's signal holds no listener of it (the two are joined by linkSignals, not AbortSignal.any,
// whose composite leaves a record on the caller's signal per request on Node 20). Over a stand-in
// server on a Unix socket that answers every request but "hold".
import { getEventListeners } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServeClient } from "../../src/serve/client.js";
import { expectCode } from "../helpers/gavel-error.js";

let dir: string;
let server: Server;
let client: ServeClient;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "gavel-client-signals-"));
  server = createServer((socket) => {
    let buffer = "";
    socket.setEncoding("utf8").on("data", (d: string) => {
      buffer += d;
      let nl: number;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const msg = JSON.parse(buffer.slice(0, nl)) as { v: number; id: number; op: string; task?: string };
        buffer = buffer.slice(nl + 1);
        if (msg.op !== "cancel" && msg.task !== "hold") socket.write(JSON.stringify({ v: msg.v, id: msg.id, ok: true, result: { pong: true } }) + "\n");
      }
    });
  });
  const path = join(dir, "s.sock");
  await new Promise<void>((resolve) => server.listen(path, resolve));
  client = await ServeClient.open({ kind: "unix", path });
});

afterAll(async () => {
  client.close();
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

const listeners = (s: AbortSignal) => getEventListeners(s, "abort").length;

describe("ServeClient.request's signal and timeout", () => {
  it("requests answered under one long-lived signal (with a timeout) leave no listener on it", async () => {
    const longLived = new AbortController();
    for (let i = 0; i < 30; i++) {
      expect(await client.request("ping", {}, { signal: longLived.signal, timeoutMs: 60_000 })).toEqual({ pong: true });
      expect(await client.request("ping", {}, { signal: longLived.signal })).toEqual({ pong: true });
    }
    expect(listeners(longLived.signal)).toBe(0);
  });

  it("the caller's signal aborts a held request, and the timeout does; neither leaves a listener on the caller's signal", async () => {
    const longLived = new AbortController();
    const timedOut = client.request("route", { task: "hold" }, { signal: longLived.signal, timeoutMs: 50 });
    await expectCode(timedOut, "ABORTED");
    expect(listeners(longLived.signal)).toBe(0);
    const held = client.request("route", { task: "hold" }, { signal: longLived.signal, timeoutMs: 60_000 });
    longLived.abort();
    await expectCode(held, "ABORTED");
    expect(listeners(longLived.signal)).toBe(0);
    await expectCode(client.request("ping", {}, { signal: longLived.signal }), "ABORTED");
  });
});
