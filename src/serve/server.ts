/**
 * The resident router (`gavel serve`, docs/SERVE.md): one process holds the model and the bank and
 * answers the protocol of protocol.ts over a Unix domain socket (mode 0600, owner checked by
 * clients) or localhost HTTP (a random bearer token in a 0600 file).
 *
 * Requests run concurrently: reads (route, glance, get-skill, list, status) go on while a write runs;
 * the Router itself runs writes (install, uninstall) one at a time and the model queues its passes.
 * Each request gets an AbortController: a `cancel` for its id, or its client going away, aborts it
 * through the AbortSignal the Router verbs take. {@link ResidentServer.shutdown} stops accepting,
 * lets requests in flight finish (aborting those still running after a grace period), closes the
 * router and the model and removes the socket.
 *
 * @module
 */
import { createServer as createNetServer, connect as netConnect, type Server as NetServer, type Socket } from "node:net";
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from "node:http";
import { randomBytes, timingSafeEqual } from "node:crypto";
import { chmod, lstat, readFile, rm, writeFile } from "node:fs/promises";
import { GavelError } from "../errors.js";
import type { Model } from "../model/Model.js";
import type { Router } from "../route/index.js";
import { Handlers } from "./handlers.js";
import { envelopeError, encodeResponse, httpEndpointPath, MAX_LINE_BYTES, PROTOCOL_VERSION, type Op, type Request, type RequestId, type Response } from "./protocol.js";

/** Where and how the server listens, and what it serves. */
export interface ServeOptions {
  router: Router;
  model: Model;
  /** The model file, for `status`. */
  modelPath: string;
  /** The Unix socket path (used unless `port` is given). */
  socket: string;
  /** Listen on 127.0.0.1:port over HTTP instead (0: a free port). */
  port?: number;
  /** How long shutdown lets requests in flight finish before aborting them (default 10 s). */
  graceMs?: number;
}

/** The answer to a failure, as the wire carries it. */
function errorOf(id: RequestId | null, err: unknown): Response {
  const code = err instanceof GavelError ? err.code : "INTERNAL";
  const message = err instanceof Error ? err.message : String(err);
  return { v: PROTOCOL_VERSION, id, ok: false, error: { code, message } };
}

/**
 * Checks that nothing serves `socket` now: a socket that accepts a connection is a live server
 * (BANK_LOCKED); one that refuses is stale and is removed; any other file there is refused.
 */
export async function claimSocketPath(socket: string): Promise<void> {
  const st = await lstat(socket).catch(() => null);
  if (!st) return;
  if (!st.isSocket()) throw new GavelError(`${socket} exists and is not a socket; remove it or pass another --socket`, "INVALID_ARGUMENT");
  const live = await new Promise<boolean>((resolve) => {
    const s = netConnect(socket);
    const timer = setTimeout(() => (s.destroy(), resolve(true)), 2000); // accepts but never answers: treat as live
    s.once("connect", () => (clearTimeout(timer), s.destroy(), resolve(true)));
    s.once("error", () => (clearTimeout(timer), resolve(false)));
  });
  if (live) throw new GavelError(`a gavel server is already listening on ${socket}; stop it first (or pass another --socket)`, "BANK_LOCKED");
  await rm(socket, { force: true });
}

/** A request in flight: its abort switch and its settling. */
interface Flight {
  controller: AbortController;
  done: Promise<void>;
}

/** A running resident router. */
export class ResidentServer {
  readonly listen: string;
  readonly #o: ServeOptions;
  readonly #handlers: Handlers;
  readonly #net: NetServer | HttpServer;
  readonly #flights = new Set<Flight>();
  readonly #conns = new Set<Socket>();
  #stopping: Promise<void> | null = null;
  #token = "";

  private constructor(o: ServeOptions, server: NetServer | HttpServer, listen: string) {
    this.#o = o;
    this.#net = server;
    this.listen = listen;
    this.#handlers = new Handlers(o.router, { pid: process.pid, bank: o.router.bankDir, model: o.modelPath, listen, startedAt: Date.now(), inFlight: () => this.#flights.size });
  }

