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
 * router and the model and removes the socket. Every connection and request is bounded (limits.ts:
 * connections, idle and slow clients, sizes, requests in flight, unread answers, the task budget).
 *
 * @module
 */
import type { Server as NetServer, Socket } from "node:net";
import type { IncomingMessage, Server as HttpServer, ServerResponse } from "node:http";
import { randomBytes, timingSafeEqual } from "node:crypto";
import { chmod, rm } from "node:fs/promises";
import { readRegularFile } from "../util/regular-file.js";
import { GavelError, MESSAGE_CHARS, clip, optionField } from "../errors.js";
import { Handlers } from "./handlers.js";
import { requestCancelled } from "./batch-queue.js";
import { watcherFor, type SkillWatcher } from "./watch.js";
import { CONTROL_OPS, DISCARD_FACTOR, discardBody, readBody, type ServeLimits } from "./limits.js";
import { checkServeOptions, closeListener, listenHttp, listenUnix, startupError, writeEndpointFile, type ServeOptions } from "./listen.js";
import { removeStartMarker } from "./start.js";
import { attachSchedulers, type Schedulers } from "./schedulers.js";
import { ndjsonReply } from "./ndjson.js";
import { envelopeError, encodeResponse, httpEndpointPath, PROTOCOL_VERSION, type Op, type ProgressLine, type Request, type RequestId, type Response, PROGRESS_OPS, WRITE_OPS } from "./protocol.js";

export { DEFAULT_LIMITS, type ServeLimits } from "./limits.js";
export { claimSocketPath } from "./socket-claim.js";
export type { ServeOptions } from "./listen.js";

/**
 * The answer to a failure, as the wire carries it (a message cut at MESSAGE_CHARS, as a GavelError's
 * is), with the option it refuses (`GavelError.option`) where it refuses one.
 */
function errorOf(id: RequestId | null, err: unknown): Response {
  const code = err instanceof GavelError ? err.code : "INTERNAL";
  const message = clip(err instanceof Error ? err.message : String(err), MESSAGE_CHARS);
  return { v: PROTOCOL_VERSION, id, ok: false, error: { code, message, ...(err instanceof GavelError ? optionField(err) : {}) } };
}

/** A request in flight: its abort switch and its settling. */
interface Flight {
  controller: AbortController;
  done: Promise<void>;
}

// Router.warm once listening (over a large library, the key IVF's int8 codes); a route reports a failure.
const warmSoon = (r: unknown): void => void (r as { warm?: () => Promise<unknown> }).warm?.().catch(() => undefined);
/** A running resident router. */
export class ResidentServer {
  readonly listen: string;
  readonly #o: ServeOptions;
  readonly #handlers: Handlers;
  readonly #net: NetServer | HttpServer;
  readonly #flights = new Set<Flight>();
  /** Flights of ops other than control ops (ping, status): what the bounds and `status.inFlight` count. */
  #working = 0;
  readonly #conns = new Set<Socket>();
  readonly #limits: ServeLimits;
  #stopping: Promise<void> | null = null;
  readonly #batching: Schedulers;
  #token = "";
  /** When a connection or a request last ended (or the server started). */
  #lastActive = Date.now();
  #idleTimer: NodeJS.Timeout | null = null;

  private constructor(o: ServeOptions, server: NetServer | HttpServer, listen: string, limits: ServeLimits) {
    this.#o = o;
    this.#limits = limits;
    this.#net = server;
    this.listen = listen;
    // the options were checked before listening (listen.ts): nothing here throws on them
    this.#watcher = o.watch ? watcherFor(o.router, o.watch, o.onWatch, o.optionNames) : null;
    // the model work and glances of concurrent requests batched (docs/SERVE.md, "Concurrency")
    this.#batching = attachSchedulers(o.model, o.router, this.#limits);
    this.#handlers = new Handlers(o.router, { pid: process.pid, bank: o.router.bankDir, model: o.modelPath, listen, startedAt: Date.now(), inFlight: () => this.#working, maxTaskTokens: this.#limits.maxTaskTokens }, o.optionNames);
    if (o.idleExitMs !== undefined && o.onIdle) this.#watchIdle(o.idleExitMs, o.onIdle);
  }

