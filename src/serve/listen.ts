/**
 * The start of a resident router's listener (server.ts): its options checked before anything
 * listens, the Unix socket or the localhost HTTP server, the HTTP endpoint file, and a failure of any
 * step as a typed GavelError. What listens when a later step fails is closed again by the caller
 * ({@link closeListener}), so a failed start never leaves a handle that keeps the process alive.
 *
 * @module
 */
import { createServer as createNetServer, type Server as NetServer } from "node:net";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { open, rm } from "node:fs/promises";
import { GavelError, clip, type GavelErrorCode, type OptionNames } from "../errors.js";
import type { Model } from "../model/Model.js";
import type { Router } from "../route/index.js";
import { errnoError } from "../util/errno.js";
import { checkInt } from "../util/validate.js";
import { limitsOf, type ServeLimits } from "./limits.js";
import { socketPathProblem } from "./protocol.js";
import { checkWatchOptions, type WatchEvent, type WatchOptions } from "./watch.js";

/** Where and how the server listens, and what it serves. */
export interface ServeOptions {
  router: Router;
  model: Model;
  /** The model file, for `status`. */
  modelPath: string;
  /** The Unix socket path (used unless `port` is given), at most the platform's socket path length (protocol.ts, MAX_SOCKET_PATH_BYTES). */
  socket: string;
  /** Listen on 127.0.0.1:port over HTTP instead (0: a free port). */
  port?: number;
  /** How long shutdown lets requests in flight finish before aborting them, 0 to 2^31 − 1 ms (default 10 s). */
  graceMs?: number;
  /** Bounds on connections and requests (limits.ts, DEFAULT_LIMITS for what is not given). */
  limits?: Partial<ServeLimits>;
  /**
   * An on-demand server's idle exit, 1 to 2^31 − 1 ms: once no connection has been open and no
   * request in flight for this long, `onIdle` is called (once); `gavel serve --idle-exit-ms` then shuts down.
   */
  idleExitMs?: number;
  onIdle?: () => void;
  /**
   * Watch the installed skills' folders and sync what changes (watch.ts; every root once at start):
   * true, or the watcher's options. `onWatch` hears each sync that did anything, and each line of trouble.
   */
  watch?: boolean | WatchOptions;
  onWatch?: (e: WatchEvent) => void;
  /** How the messages of an install's or a sync's failures, and the watcher's, name the router's options (`gavel serve`: its flags); the API's names when absent. */
  optionNames?: OptionNames;
}

/**
 * Every option a start takes, checked before anything listens or is attached: the socket path (a
 * non-empty string without NUL, within the platform's length) or the port, the times, the limits and
 * the watcher's options; the limits completed with their defaults. INVALID_ARGUMENT otherwise.
 */
export function checkServeOptions(o: ServeOptions): ServeLimits {
  const limits = limitsOf(o.limits);
  if (o.port !== undefined) checkInt(o.port, "port", 0, 65535);
  else {
    if (typeof o.socket !== "string" || o.socket === "" || o.socket.includes("\0")) throw new GavelError("socket must be a non-empty path without NUL", "INVALID_ARGUMENT");
    const problem = socketPathProblem(o.socket);
    if (problem) throw new GavelError(`socket ${clip(o.socket)}: ${problem}`, "INVALID_ARGUMENT");
  }
  if (o.graceMs !== undefined) checkInt(o.graceMs, "graceMs", 0);
  if (o.idleExitMs !== undefined) checkInt(o.idleExitMs, "idleExitMs", 1);
  if (typeof o.watch === "object" && o.watch !== null) checkWatchOptions(o.watch);
  return limits;
}

/**
 * A failed step of a start as a GavelError (util/errno.ts, errnoError): `doing` says what failed
 * ("listen on /x/serve.sock"), the file system's errno its code (a permission failure
 * PERMISSION_DENIED, a full disk NO_SPACE, a missing path FILE_NOT_FOUND, a folder in the way
 * INVALID_ARGUMENT); a GavelError as it is; anything else INTERNAL.
 */
export function startupError(err: unknown, doing: string): GavelError {
  return errnoError(err, `gavel serve could not ${doing}`, { fallback: "internal" });
}

/** Listens on `server` (through `listen`); a failure to is a typed error (`inUse`: the code and words for EADDRINUSE). */
function listenOn(server: NetServer, listen: (done: () => void) => void, doing: string, inUse: [GavelErrorCode, string]): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once("error", (err: NodeJS.ErrnoException) => {
      reject(err.code === "EADDRINUSE" ? new GavelError(`gavel serve could not ${doing}: ${inUse[1]}`, inUse[0], { cause: err }) : startupError(err, doing));
    });
    listen(() => resolve());
  });
}

/** A Unix socket server listening on `socket`, created 0600 (the socket path must be claimed first: claimSocketPath). */
export async function listenUnix(socket: string, limits: ServeLimits): Promise<NetServer> {
  // half-open: a client that closes its sending side (socat, nc -N) still reads its answers (server.ts, #onSocket)
  const net = createNetServer({ allowHalfOpen: true });
  net.maxConnections = limits.maxConnections;
  const inUse: [GavelErrorCode, string] = ["BANK_LOCKED", "another process took the path since it was claimed; stop that server first (or pass another --socket)"];
  await listenOn(
    net,
    (done) => {
      // the socket is created 0600: no moment where another user could connect
      const old = process.umask(0o177);
      try {
        net.listen(socket, done);
      } finally {
        process.umask(old);
      }
    },
    `listen on ${clip(socket)}`,
    inUse,
  );
  return net;
}

/** An HTTP server listening on 127.0.0.1:`port` (0: a free port), bounded by `limits`. */
export async function listenHttp(port: number, limits: ServeLimits): Promise<HttpServer> {
  // headers and body within requestMs of the first byte (node's own slow-loris guards), an idle
  // keep-alive connection closed after idleMs; the check runs often enough for short bounds
  const http = createHttpServer({
    requestTimeout: limits.requestMs,
    headersTimeout: limits.requestMs,
    keepAliveTimeout: limits.idleMs,
    connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(limits.requestMs / 4))),
  });
  http.maxConnections = limits.maxConnections;
  await listenOn(http, (done) => http.listen(port, "127.0.0.1", done), `listen on 127.0.0.1:${port}`, ["INVALID_ARGUMENT", `port ${port} is in use by another process; pass another --port (0: any free port)`]);
  return http;
}

/** Closes a listener and waits until it has closed (a Unix socket's file goes with it: libuv unlinks it). */
export function closeListener(server: NetServer): Promise<void> {
  return new Promise<void>((resolve) => server.close(() => resolve()));
}

/**
 * Writes the HTTP endpoint file `file` (mode 0600) afresh: what was there removed first, then created
 * exclusively; a write that fails removes the file it created (only that one), and the failure is typed.
 */
export async function writeEndpointFile(file: string, text: string): Promise<void> {
  const doing = `write the endpoint file ${clip(file)}`;
  try {
    await rm(file, { force: true });
    const fh = await open(file, "wx", 0o600);
    try {
      await fh.writeFile(text);
    } catch (err) {
      await fh.close().catch(() => undefined);
      await rm(file, { force: true }).catch(() => undefined);
      throw err;
    }
    await fh.close();
  } catch (err) {
    throw startupError(err, doing);
  }
}