  /** Starts listening (the socket path must be claimed first: {@link claimSocketPath}). */
  static async start(o: ServeOptions): Promise<ResidentServer> {
    if (o.port !== undefined) return ResidentServer.#startHttp(o);
    const net = createNetServer();
    const server = new ResidentServer(o, net, o.socket);
    net.on("connection", (s) => server.#onSocket(s));
    await new Promise<void>((resolve, reject) => {
      net.once("error", reject);
      // the socket is created 0600: no moment where another user could connect
      const old = process.umask(0o177);
      try {
        net.listen(o.socket, () => resolve());
      } finally {
        process.umask(old);
      }
    });
    await chmod(o.socket, 0o600);
    return server;
  }

  static async #startHttp(o: ServeOptions): Promise<ResidentServer> {
    const http = createHttpServer();
    await new Promise<void>((resolve, reject) => {
      http.once("error", reject);
      http.listen(o.port, "127.0.0.1", () => resolve());
    });
    const addr = http.address();
    const url = `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : o.port}`;
    const server = new ResidentServer(o, http, url);
    server.#token = randomBytes(32).toString("hex");
    http.on("request", (req, res) => void server.#onHttp(req, res));
    http.on("connection", (s) => {
      server.#conns.add(s);
      s.on("close", () => server.#conns.delete(s));
    });
    const file = httpEndpointPath(o.router.bankDir);
    await rm(file, { force: true });
    await writeFile(file, JSON.stringify({ v: PROTOCOL_VERSION, url, token: server.#token, pid: process.pid }) + "\n", { mode: 0o600, flag: "wx" });
    return server;
  }

  /** Runs one request with its own AbortController; `reply` gets its answer unless it was dropped. */
  #dispatch(req: Request, controller: AbortController, reply: (r: Response) => void): Flight {
    const flight: Flight = { controller, done: Promise.resolve() };
    this.#flights.add(flight);
    const { v: _v, id, op, ...params } = req;
    flight.done = (async () => {
      try {
        if (this.#stopping) throw new GavelError("the gavel server is shutting down", "DISPOSED");
        const result = await this.#handlers.run(op as Exclude<Op, "cancel">, params, controller.signal);
        if (controller.signal.aborted) throw new GavelError("the request was cancelled", "ABORTED");
        reply({ v: PROTOCOL_VERSION, id, ok: true, result });
      } catch (err) {
        reply(errorOf(id, controller.signal.aborted && !(err instanceof GavelError && err.code === "ABORTED") ? new GavelError("the request was cancelled", "ABORTED") : err));
      } finally {
        this.#flights.delete(flight);
      }
    })();
    return flight;
  }

  #onSocket(s: Socket): void {
    this.#conns.add(s);
    const mine = new Map<RequestId, AbortController>();
    let buffer = "";
    const send = (r: Response) => {
      if (!s.destroyed && s.writable) s.write(encodeResponse(r));
    };
    s.setEncoding("utf8");
    s.on("data", (d: string) => {
      buffer += d;
      let nl: number;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, nl).trim();
        buffer = buffer.slice(nl + 1);
        if (line) this.#onLine(line, mine, send);
      }
      if (buffer.length > MAX_LINE_BYTES) {
        send(errorOf(null, new GavelError(`a request line is over ${MAX_LINE_BYTES} bytes`, "INVALID_ARGUMENT")));
        s.destroy();
      }
    });
    s.on("error", () => undefined);
    s.on("close", () => {
      this.#conns.delete(s);
      // the client went away: whatever it still waits for is aborted
      for (const c of mine.values()) c.abort();
    });
  }

  /** One line of a socket connection: a request, a cancel, or garbage. */
  #onLine(line: string, mine: Map<RequestId, AbortController>, send: (r: Response) => void): void {
    let msg: unknown;
    try {
      msg = JSON.parse(line);
    } catch {
      return send(errorOf(null, new GavelError("a request line is not JSON", "INVALID_ARGUMENT")));
    }
    const bad = envelopeError(msg);
    const id = (msg as { id?: unknown })?.id;
    const idOrNull = typeof id === "string" || typeof id === "number" ? id : null;
    if (bad) return send(errorOf(idOrNull, new GavelError(bad, "INVALID_ARGUMENT")));
    const req = msg as Request;
    if (req.op === "cancel") {
      mine.get(req.id)?.abort(); // no answer of its own: the cancelled request answers ABORTED
      return;
    }
    if (mine.has(req.id)) return send(errorOf(req.id, new GavelError(`request id ${JSON.stringify(req.id)} is already in flight on this connection`, "INVALID_ARGUMENT")));
    const controller = new AbortController();
    mine.set(req.id, controller);
    this.#dispatch(req, controller, (r) => {
      mine.delete(req.id);
      send(r);
    });
  }

  /** One HTTP exchange: POST /v1 with the bearer token and one request as the body. */
  async #onHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const answer = (status: number, r: Response) => {
      if (res.writableEnded || res.destroyed) return;
      const body = encodeResponse(r);
      res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      res.end(body);
    };
    const given = Buffer.from(String(req.headers.authorization ?? "").replace(/^Bearer /, ""));
    const want = Buffer.from(this.#token);
    if (given.length !== want.length || !timingSafeEqual(given, want)) return answer(401, errorOf(null, new GavelError("missing or wrong bearer token", "INVALID_ARGUMENT")));
    if (req.method !== "POST" || req.url !== "/v1") return answer(404, errorOf(null, new GavelError("POST /v1 is the only endpoint", "INVALID_ARGUMENT")));
    let text = "";
    req.setEncoding("utf8");
    for await (const chunk of req) {
      text += chunk as string;
      if (text.length > MAX_LINE_BYTES) return answer(413, errorOf(null, new GavelError("the request is too large", "INVALID_ARGUMENT")));
    }
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch {
      return answer(400, errorOf(null, new GavelError("the request body is not JSON", "INVALID_ARGUMENT")));
    }
    const bad = envelopeError(msg);
    if (bad) return answer(400, errorOf((msg as { id?: RequestId })?.id ?? null, new GavelError(bad, "INVALID_ARGUMENT")));
    const r = msg as Request;
    if (r.op === "cancel") {
      const c = this.#httpFlights.get(r.id);
      c?.abort();
      return answer(200, { v: PROTOCOL_VERSION, id: r.id, ok: true, result: { cancelled: c !== undefined } });
    }
    if (this.#httpFlights.has(r.id)) return answer(409, errorOf(r.id, new GavelError(`request id ${JSON.stringify(r.id)} is already in flight`, "INVALID_ARGUMENT")));
    const controller = new AbortController();
    this.#httpFlights.set(r.id, controller);
    res.on("close", () => {
      if (!res.writableFinished) controller.abort(); // the client hung up before its answer
    });
    this.#dispatch(r, controller, (out) => {
      this.#httpFlights.delete(r.id);
      answer(200, out);
    });
  }

  readonly #httpFlights = new Map<RequestId, AbortController>();

  /** Requests in flight now. */
  get inFlight(): number {
    return this.#flights.size;
  }

  /**
   * Stops accepting, lets requests in flight finish for `graceMs` (then aborts them), closes the
   * router and the model, removes the socket (or the HTTP endpoint file). Idempotent.
   */
  shutdown(): Promise<void> {
    this.#stopping ??= this.#shutdown();
    return this.#stopping;
  }

  async #shutdown(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#net.close(() => resolve()));
    const settled = () => Promise.allSettled([...this.#flights].map((f) => f.done));
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.#o.graceMs ?? 10_000)));
    await Promise.race([settled(), grace]);
    clearTimeout(timer);
    for (const f of this.#flights) f.controller.abort();
    await settled();
    for (const s of this.#conns) s.destroy();
    await closed;
    try {
      await this.#o.router.close();
    } finally {
      await this.#o.model.dispose();
      if (this.#o.port === undefined) await rm(this.#o.socket, { force: true });
      else await this.#removeEndpointFile();
    }
  }

  async #removeEndpointFile(): Promise<void> {
    const file = httpEndpointPath(this.#o.router.bankDir);
    // only ours: another server may have taken the bank since
    const text = await readFile(file, "utf8").catch(() => "");
    if (text.includes(this.#token)) await rm(file, { force: true });
  }
}
