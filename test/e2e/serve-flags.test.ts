// `gavel serve` and `gavel mcp` check the shared flags before the model loads, and serve applies them:
// before, `--truncate bogus` started both, a server started with `--truncate start` still kept a long
// task's end, `--port 70000` printed a RangeError stack after the model loaded, a socket in a missing
// folder read as "permission denied", and `serve --json` printed text. Also the flags refused before
// the model loads (the model named is a file that does not exist, so a check that came after the load
// would read FILE_NOT_FOUND): a --socket path over the platform's length (before, it was cut short,
// the server listened there, the chmod of the path given threw a raw ENOENT and the process never
// exited), and the time and budget flags out of range (before, --grace-ms 3000000000 became 1 ms and
// --max-task-tokens=-1 was refused only once the model had loaded).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "../../src/serve/client.js";
import { MAX_SOCKET_PATH_BYTES } from "../../src/serve/protocol.js";
import { runNode } from "../helpers/run.js";
import { cli, startServe, type ServeChild } from "../helpers/serve-process.js";

const env = { ...process.env, GAVEL_MODEL: "", GAVEL_PROJECTIONS: "", GAVEL_BANK: "" };

describe("gavel serve and gavel mcp: the shared flags", () => {
  let dir: string;
  let bank: string;
  let server: ServeChild | undefined;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "gavel-serve-flags-"));
    bank = join(dir, "bank");
    for (const [name, what] of [["csv-dedupe", "Remove duplicate rows from CSV files."], ["image-resize", "Resize and convert images."]]) {
      mkdirSync(join(dir, "skills", name), { recursive: true });
      writeFileSync(join(dir, "skills", name, "SKILL.md"), `---\nname: ${name}\ndescription: ${what}\n---\n# ${name}\n${what}\n`);
    }
    const r = await runNode([cli, "install", join(dir, "skills"), "--bank", bank, "--context", "2048"], { env });
    expect(r.code, r.err).toBe(0);
  }, 300_000);
  afterAll(() => {
    server?.child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("refuses a bad --truncate, an out-of-range --port and a socket in a missing folder before loading anything", async () => {
    for (const [args, code] of [
      [["serve", "--truncate", "bogus"], "INVALID_ARGUMENT"],
      [["mcp", "--truncate", "bogus"], "INVALID_ARGUMENT"],
      [["serve", "--port", "70000"], "INVALID_ARGUMENT"],
      [["serve", "--port=-1"], "INVALID_ARGUMENT"],
      [["serve", "--socket", join(dir, "no-such-folder", "x.sock")], "FILE_NOT_FOUND"],
    ] as const) {
      const r = await runNode([cli, ...args, "--bank", bank, "--json"], { env });
      expect(r.code, `${args.join(" ")}: ${r.out}${r.err}`).not.toBe(0);
      expect(r.err, args.join(" ")).toContain(code);
      expect(r.err, args.join(" ")).not.toMatch(/\n\s+at /); // no stack
    }
  });

  it("a server started with --truncate start keeps a long task's start", async () => {
    server = await startServe(["--bank", bank, "--truncate", "start"], { env });
    const c = await connect({ bank });
    try {
      const task = `Remove the duplicate rows from orders.csv. ${"Then some unrelated chatter about the weather. ".repeat(400)}`;
      const r = await c.request<{ truncation?: { kept: string } }>("route", { task });
      expect(r.truncation?.kept).toBe("start");
    } finally {
      c.close();
      server.child.kill("SIGTERM");
      await server.exited;
      server = undefined;
    }
  });
});

describe("gavel serve: the flags refused before the model loads", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "gavel-serve-early-"));
    mkdirSync(join(dir, "bank"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** `gavel serve` over an existing (empty) bank and a model that does not exist. */
  const serveWith = (args: string[]) => runNode([cli, "serve", "--bank", join(dir, "bank"), "--model", join(dir, "no-such-model.gguf"), ...args], { env, timeoutMs: 60_000 });

  it("a --socket path over the platform's length: INVALID_ARGUMENT naming its length and the limit, exit 1, nothing made", async () => {
    const limit = MAX_SOCKET_PATH_BYTES ?? 103;
    const deep = join(dir, "b".repeat(Math.max(1, limit - dir.length)));
    mkdirSync(deep);
    const socket = join(deep, "s.sock");
    const r = await serveWith(["--socket", socket]);
    expect(r.timedOut, r.err).toBe(false);
    expect(r.code, r.err).toBe(1);
    expect(r.err).toContain("[INVALID_ARGUMENT]");
    expect(r.err).toContain(`is ${Buffer.byteLength(socket)} bytes, over the ${limit} bytes`);
    expect(r.err).not.toMatch(/\n\s+at /);
    expect(readdirSync(deep)).toEqual([]);
  }, 60_000);

  it.each([
    [["--grace-ms", "3000000000"], /--grace-ms must be a whole number from 0 to 2147483647, got 3000000000/],
    [["--grace-ms=-1"], /--grace-ms must be a whole number from 0 to 2147483647, got -1/],
    [["--max-task-tokens=-1"], /--max-task-tokens must be a whole number from 0 to 2147483647, got -1/],
    [["--idle-exit-ms", "3000000000"], /--idle-exit-ms must be a whole number from 1 to 2147483647, got 3000000000/],
    [["--idle-exit-ms", "0"], /--idle-exit-ms must be a whole number from 1 to 2147483647, got 0/],
    [["--watch", "--watch-debounce-ms", "3000000000"], /--watch-debounce-ms must be a whole number from 0 to 2147483647, got 3000000000/],
    [["--watch-debounce-ms", "100"], /--watch-debounce-ms needs --watch/],
  ] as [string[], RegExp][])("%j: INVALID_ARGUMENT, exit 1", async (args, message) => {
    const r = await serveWith(args);
    expect(r.code, r.err).toBe(1);
    expect(r.err).toMatch(message);
    expect(r.err).toContain("[INVALID_ARGUMENT]");
  }, 60_000);

  it("gavel mcp --idle-exit-ms past a timer's range: INVALID_ARGUMENT, exit 1 (the server it would start takes no more)", async () => {
    const r = await runNode([cli, "mcp", "--bank", join(dir, "bank"), "--model", join(dir, "no-such-model.gguf"), "--idle-exit-ms", "3000000000"], { env, timeoutMs: 60_000 });
    expect(r.code, r.err).toBe(1);
    expect(r.err).toMatch(/--idle-exit-ms must be a whole number from 1 to 2147483647, got 3000000000 \[INVALID_ARGUMENT\]/);
  }, 60_000);
});
