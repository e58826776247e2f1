// `gavel mcp` over stdio (src/cli/mcp/server.ts serveMcpStdio, src/cli/mcp/stdio-transport.ts) on stand-in
// streams and a stand-in skill source (no model): a frame over the cap, a malformed frame, a batch, an
// unreadable resource URI and a GavelError in prompts/get are each answered and the server goes on; a
// client that closes stdout ends the session instead of crashing the process.
import { afterEach, describe, expect, it } from "vitest";
import { PassThrough, Writable } from "node:stream";
import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serveMcpStdio } from "../../src/cli/mcp/server.js";
import { MCP_STDIO_MAX_FRAME, idFromHead } from "../../src/cli/mcp/stdio-transport.js";
import { GavelError } from "../../src/errors.js";
import type { SkillSource } from "../../src/adapters/skill-tools.js";
import type { SkillRecord } from "../../src/route/skill-record.js";

const record = { id: "pdf", name: "pdf", description: "PDF files", body: "Read PDFs.", metadata: {}, allowedTools: null, contentHash: "h", source: "s", path: null, dir: null, provenance: { kind: "local" }, sourceStatus: "ok", disableModelInvocation: false } as unknown as SkillRecord;
const source: SkillSource = {
  route: () => Promise.reject(new Error("not used")),
  glance: () => Promise.resolve([]),
  list: () => [{ id: "pdf", name: "pdf", description: "PDF files" }],
  get: (id) => {
    if (id === "pdf") return Promise.resolve(record);
    if (id === "broken") return Promise.reject(new GavelError("the bank's keys file is damaged", "CORRUPT_FILE"));
    return Promise.reject(new GavelError(`no installed skill "${id}"`, "SKILL_NOT_FOUND"));
  },
};
const info = { version: "0.0.0", bankDir: "/nowhere" };