  /** The skill folder watcher (ServeOptions.watch), when on. */
  readonly #watcher: SkillWatcher | null;

  /** The folders watched now (ServeOptions.watch); empty when not watching. */
  get watchedFolders(): string[] {
    return this.#watcher?.folders ?? [];
  }

  /**
   * Starts listening (the socket path must be claimed first: claimSocketPath). The options are
   * checked before anything listens (INVALID_ARGUMENT); a step that fails after it (the socket's mode,
   * the HTTP endpoint file) closes the listener and detaches everything again before the start
   * rejects, typed (PERMISSION_DENIED, NO_SPACE, FILE_NOT_FOUND, ...): the router and the model stay
   * the caller's, and nothing of the server is left running.
   */
  static async start(o: ServeOptions): Promise<ResidentServer> {
    const limits = checkServeOptions(o);
    const http = o.port !== undefined;
    const net = http ? await listenHttp(o.port!, limits) : await listenUnix(o.socket, limits);
    let server: ResidentServer | undefined;
    try {
      const addr = net.address();
      server = new ResidentServer(o, net, http ? `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : o.port}` : o.socket, limits);
      await (http ? server.#serveHttp(net as HttpServer) : server.#serveUnix(net));
      await server.#watcher?.started; // the folders watched (set up a slice at a time, requests served meanwhile)
    } catch (err) {
      await (server ? server.#abandon() : closeListener(net));
      throw startupError(err, `start on ${http ? `127.0.0.1:${o.port}` : clip(o.socket)}`);
    }
    warmSoon(o.router);
    return server;
  }

  async #serveUnix(net: NetServer): Promise<void> {
    net.on("connection", (s) => this.#onSocket(s));
    try {
      await chmod(this.#o.socket, 0o600);
    } catch (err) {
      throw startupError(err, `make the socket ${clip(this.#o.socket)} private (mode 0600)`);
    }
    await removeStartMarker(this.#o.socket);
  }

  async #serveHttp(http: HttpServer): Promise<void> {
    const limits = this.#limits;
    this.#token = randomBytes(32).toString("hex");
    http.on("request", (req, res) => {
      // whatever goes wrong with one exchange ends that exchange, never the process
      this.#onHttp(req, res).catch(() => res.destroy());
    });
    http.on("clientError", (_err, s: Socket) => s.destroy());
    http.on("connection", (s: Socket) => {
      this.#conns.add(s);
      s.on("close", () => this.#conns.delete(s));
    });
    // no traffic for idleMs: closed unless it waits for an answer (a long route is not idleness);
    // node arms this on every connection and re-arms it on traffic
    http.setTimeout(limits.idleMs, (s: Socket) => (this.#httpBusy.has(s) ? s.setTimeout(limits.idleMs) : s.destroy()));
    await writeEndpointFile(httpEndpointPath(this.#o.router.bankDir), JSON.stringify({ v: PROTOCOL_VERSION, url: this.listen, token: this.#token, pid: process.pid }) + "\n");
  }

  /** Undoes a start that failed after listening: the listener closed, the watcher, the idle timer and the schedulers gone. */
  async #abandon(): Promise<void> {
    this.#stopping ??= Promise.resolve();
    if (this.#idleTimer) clearInterval(this.#idleTimer);
    await this.#watcher?.close();
    for (const s of this.#conns) s.destroy();
    await closeListener(this.#net);
    this.#batching.detachGlances();
    this.#batching.detachModel();
  }

  /** Runs one request with its own AbortController; `reply` gets its answer, `progress` a write's progress lines (when the request asks for them). */
  #dispatch(req: Request, controller: AbortController, reply: (r: Response) => void, progress?: (line: ProgressLine) => void): Flight {
    const control = CONTROL_OPS.has(req.op);
    const flight: Flight = { controller, done: Promise.resolve() };
    this.#flights.add(flight);
    if (!control) this.#working++;
    const { v: _v, id, op, ...params } = req;
    const sink = progress && params.progress === true ? (p: unknown) => progress({ v: PROTOCOL_VERSION, id, progress: p }) : undefined;
    flight.done = (async () => {
      try {
        if (this.#stopping) throw new GavelError("the gavel server is shutting down", "DISPOSED");
        const result = await this.#handlers.run(op as Exclude<Op, "cancel">, params, controller.signal, sink).finally(() => (WRITE_OPS.has(op) ? this.#watcher?.refreshAhead() : undefined)); // the skills a write added are watched (before the reply) too
        if (controller.signal.aborted) throw requestCancelled();
        reply({ v: PROTOCOL_VERSION, id, ok: true, result });
      } catch (err) {
        reply(errorOf(id, controller.signal.aborted && !(err instanceof GavelError && err.code === "ABORTED") ? requestCancelled() : err));
      } finally {
        this.#flights.delete(flight);
        if (!control) this.#working--;
      }
    })();
    return flight;
  }

  /** BUSY when the server holds as many requests as it takes (control ops never are). */
  #overServerBound(op: string): GavelError | null {
    if (CONTROL_OPS.has(op) || this.#working < this.#limits.maxInFlight) return null;
    return new GavelError(`the gavel server has ${this.#working} requests in flight, its bound; try again later`, "BUSY");
  }

  #onSocket(s: Socket): void {
    const limits = this.#limits;
    this.#conns.add(s);
    const mine = new Map<RequestId, AbortController>();
    // the line being read: its chunks (bytes, split only at "\n") and when its first byte came
    let parts: Buffer[] = [];
    let partBytes = 0;
    let lineTimer: NodeJS.Timeout | null = null;
    const send = (r: Response | ProgressLine) => {
      if (s.destroyed || !s.writable) return;
      s.write(JSON.stringify(r) + "\n");
      // a client that sends but never reads: its answers would pile up here without end
      if (s.writableLength > limits.maxOutputBytes) s.destroy();
    };
    const refuse = (message: string) => {
      send(errorOf(null, new GavelError(message, "INVALID_ARGUMENT")));
      s.end();
      s.destroySoon();
      parts = [];
      partBytes = 0;
    };
    const armLineTimer = () => {
      if (partBytes === 0 || lineTimer) return;
      lineTimer = setTimeout(() => refuse(`a request line was not finished within ${limits.requestMs} ms`), limits.requestMs);
      lineTimer.unref();
    };
    const clearLineTimer = () => {
      if (lineTimer) clearTimeout(lineTimer);
      lineTimer = null;
    };
    // no traffic for idleMs and nothing in flight: a forgotten or half-open connection
    // (a fired timer is not re-armed by later traffic: re-arm it while requests are in flight)
    s.on("timeout", () => (mine.size === 0 ? s.destroy() : s.setTimeout(limits.idleMs)));
    s.setTimeout(limits.idleMs);
    s.on("data", (chunk: Buffer) => {
      if (s.destroyed || s.writableEnded) return;
      let start = 0;
      let nl: number;
      let ended = false;
      while ((nl = chunk.indexOf(0x0a, start)) >= 0) {
        const tail = chunk.subarray(start, nl);
        const bytes = partBytes + tail.length;
        const line = (partBytes === 0 ? tail : Buffer.concat([...parts, tail], bytes)).toString("utf8").trim();
        parts = [];
        partBytes = 0;
        start = nl + 1;
        ended = true;
        if (bytes > limits.maxRequestBytes) return refuse(`a request line is over ${limits.maxRequestBytes} bytes`);
        if (line) this.#onLine(line, mine, send, s);
        if (s.destroyed) return;
      }
      if (start < chunk.length) {
        parts.push(chunk.subarray(start));
        partBytes += chunk.length - start;
        if (partBytes > limits.maxRequestBytes) return refuse(`a request line is over ${limits.maxRequestBytes} bytes`);
      }
      if (ended) clearLineTimer(); // a new line starts its own clock
      armLineTimer();
    });
    // the client's last byte: a line without its "\n" is still a request; the server ends once all are answered
    s.on("end", () => {
      if (s.destroyed) return;
      clearLineTimer();
      const line = partBytes > 0 ? Buffer.concat(parts, partBytes).toString("utf8").trim() : "";
      [parts, partBytes] = [[], 0];
      if (line) this.#onLine(line, mine, send, s);
      if (mine.size === 0) s.end();
    });
    s.on("error", () => undefined);
    s.on("close", () => {
      clearLineTimer();
      this.#conns.delete(s);
      // the client went away: whatever it still waits for is aborted
      for (const c of mine.values()) c.abort();
    });
  }

  /** The controllers of control ops (ping, status) in flight on socket connections: not counted against a connection's bound. */
  readonly #controlCalls = new WeakSet<AbortController>();

  /** One line of a socket connection: a request, a cancel, or garbage. */
  #onLine(line: string, mine: Map<RequestId, AbortController>, send: (r: Response | ProgressLine) => void, s: Socket): void {
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
    if (mine.has(req.id)) return send(errorOf(req.id, new GavelError(`request id ${JSON.stringify(typeof req.id === "string" ? clip(req.id) : req.id)} is already in flight on this connection`, "INVALID_ARGUMENT")));
    const control = CONTROL_OPS.has(req.op);
    if (!control) {
      let working = 0; // the control ops (ping, status) in flight are not counted
      for (const c of mine.values()) if (!this.#controlCalls.has(c)) working++;
      if (working >= this.#limits.maxInFlightPerConnection) {
        return send(errorOf(req.id, new GavelError(`this connection has ${working} requests in flight, its bound; wait for an answer first`, "BUSY")));
      }
    }
    const busy = this.#overServerBound(req.op);
    if (busy) return send(errorOf(req.id, busy));
    const controller = new AbortController();
    if (control) this.#controlCalls.add(controller);
    mine.set(req.id, controller);
    this.#dispatch(
      req,
      controller,
      (r) => {
        mine.delete(req.id);
        send(r);
        if (s.readableEnded && mine.size === 0 && !s.writableEnded) s.end(); // a half-closed client's last answer
      },
      send,
    );
  }

  /** One HTTP exchange: POST /v1 with the bearer token and one request as the body. */
  async #onHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const sock = req.socket;
    this.#httpBusy.add(sock);
    res.once("close", () => this.#httpBusy.delete(sock));
    const answer = (status: number, r: Response, close = false) => {
      if (res.writableEnded || res.destroyed) return;
      const body = encodeResponse(r);
      res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...(close ? { connection: "close" } : {}) });
      res.end(body);
    };
    const tooLarge = () => answer(413, errorOf(null, new GavelError(`the request is over ${this.#limits.maxRequestBytes} bytes`, "INVALID_ARGUMENT")), true);
    // the Bearer scheme, its name in any case (RFC 7235); a token without it is refused
    const given = Buffer.from(/^bearer +(\S+)$/i.exec(String(req.headers.authorization ?? ""))?.[1] ?? "");
    const want = Buffer.from(this.#token);
    if (given.length !== want.length || !timingSafeEqual(given, want)) return answer(401, errorOf(null, new GavelError("missing or wrong bearer token", "INVALID_ARGUMENT")), true);
    if (req.method !== "POST" || req.url !== "/v1") return answer(404, errorOf(null, new GavelError("POST /v1 is the only endpoint", "INVALID_ARGUMENT")), true);
    const max = this.#limits.maxRequestBytes;
    const declared = Number(req.headers["content-length"] ?? 0);
    // a body over the bound is read and discarded (up to DISCARD_FACTOR times the bound), then refused:
    // closed while it still arrives, the client's writes would fail before it reads the 413
    if (declared > max * DISCARD_FACTOR) return tooLarge(); // refused before a byte of it is read
    const body = declared > max ? "too-large" : await readBody(req, max);
    if (body === null) return void res.destroy(); // the client went away mid-body
    if (body === "too-large") return void discardBody(req, max * DISCARD_FACTOR - (declared > max ? 0 : max)).then(tooLarge);
    let msg: unknown;
    try {
      msg = JSON.parse(body.toString("utf8"));
    } catch {
      return answer(400, errorOf(null, new GavelError("the request body is not JSON", "INVALID_ARGUMENT")));
    }
    const bad = envelopeError(msg);
    const id = (msg as { id?: unknown })?.id;
    if (bad) return answer(400, errorOf(typeof id === "string" || typeof id === "number" ? id : null, new GavelError(bad, "INVALID_ARGUMENT")));
    const r = msg as Request;
    if (r.op === "cancel") {
      const c = this.#httpFlights.get(r.id);
      c?.abort();
      return answer(200, { v: PROTOCOL_VERSION, id: r.id, ok: true, result: { cancelled: c !== undefined } });
    }
    if (this.#httpFlights.has(r.id)) return answer(409, errorOf(r.id, new GavelError(`request id ${JSON.stringify(typeof r.id === "string" ? clip(r.id) : r.id)} is already in flight`, "INVALID_ARGUMENT")));
    const busy = this.#overServerBound(r.op);
    if (busy) return answer(503, errorOf(r.id, busy));
    const controller = new AbortController();
    this.#httpFlights.set(r.id, controller);
    res.on("close", () => {
      if (!res.writableFinished) controller.abort(); // the client hung up before its answer
    });
    // a write asking for progress is answered as NDJSON: its progress lines as they come, the answer last
    const stream = r.progress === true && PROGRESS_OPS.has(r.op) ? ndjsonReply(res, this.#limits.maxOutputBytes) : null;
    this.#dispatch(
      r,
      controller,
      (out) => {
        this.#httpFlights.delete(r.id);
        if (stream) stream.end(out);
        else answer(200, out);
      },
      stream?.line,
    );
  }

  /** HTTP connections with an exchange under way (never closed as idle). */
  readonly #httpBusy = new Set<Socket>();
  readonly #httpFlights = new Map<RequestId, AbortController>();

  #watchIdle(ms: number, onIdle: () => void): void {
    this.#idleTimer = setInterval(() => {
      if (this.#conns.size > 0 || this.#flights.size > 0) this.#lastActive = Date.now();
      else if (Date.now() - this.#lastActive >= ms) {
        clearInterval(this.#idleTimer!);
        this.#idleTimer = null;
        onIdle();
      }
    }, Math.max(20, Math.min(1000, Math.floor(ms / 4))));
    this.#idleTimer.unref();
  }

  /** Connections open now. */
  get connections(): number {
    return this.#conns.size;
  }

  /** Requests in flight now, control ops (ping, status) not counted. */
  get inFlight(): number {
    return this.#working;
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
    if (this.#idleTimer) clearInterval(this.#idleTimer);
    await this.#watcher?.close();
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
    this.#batching.detachGlances();
    try {
      await this.#o.router.close();
    } finally {
      this.#batching.detachModel();
      await this.#o.model.dispose();
      if (this.#o.port === undefined) {
        await rm(this.#o.socket, { force: true });
        await removeStartMarker(this.#o.socket);
      } else await this.#removeEndpointFile();
    }
  }

  async #removeEndpointFile(): Promise<void> {
    const file = httpEndpointPath(this.#o.router.bankDir);
    // only ours: another server may have taken the bank since
    const text = await readRegularFile(file, 64 * 1024).then((b) => b.toString("utf8"), () => "");
    if (text.includes(this.#token)) await rm(file, { force: true });
  }
}
