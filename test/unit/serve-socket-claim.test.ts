// A live server whose queue of connections is full: a connection to its socket fails with EAGAIN, not
// ECONNREFUSED. `gavel serve`'s claim of the socket path (claimSocketPath) refuses it (BANK_LOCKED) and
// leaves the socket where it is; a client's connect gets a typed BUSY, not a raw system error. The
// live server is a child process that listens with a backlog of 1 and then blocks its thread (it never
// accepts); the test fills the queue until a connection fails with EAGAIN, whatever the machine's speed.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { connect as netConnect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GavelError, connect } from "../../src/index.js";
import { claimSocketPath } from "../../src/serve/socket-claim.js";

const BLOCKED_SERVER = `
const net = require("node:net");
const srv = net.createServer(() => {});
srv.listen({ path: process.argv[1], backlog: 1 }, () => {
  process.stdout.write("ready\\n", () => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 600000));
});`;

describe.skipIf(process.platform !== "linux")("a live server whose queue of connections is full (Linux answers EAGAIN)", () => {
  let dir: string;
  let socket: string;
  let child: ChildProcess;
  const held: Socket[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "gavel-socket-claim-"));
    socket = join(dir, "serve.sock");
    child = spawn(process.execPath, ["-e", BLOCKED_SERVER, socket], { stdio: ["ignore", "pipe", "inherit"] });
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on("data", (d: Buffer) => d.toString().includes("ready") && resolve());
      child.once("exit", (code) => reject(new Error(`the blocked server exited (${code})`)));
    });
    // connect until one fails with EAGAIN: the queue is full (its thread is blocked: nothing is accepted)
    for (let i = 0; i < 256; i++) {
      const code = await new Promise<string | null>((resolve) => {
        const s = netConnect(socket);
        s.once("connect", () => (held.push(s), resolve(null)));
        s.once("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? "?"));
      });
      if (code === "EAGAIN") return;
      if (code !== null) throw new Error(`filling the queue failed with ${code}`);
    }
    throw new Error("the queue never filled");
  }, 60_000);

  afterAll(() => {
    for (const s of held) s.destroy();
    child?.kill("SIGKILL");
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("is not taken for a stale socket: claiming its path is BANK_LOCKED and the socket stays", async () => {
    const err = await claimSocketPath(socket).then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(GavelError);
    expect((err as GavelError).code).toBe("BANK_LOCKED");
    expect((err as GavelError).message).toContain("EAGAIN");
    expect(existsSync(socket)).toBe(true);
  });

  it("a client's connect is refused with BUSY, a GavelError", async () => {
    const err = await connect({ socket }).then((c) => (c.close(), null), (e: unknown) => e);
    expect(err).toBeInstanceOf(GavelError);
    expect((err as GavelError).code).toBe("BUSY");
  });
});