interface Frame {
  id?: unknown;
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

const stops: AbortController[] = [];
afterEach(() => {
  for (const s of stops.splice(0)) s.abort();
});

/** A server on a PassThrough pair: send lines, await the answer to an id. */
function session(bankDir = "/nowhere") {
  const input = new PassThrough();
  const output = new PassThrough();
  const logs: string[] = [];
  const stop = new AbortController();
  stops.push(stop);
  const done = serveMcpStdio(source, { ...info, bankDir }, stop.signal, { input, output, log: (l) => logs.push(l) });
  const frames: Frame[] = [];
  const waiters: (() => void)[] = [];
  let buf = "";
  output.setEncoding("utf8").on("data", (d: string) => {
    buf += d;
    for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
      frames.push(JSON.parse(buf.slice(0, i)) as Frame);
      buf = buf.slice(i + 1);
    }
    for (const w of waiters.splice(0)) w();
  });
  const until = async (pred: () => boolean): Promise<void> => {
    while (!pred()) await new Promise<void>((r) => waiters.push(r));
  };
  const answer = async (id: unknown): Promise<Frame> => {
    const f = () => frames.find((x) => x.id === id && (x.result !== undefined || x.error !== undefined));
    await until(() => f() !== undefined);
    return f()!;
  };
  const send = (line: string) => input.write(line);
  const rpc = async (id: string | number, method: string, params: Record<string, unknown> = {}) => {
    send(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
    return answer(id);
  };
  return { input, output, logs, frames, done, answer, until, send, rpc, stop };
}

async function initialized(bankDir?: string) {
  const s = session(bankDir);
  const init = await s.rpc("init", "initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "0" } });
  expect(init.result?.serverInfo).toMatchObject({ name: "gavel-router" });
  s.send(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");
  return s;
}

describe("gavel mcp over stdio: frames", () => {
  it("answers a frame over the cap with -32600 and its id, without holding it, and goes on", async () => {
    const s = await initialized();
    // over the SDK transport's own 10 MiB too, which closed the server (exit 0) with the call unanswered
    const big = JSON.stringify({ jsonrpc: "2.0", id: "big", method: "tools/call", params: { name: "load_skill", arguments: { skill: "x".repeat(11 * 1024 * 1024) } } });
    for (let i = 0; i < big.length; i += 65536) s.send(big.slice(i, i + 65536));
    s.send("\n");
    const over = await s.answer("big");
    expect(over.error).toEqual({ code: -32600, message: `Invalid Request: frame over ${MCP_STDIO_MAX_FRAME} bytes` });
    expect(s.logs.join("\n")).toMatch(/a frame over 8388608 bytes/);
    expect((await s.rpc("after", "ping")).result).toEqual({});
  }, 60_000);

  it("reads the id of an over-cap frame from its first bytes only when plainly there", () => {
    expect(idFromHead('{"jsonrpc":"2.0","id":"a1","method":"tools/call","params":{"x":"')).toBe("a1");
    expect(idFromHead('{"jsonrpc":"2.0","method":"ping","id":42,"params":')).toBe(42);
    expect(idFromHead('{"params":{"id":7},"id":8')).toBeNull();
    expect(idFromHead('{"jsonrpc":"2.0","id":{"a":1}')).toBeNull();
    expect(idFromHead("xxxx")).toBeNull();
  });

  it("answers a malformed frame with its id where readable, names the first issue, refuses a batch, and goes on", async () => {
    const s = await initialized();
    s.send('{"jsonrpc":"1.0","id":"w","method":"ping"}\n');
    expect((await s.answer("w")).error?.code).toBe(-32600);
    s.send('{"jsonrpc":"2.0","id":17}\n');
    expect((await s.answer(17)).error?.message).toMatch(/method: Invalid input/);
    expect(s.logs.join("\n")).toMatch(/not a JSON-RPC message: jsonrpc: Invalid input: expected "2\.0"/);
    s.send('[{"jsonrpc":"2.0","id":"b1","method":"ping"}]\n');
    s.send("not json\n");
    s.send("\n"); // a blank line is skipped, not answered
    expect((await s.rpc("next", "ping")).result).toEqual({});
    const refused = s.frames.filter((f) => f.id === null).map((f) => [f.error?.code, f.error?.message]);
    expect(refused).toEqual([
      [-32600, "Invalid Request: batch not supported (send one message a line)"],
      [-32700, "Parse error: the frame is not JSON"],
    ]);
  });

  it("ends the session, not the process, when the client closes stdout (EPIPE)", async () => {
    const input = new PassThrough();
    const output = new Writable({
      write(_chunk, _enc, cb) {
        cb(Object.assign(new Error("write EPIPE"), { code: "EPIPE" }));
      },
    });
    const done = serveMcpStdio(source, info, undefined, { input, output, log: () => undefined });
    input.write(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }) + "\n");
    await expect(done).resolves.toBeUndefined();
    expect(input.listenerCount("data")).toBe(0);
  });
});

describe("gavel mcp over stdio: resources and prompts", () => {
  it("answers -32002 for every URI that names no installed skill", async () => {
    const s = await initialized();
    expect(((await s.rpc(1, "resources/read", { uri: "skill://pdf" })).result?.contents as { text: string }[])[0].text).toBe("Read PDFs.");
    for (const [i, uri] of ["skill://", "skill://a/b", "skill://pdf?x=1", "skill://%E0%A4%A", "file:///etc/passwd", "skill://nope"].entries()) {
      const r = await s.rpc(`r${i}`, "resources/read", { uri });
      expect(r.error?.code, uri).toBe(-32002);
    }
    expect((await s.rpc("enc", "resources/read", { uri: "skill://a%2Fb" })).error?.message).toMatch(/no installed skill "a\/b" \[SKILL_NOT_FOUND\]/);
  });

  it("answers -32602 invalid params, naming the param, for a request whose params do not fit its method", async () => {
    const s = await initialized();
    const cases: [string, Record<string, unknown>, string][] = [
      ["resources/read", {}, "params.uri: Invalid input: expected string, received undefined"],
      ["resources/read", { uri: 5 }, "params.uri: Invalid input: expected string, received number"],
      ["resources/read", { uri: { href: "skill://pdf" } }, "params.uri: Invalid input: expected string, received object"],
      ["prompts/get", {}, "params.name: Invalid input: expected string, received undefined"],
      ["tools/call", { name: 5 }, "params.name: Invalid input: expected string, received number"],
      ["resources/list", { cursor: 5 }, "params.cursor: Invalid input: expected string, received number"],
      ["prompts/list", { cursor: null }, "params.cursor: Invalid input: expected string, received null"],
    ];
    for (const [i, [method, params, issue]] of cases.entries()) {
      const r = await s.rpc(`bad${i}`, method, params);
      expect(r.error, `${method} ${JSON.stringify(params)}`).toEqual({ code: -32602, message: `MCP error -32602: ${method}: ${issue}` });
    }
    s.send(JSON.stringify({ jsonrpc: "2.0", id: "no params", method: "resources/read" }) + "\n");
    expect((await s.answer("no params")).error).toEqual({ code: -32602, message: "MCP error -32602: resources/read: params: Invalid input: expected object, received undefined" });
    // and the session goes on; a method it does not serve is still -32601, whatever its params
    expect(((await s.rpc("ok", "resources/read", { uri: "skill://pdf" })).result?.contents as { text: string }[])[0].text).toBe("Read PDFs.");
    expect((await s.rpc("sub", "resources/subscribe", {})).error?.code).toBe(-32601);
  });

  it("answers any GavelError of prompts/get and resources/read as -32602 <message> [<CODE>]", async () => {
    const s = await initialized();
    const p = await s.rpc("p", "prompts/get", { name: "broken" });
    expect(p.error).toEqual({ code: -32602, message: "MCP error -32602: the bank's keys file is damaged [CORRUPT_FILE]" });
    const r = await s.rpc("r", "resources/read", { uri: "skill://broken" });
    expect(r.error).toMatchObject({ code: -32602, message: "MCP error -32602: the bank's keys file is damaged [CORRUPT_FILE]" });
  });
});

describe("gavel mcp over stdio: list_changed", () => {
  it("declares listChanged and tells the client when the bank's commit moves", async () => {
    const bank = mkdtempSync(join(tmpdir(), "gavel-mcp-watch-"));
    try {
      const commit = (n: number) => {
        writeFileSync(join(bank, "manifest.json.tmp"), JSON.stringify({ commit: n }));
        renameSync(join(bank, "manifest.json.tmp"), join(bank, "manifest.json")); // as a bank commit replaces it
      };
      commit(1);
      const s = session(bank);
      const init = await s.rpc("init", "initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "0" } });
      expect(init.result?.capabilities).toMatchObject({ resources: { listChanged: true }, prompts: { listChanged: true } });
      s.send(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");
      await s.rpc("a", "ping");
      const notices = () => s.frames.filter((f) => (f as { method?: string }).method?.endsWith("list_changed")).map((f) => (f as { method?: string }).method);
      expect(notices()).toEqual([]);
      commit(2);
      await s.rpc("b", "ping"); // each frame read checks the commit first
      await s.until(() => notices().length >= 2);
      expect(notices()).toEqual(["notifications/resources/list_changed", "notifications/prompts/list_changed"]);
      await s.rpc("c", "ping");
      expect(notices()).toHaveLength(2); // once a commit
    } finally {
      rmSync(bank, { recursive: true, force: true });
    }
  });
});
