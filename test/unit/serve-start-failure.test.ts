// A resident router whose start fails: options out of range are refused before anything listens, and
// a step that fails after listening (the socket's chmod, the HTTP endpoint file) closes the listener,
// the skill watcher and the schedulers again and rejects typed. Before, such a failure left the
// server listening (a socket path over the platform's length was cut short and served elsewhere, a
// folder at <bank>/serve.http.json gave a raw ERR_FS_EISDIR): `gavel serve` never exited. The server
// runs in this process over a stand-in router and model; `chmod` and `fs.watch` are wrapped to make a
// chmod fail on demand and to see which watchers are still open.
import { describe, expect, it, vi } from "vitest";
import { createServer as createNetServer } from "node:net";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GavelError } from "../../src/errors.js";
import type { Model } from "../../src/model/Model.js";
import type { Router } from "../../src/route/index.js";
import { residentFixtures } from "../helpers/resident-fixtures.js";
import { ResidentServer, type ServeOptions } from "../../src/serve/server.js";
import { MAX_SOCKET_PATH_BYTES } from "../../src/serve/protocol.js";
import { startupError } from "../../src/serve/listen.js";

const fsState = vi.hoisted(() => ({ chmodError: null as NodeJS.ErrnoException | null, watchers: new Set<unknown>(), watched: 0 }));

vi.mock("node:fs/promises", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs/promises")>();
  const chmod = (...a: Parameters<typeof real.chmod>) => (fsState.chmodError ? Promise.reject(fsState.chmodError) : real.chmod(...a));
  return { ...real, chmod, default: { ...real, chmod } };
});

vi.mock("node:fs", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs")>();
  // every watcher opened is counted until it closes
  const watch = ((...a: Parameters<typeof real.watch>) => {
    const w = real.watch(...a);
    fsState.watchers.add(w);
    fsState.watched++;
    w.once("close", () => fsState.watchers.delete(w));
    return w;
  }) as typeof real.watch;
  return { ...real, watch, default: { ...real, watch } };
});

const { dirs, servers } = residentFixtures();

/** A stand-in model and router that record what is attached to them (null: detached again). */
function standIns(bankDir: string, skillFile?: string) {
  const attached = { states: undefined as unknown, glances: undefined as unknown, closed: 0, disposed: 0 };
  const model = {
    disposed: false,
    batchesStates: true,
    info: { nEmbd: 8 },
    routeHiddenStates: (f: unknown) => void (attached.states = f),
    dispose: async () => void attached.disposed++,
  } as unknown as Model;
  const router = {
    bankDir,
    model: { tokenizeAsync: async (t: string) => new Int32Array(t.length) },
    list: () => (skillFile ? [{ id: "a", name: "a", description: "a skill", source: skillFile, keys: 1, renderTokens: 1, disableModelInvocation: false }] : []),
    listState: () => ({ store: null, entries: 0, handles: 0 }),
    stats: () => ({ skills: skillFile ? 1 : 0 }),
    routeGlances: (f: unknown) => void (attached.glances = f),
    close: async () => void attached.closed++,
  } as unknown as Router;
  return { model, router, attached };
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "gavel-serve-fail-"));
  dirs.push(dir);
  return dir;
}

/** A skill folder to watch: <dir>/skills/a/SKILL.md. */
function skillIn(dir: string): string {
  mkdirSync(join(dir, "skills", "a"), { recursive: true });
  const file = join(dir, "skills", "a", "SKILL.md");
  writeFileSync(file, "---\nname: a\ndescription: a skill\n---\nbody\n");
  return file;
}

/** A port free now (taken and given back by a listener of our own). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createNetServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.once("error", reject);
  });
}

/** Whether something can listen on `target` now (nothing else listens there). */
function canListen(target: { port: number } | { path: string }): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createNetServer();
    s.once("error", () => resolve(false));
    const done = () => s.close(() => resolve(true));
    if ("port" in target) s.listen(target.port, "127.0.0.1", done);
    else s.listen(target.path, done);
  });
}

/** The listening handles this process holds (TCP servers and pipes). */
const listeners = () => process.getActiveResourcesInfo().filter((r) => r === "TCPServerWrap" || r === "PipeWrap").length;

