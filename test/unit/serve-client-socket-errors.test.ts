// The HTTP client of a resident server (src/serve/client.ts) when the connection itself fails: a port
// that answers something other than HTTP, resets the connection, closes it part-way through a reply,
// or an address no route reaches. Each
// is a typed GavelError naming what happened (never Node's own error: `Parse Error`, `connect
// ENETUNREACH`); a local server is found through the bank's serve.http.json as `gavel route` finds
// it. Real sockets on this machine; every wait is for an answer or a failure, none for a time.
import { describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createServer, type Socket } from "node:net";
import { createServer as createHttpServer, type ServerResponse } from "node:http";
import { connect, isNotRunning, ServeClient } from "../../src/serve/client.js";
import { exchangeFailure } from "../../src/serve/endpoint.js";
import { GavelError } from "../../src/errors.js";
import { caught, expectCode } from "../helpers/gavel-error.js";
import { tempDirs } from "../helpers/temp-dirs.js";

const freshDir = tempDirs("gavel-client-socket-");

/** A TCP listener on localhost that does `answer` with each connection once the request's first bytes arrive. */
async function rawServer(answer: (s: Socket) => void): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((s) => {
    s.on("error", () => undefined);
    s.once("data", () => answer(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return { url, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** A bank folder whose serve.http.json names `url` (a live process's, this one's: never removed as stale). */
function bankNaming(url: string): string {
  const bank = freshDir();
  writeFileSync(join(bank, "serve.http.json"), JSON.stringify({ v: 1, url, token: "7".repeat(64), pid: process.pid }) + "\n", { mode: 0o600 });
  return bank;
}

/** A ping through the bank naming `url` fails INTERNAL with `msg`, not as "no server runs" (`what` names the case); the client closed after. */
async function expectInternal(url: string, what: string, msg: RegExp): Promise<void> {
  const client = await connect({ bank: bankNaming(url) });
  try {
    const err = await expectCode(client.request("ping"), "INTERNAL", msg);
    expect(isNotRunning(err), what).toBe(false);
  } finally {
    client.close();
  }
}

describe("the HTTP client when the connection fails", () => {
  it("a port that answers something other than HTTP, or resets the connection, is a typed INTERNAL naming it", async () => {
    const cases: [string, (s: Socket) => void, RegExp][] = [
      ["not HTTP", (s) => s.end("SSH-2.0-OpenSSH_9.6\r\n\r\n"), /^the server at http:\/\/127\.0\.0\.1:\d+ answered something other than HTTP \(HPE_[A-Z_]+: /],
      ["reset before an answer", (s) => s.resetAndDestroy(), /^the gavel server closed the connection \(ECONNRESET\)$/],
    ];
    for (const [what, answer, msg] of cases) {
      const srv = await rawServer(answer);
      try {
        await expectInternal(srv.url, what, msg);
      } finally {
        await srv.close();
      }
    }
  }, 60_000);

  it("an address no route reaches is a typed error naming the system's code, not Node's error", async () => {
    // an endpoint file names a loopback address only; ServeClient.open takes any. A TCP connection to
    // the broadcast address fails at once (ENETUNREACH on Linux; EACCES elsewhere)
    const url = "http://255.255.255.255:4000";
    const client = await ServeClient.open({ kind: "http", url, token: "7".repeat(64) });
    try {
      const err = await caught(client.request("ping"));
      expect(err).toBeInstanceOf(GavelError);
      expect(["INTERNAL", "PERMISSION_DENIED"]).toContain((err as GavelError).code);
      expect((err as GavelError).message).toMatch(/^cannot connect to (the gavel server at )?http:\/\/255\.255\.255\.255:4000 \(E[A-Z]+\)/);
      expect((err as GavelError).cause).toMatchObject({ code: expect.stringMatching(/^E[A-Z]+$/) });
    } finally {
      client.close();
    }
  }, 60_000);

  it("maps a failed exchange's system error as a failed connection is mapped: refused is no server, ETIMEDOUT and unreachable INTERNAL", () => {
    const errno = (code: string) => Object.assign(new Error(`connect ${code} 10.0.0.1:4000`), { code });
    const url = "http://10.0.0.1:4000";
    const refused = exchangeFailure(url, errno("ECONNREFUSED"), false);
    expect(refused.code).toBe("FILE_NOT_FOUND");
    expect(isNotRunning(refused)).toBe(true);
    for (const code of ["ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND"]) {
      const e = exchangeFailure(url, errno(code), false);
      expect(e).toBeInstanceOf(GavelError);
      expect([e.code, e.message]).toEqual(["INTERNAL", `cannot connect to the gavel server at ${url} (${code})`]);
      expect(isNotRunning(e)).toBe(false);
    }
    expect(exchangeFailure(url, errno("EACCES"), false).code).toBe("PERMISSION_DENIED");
    // once connected: the connection failed, it was not refused
    const late = exchangeFailure(url, errno("ETIMEDOUT"), true);
    expect([late.code, late.message]).toEqual(["INTERNAL", `the connection to the gavel server at ${url} failed (ETIMEDOUT)`]);
    expect(exchangeFailure(url, errno("ECONNRESET"), true).message).toBe("the gavel server closed the connection (ECONNRESET)");
  });

  it("a reply the server cuts off part-way is INTERNAL saying so, not 'without JSON'; a whole reply that is not JSON still is", async () => {
    const answer = JSON.stringify({ v: 1, id: 1, ok: true, result: { pong: true, note: "é".repeat(40) } }) + "\n";
    const whole = Buffer.byteLength(answer);
    const cases: [string, (res: ServerResponse) => void, RegExp][] = [
      ["cut mid-body", (res) => {
        res.writeHead(200, { "content-type": "application/json", "content-length": whole });
        res.write(answer.slice(0, 30), () => res.socket?.destroy()); // once the 30 bytes are sent
      }, new RegExp(`^the gavel server closed the connection before its whole answer \\(HTTP 200, 30 of ${whole} bytes came\\)$`)],
      ["cut after the headers", (res) => {
        res.writeHead(200, { "content-type": "application/json", "content-length": whole });
        res.flushHeaders(); // written to the socket now; its end() follows them, without a byte of the body
        res.socket?.end();
      }, /^the gavel server closed the connection before its answer$/],
      ["whole, not JSON", (res) => {
        res.writeHead(200, { "content-type": "text/plain" });
        res.end("hello");
      }, /^the gavel server answered HTTP 200 without JSON$/],
    ];
    for (const [what, reply, msg] of cases) {
      const server = createHttpServer((req, res) => {
        req.resume();
        req.once("end", () => reply(res));
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
      try {
        await expectInternal(url, what, msg);
      } finally {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    }
  }, 60_000);
});