/** Waits until the process holds no more listening handles than `before` (a closed handle goes within a turn of the loop). */
async function handlesBackTo(before: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (listeners() > before) {
    if (Date.now() > deadline) throw new Error(`${listeners() - before} listening handle(s) left: ${process.getActiveResourcesInfo().join(", ")}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function rejection(p: Promise<unknown>): Promise<GavelError> {
  const err = await p.then(
    (server) => {
      servers.push(server as ResidentServer);
      throw new Error("the start did not fail");
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(GavelError);
  return err as GavelError;
}

describe("a start that fails after listening leaves nothing running", () => {
  it("HTTP: a folder at serve.http.json is INVALID_ARGUMENT naming it; the port, the watcher, the idle timer and the schedulers are released", async () => {
    const dir = tempDir();
    mkdirSync(join(dir, "serve.http.json"));
    const { model, router, attached } = standIns(dir, skillIn(dir));
    const port = await freePort();
    const before = listeners();
    const err = await rejection(ResidentServer.start({ router, model, modelPath: "fake.gguf", socket: join(dir, "s.sock"), port, watch: true, idleExitMs: 60_000, onIdle: () => undefined }));
    expect(err.code, err.message).toBe("INVALID_ARGUMENT");
    expect(err.message).toContain(join(dir, "serve.http.json"));
    // the watcher sets its watches up after reading the folders off the thread: none is open, whether
    // or not it had set any up when the start failed, and none is set up later
    expect(fsState.watchers.size).toBe(0);
    const opened = fsState.watched;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(fsState.watched).toBe(opened);
    await handlesBackTo(before);
    expect(await canListen({ port })).toBe(true);
    expect(attached.states).toBeNull();
    expect(attached.glances).toBeNull();
    // the router and the model stay the caller's
    expect([attached.closed, attached.disposed]).toEqual([0, 0]);
    expect(readdirSync(join(dir, "serve.http.json"))).toEqual([]); // left as it was
  });

  it("Unix socket: a chmod that fails is typed by its errno; the socket is closed and removed, its path free for the next server", async () => {
    const dir = tempDir();
    const socket = join(dir, "s.sock");
    const { model, router, attached } = standIns(dir, skillIn(dir));
    const before = listeners();
    for (const [errno, code] of [["EPERM", "PERMISSION_DENIED"], ["ENOSPC", "NO_SPACE"], ["ENOENT", "FILE_NOT_FOUND"]] as const) {
      fsState.chmodError = Object.assign(new Error(`${errno}: chmod '${socket}'`), { code: errno, path: socket });
      try {
        const err = await rejection(ResidentServer.start({ router, model, modelPath: "fake.gguf", socket, watch: true }));
        expect(err.code, `${errno}: ${err.message}`).toBe(code);
        expect(err.message).toContain(socket);
        expect(err.message).toContain(errno);
      } finally {
        fsState.chmodError = null;
      }
      expect(existsSync(socket)).toBe(false);
      await handlesBackTo(before);
      expect(fsState.watchers.size).toBe(0);
      expect(attached.states).toBeNull();
      expect(attached.glances).toBeNull();
    }
    expect(await canListen({ path: socket })).toBe(true);
    const server = await ResidentServer.start({ router, model, modelPath: "fake.gguf", socket });
    servers.push(server);
    expect(server.listen).toBe(socket);
  });
});

describe("a listen that fails is typed", () => {
  it("a port another process listens on: INVALID_ARGUMENT naming it, nothing attached", async () => {
    const dir = tempDir();
    const { model, router, attached } = standIns(dir);
    const holder = createNetServer();
    const port = await new Promise<number>((resolve) => holder.listen(0, "127.0.0.1", () => resolve((holder.address() as { port: number }).port)));
    try {
      const err = await rejection(ResidentServer.start({ router, model, modelPath: "fake.gguf", socket: join(dir, "s.sock"), port }));
      expect(err.code).toBe("INVALID_ARGUMENT");
      expect(err.message).toContain(`port ${port} is in use`);
      expect(attached.states).toBeUndefined(); // never attached
      expect(existsSync(join(dir, "serve.http.json"))).toBe(false);
    } finally {
      await new Promise((r) => holder.close(r));
    }
  });
});

describe("options out of range are refused before anything listens", () => {
  const base = (dir: string): ServeOptions => ({ ...standIns(dir), modelPath: "fake.gguf", socket: join(dir, "s.sock") });

  it("a socket path over the platform's length: INVALID_ARGUMENT naming its length and the limit, no socket made anywhere", async () => {
    const dir = tempDir();
    const limit = MAX_SOCKET_PATH_BYTES ?? 103;
    const deep = join(dir, "b".repeat(Math.max(1, limit - dir.length)));
    mkdirSync(deep);
    const socket = join(deep, "s.sock");
    const bytes = Buffer.byteLength(socket);
    expect(bytes).toBeGreaterThan(limit);
    const before = listeners();
    const err = await rejection(ResidentServer.start({ ...base(dir), socket }));
    expect(err.code).toBe("INVALID_ARGUMENT");
    expect(err.message).toContain(`${bytes} bytes`);
    expect(err.message).toContain(`${limit} bytes`);
    await handlesBackTo(before);
    expect(readdirSync(deep)).toEqual([]);
    // where the kernel would have cut it: nothing there either
    expect(existsSync(Buffer.from(socket).subarray(0, limit).toString())).toBe(false);
  });

  it.each([
    ["graceMs 3e9", { graceMs: 3_000_000_000 }, /graceMs must be an integer in \[0, 2\^31 - 1\], got 3000000000/],
    ["graceMs -1", { graceMs: -1 }, /graceMs must be an integer in \[0, 2\^31 - 1\], got -1/],
    ["idleExitMs 3e9", { idleExitMs: 3_000_000_000, onIdle: () => undefined }, /idleExitMs must be an integer in \[1, 2\^31 - 1\]/],
    ["idleExitMs 0", { idleExitMs: 0, onIdle: () => undefined }, /idleExitMs must be an integer in \[1, 2\^31 - 1\], got 0/],
    ["watch.debounceMs 3e9", { watch: { debounceMs: 3_000_000_000 } }, /debounceMs must be an integer in \[0, 2\^31 - 1\]/],
    ["watch.maxWaitMs -1", { watch: { maxWaitMs: -1 } }, /maxWaitMs must be an integer in \[0, 2\^31 - 1\], got -1/],
    ["limits.maxTaskTokens -1", { limits: { maxTaskTokens: -1 } }, /^limits\.maxTaskTokens must be an integer in \[0, 2\^31 - 1\], got -1$/],
    ["limits.idleMs 3e9", { limits: { idleMs: 3_000_000_000 } }, /^limits\.idleMs must be an integer in \[1, 2\^31 - 1\], got 3000000000$/],
    ["limits.requestMs 0", { limits: { requestMs: 0 } }, /^limits\.requestMs must be an integer in \[1, 2\^31 - 1\], got 0$/],
    ["port 70000", { port: 70000 }, /port must be an integer in \[0, 65535\], got 70000/],
  ] as [string, Partial<ServeOptions>, RegExp][])("%s: INVALID_ARGUMENT, nothing listens", async (_what, bad, message) => {
    const dir = tempDir();
    const before = listeners();
    const err = await rejection(ResidentServer.start({ ...base(dir), ...bad }));
    expect(err.code).toBe("INVALID_ARGUMENT");
    expect(err.message).toMatch(message);
    await handlesBackTo(before);
    expect(existsSync(join(dir, "s.sock"))).toBe(false);
  });
});

describe("startupError", () => {
  it("types a failed step by its errno, keeps a GavelError and calls anything else INTERNAL", () => {
    const errno = (code: string) => Object.assign(new Error(code), { code });
    expect(startupError(errno("EACCES"), "write x")).toMatchObject({ code: "PERMISSION_DENIED", message: "gavel serve could not write x: permission denied (EACCES)" });
    expect(startupError(errno("EROFS"), "write x").code).toBe("PERMISSION_DENIED");
    expect(startupError(errno("EDQUOT"), "write x").code).toBe("NO_SPACE");
    expect(startupError(errno("ENOTDIR"), "write x").code).toBe("FILE_NOT_FOUND");
    expect(startupError(errno("ERR_FS_EISDIR"), "write x").code).toBe("INVALID_ARGUMENT");
    const typed = new GavelError("already typed", "BANK_LOCKED");
    expect(startupError(typed, "write x")).toBe(typed);
    expect(startupError(new TypeError("boom"), "start")).toMatchObject({ code: "INTERNAL", message: "gavel serve could not start: boom" });
  });
});
