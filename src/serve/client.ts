/**
 * A client of the resident router (`gavel serve`, docs/SERVE.md): finds the server of a bank, sends
 * requests and matches their answers by id. The CLI and the Claude Code hook use it when a server is
 * running and fall back to loading the model themselves (or, for the hook, to doing nothing).
 *
 * Like protocol.ts it imports only node built-ins, errors.ts, limits.ts (constants), endpoint.ts, http-reply.ts, util/validate.ts
 * and util/linked-signal.ts (which import nothing else), so a process that only talks to the server (the
 * hook) never loads the addon or the model; and of those only node:net and node:fs at once
 * (node:http when the server is an HTTP one): the hook's start is most of its time.
 *
 * @module
 */
import { connect as netConnect, type Socket } from "node:net";
import type { ClientRequest } from "node:http";
import { GavelError, type GavelErrorCode } from "../errors.js";
import { CONTROL_OPS, DEFAULT_LIMITS } from "./limits.js";
import { linkSignals } from "../util/linked-signal.js";
import { abortedError } from "../util/validate.js";
import { MAX_LINE_BYTES, PROTOCOL_VERSION, type Op, type ProgressLine, type RequestId, type Response } from "./protocol.js";
import { readReply } from "./http-reply.js";
import { checkHttpEndpoint, connectFailure, exchangeFailure, isNotRunning, locateEndpoint, isRunningOptions, requestOptions, serverRouteOptions, notRunning, readHttpEndpoint, type Endpoint, type EndpointOptions, type IsRunningOptions, type RequestOptions, type ServerRouteOptions } from "./endpoint.js";

export { findEndpoint, isNotRunning, type Endpoint, type EndpointOptions, type IsRunningOptions, type RequestOptions, type ServerRouteOptions } from "./endpoint.js";


/** An answer's error as a GavelError with the server's code. */
function fromWire(e: { code: string; message: string; option?: unknown }): GavelError {
  return new GavelError(e.message, (e.code || "INTERNAL") as GavelErrorCode, typeof e.option === "string" ? { option: e.option } : undefined);
}

interface Pending {
  resolve(v: unknown): void;
  reject(e: unknown): void;
  progress?: (p: unknown) => void;
}

/** A connection to a resident router. */
export class ServeClient {
  #endpoint: Endpoint;
  #socket: Socket | null;
  #pending = new Map<RequestId, Pending>();
  /**
   * Socket requests written and not yet answered (control ops not counted), and those waiting their
   * turn: a connection holds at most the server's per-connection bound in flight, and the rest wait
   * here in order, so many calls at once are queued rather than answered BUSY.
   */
  #sent = new Set<RequestId>();
  /** Sent requests a cancel has gone out for (close() does not cancel them again). */
  #cancelled = new Set<RequestId>();
  #waiting: { id: RequestId; line: string }[] = [];
  /** HTTP exchanges of requests still waiting: close() drops them, which the server takes as a cancel. */
  #exchanges = new Map<RequestId, ClientRequest>();
  #next = 1;
  /**
   * Over HTTP the server holds one id space for every client (docs/serve-protocol.md, "id"): this
   * client's ids are this random prefix and a count, so two clients never send the same id (each
   * numbered from 1 collided, and a cancel of one's request aborted the other's).
   */
  readonly #idPrefix: string | null;
  #buffer = "";
  #closed = false;

  /** The server closed an idle connection (nothing pending): the next request connects again. */
  #idleClosed = false;
  #reopening: Promise<void> | null = null;

  private constructor(endpoint: Endpoint, socket: Socket | null) {
    this.#endpoint = endpoint;
    this.#socket = socket;
    // (no node:crypto: the hook's start loads what it must only; these ids need to be unique, not secret)
    this.#idPrefix = endpoint.kind === "http" ? `${process.pid.toString(36)}.${Date.now().toString(36)}.${Math.random().toString(36).slice(2, 12)}` : null;
    if (socket) this.#attach(socket);
  }

  /** Where the server was found (over HTTP, the URL and token read last). */
  get endpoint(): Endpoint {
    return this.#endpoint;
  }

  #attach(socket: Socket): void {
    socket.setEncoding("utf8");
    socket.on("data", (d: string) => this.#onData(d));
    socket.on("close", () => {
      if (this.#socket !== socket || this.#closed) return;
      // the server closes connections left idle (docs/serve-protocol.md, "Limits"): not an error then
      if (this.#pending.size === 0) this.#dropConnection();
      else this.#failAll(new GavelError("the gavel server closed the connection", "INTERNAL"));
    });
    socket.on("error", () => undefined); // "close" follows and fails what is pending
  }

  /** The connection is gone and nothing waits on it: the next request connects again. */
  #dropConnection(): void {
    this.#idleClosed = true;
    this.#sent.clear();
    this.#cancelled.clear();
    this.#waiting = [];
  }

  static #connectUnix(path: string): Promise<Socket> {
    return new Promise<Socket>((resolve, reject) => {
      const s = netConnect(path);
      s.once("connect", () => {
        s.removeAllListeners("error");
        resolve(s);
      });
      s.once("error", (err: NodeJS.ErrnoException) => reject(connectFailure(path, err)));
    });
  }

  /**
   * Connects to a located server: a Unix socket is connected now; over HTTP, where each request
   * connects, its port is tried now. FILE_NOT_FOUND when refused (a stale socket or endpoint file).
   */
  static async open(endpoint: Endpoint): Promise<ServeClient> {
    if (endpoint.kind === "http") return (await checkHttpEndpoint(endpoint), new ServeClient(endpoint, null));
    return new ServeClient(endpoint, await ServeClient.#connectUnix(endpoint.path));
  }

  /** A new connection after the server closed an idle one. */
  #reopen(): Promise<void> {
    this.#reopening ??= ServeClient.#connectUnix((this.#endpoint as Extract<Endpoint, { kind: "unix" }>).path).then(
      (s) => {
        this.#buffer = "";
        this.#socket = s;
        this.#idleClosed = false;
        this.#reopening = null;
        this.#attach(s);
      },
      (err: unknown) => {
        this.#reopening = null;
        throw err;
      },
    );
    return this.#reopening;
  }

  #onData(d: string): void {
    this.#buffer += d;
    let nl: number;
    while ((nl = this.#buffer.indexOf("\n")) >= 0) {
      const line = this.#buffer.slice(0, nl);
      this.#buffer = this.#buffer.slice(nl + 1);
      if (!line.trim()) continue;
      let msg: Response | ProgressLine;
      try {
        msg = JSON.parse(line) as Response | ProgressLine;
        if (typeof msg !== "object" || msg === null || Array.isArray(msg)) throw new Error("not an object");
      } catch {
        // not the gavel protocol: what waits fails, typed, and the connection is dropped
        const e = this.#endpoint;
        this.#failAll(new GavelError(`the server at ${e.kind === "unix" ? e.path : e.url} answered a line that is not a gavel answer`, "INTERNAL"));
        this.#socket?.destroy();
        return;
      }
      if ("progress" in msg && !("ok" in msg)) this.#progress(msg.id, msg.progress);
      else this.#settle(msg as Response);
    }
  }

  /** A progress line to its request's listener. */
  #progress(id: RequestId, progress: unknown): void {
    try {
      this.#pending.get(id)?.progress?.(progress);
    } catch {
      // a caller's display failing never fails the request
    }
  }

  #settle(r: Response): void {
    // a refusal of a line the server could not read (over its size bound, or not finished in time):
    // it closes the connection and aborts what runs on it, so what waits fails now with the server's
    // words, and the next request connects again (this client sends only lines with an id, so an
    // answer without one is such a refusal)
    if (r.id === null && !r.ok) return this.#refused(fromWire(r.error));
    this.#answered(r.id);
    const p = r.id === null ? undefined : this.#pending.get(r.id);
    if (!p) return; // an answer to a request this side already gave up on
    this.#pending.delete(r.id!);
    if (r.ok) p.resolve(r.result);
    else p.reject(fromWire(r.error));
  }

  #refused(err: Error): void {
    for (const p of this.#pending.values()) p.reject(err);
    this.#pending.clear();
    this.#dropConnection();
    this.#socket?.destroy();
  }

  #failAll(err: Error): void {
    this.#closed = true;
    this.#sent.clear();
    this.#cancelled.clear();
    this.#waiting = [];
    for (const p of this.#pending.values()) p.reject(err);
    this.#pending.clear();
  }

  /**
   * Sends one request and resolves with its result (rejects with the server's error). A request
   * whose parameters JSON cannot carry, or over the 4 MiB a server reads, rejects with
   * `INVALID_ARGUMENT` before anything is sent.
   */
  request<T = unknown>(op: Exclude<Op, "cancel">, params: Record<string, unknown> = {}, options: RequestOptions = {}): Promise<T> {
    try {
      requestOptions(options); // by key and value, before anything is sent
    } catch (err) {
      return Promise.reject(err);
    }
    if (this.#closed) return Promise.reject(new GavelError("this connection to the gavel server is closed", "DISPOSED"));
    if (this.#idleClosed || this.#reopening) return this.#reopen().then(() => this.request<T>(op, params, options));
    const n = this.#next++;
    const id: RequestId = this.#idPrefix === null ? n : `${this.#idPrefix}-${n}`;
    const msg = { ...params, ...(options.onProgress ? { progress: true } : {}), v: PROTOCOL_VERSION, id, op };
    // encoded before anything is registered: parameters JSON cannot carry (a BigInt, a cycle) or a line
    // over the server's bound fail this request alone, typed (the server closes a connection on a line
    // over its bound, failing every request on it)
    let line: string;
    try {
      line = JSON.stringify(msg) + "\n";
    } catch (err) {
      return Promise.reject(new GavelError(`the ${op} request's parameters cannot be sent as JSON: ${(err as Error).message}`, "INVALID_ARGUMENT"));
    }
    const bytes = Buffer.byteLength(line);
    if (bytes > MAX_LINE_BYTES) return Promise.reject(new GavelError(`the ${op} request is ${bytes} bytes, over the ${MAX_LINE_BYTES} bytes a gavel server reads in one request; send the part that matters`, "INVALID_ARGUMENT"));
    return new Promise<T>((resolve, reject) => {
      // the caller's signal (often long-lived: one for many requests) and the timeout's, unlinked when
      // the request settles (linked-signal.ts: AbortSignal.any would leave a record on it per request)
      const linked = linkSignals([options.signal, options.timeoutMs !== undefined ? AbortSignal.timeout(options.timeoutMs) : undefined]);
      const signal = linked.signal;
      const verb = `ServeClient.request(${op})`;
      if (signal?.aborted) return reject(abortedError(verb, signal));
      const onAbort = () => {
        const queued = this.#waiting.findIndex((w) => w.id === id);
        if (queued >= 0) this.#waiting.splice(queued, 1); // never sent: nothing to cancel, no answer to wait for
        else if (options.settleOnAbort && this.#pending.has(id)) return this.#cancel(id);
        if (!this.#pending.delete(id)) return;
        if (queued < 0) this.#cancel(id);
        reject(abortedError(verb, signal));
      };
      const done = (f: (v: never) => void) => (v: unknown) => {
        signal?.removeEventListener("abort", onAbort);
        linked.dispose();
        f(v as never);
      };
      this.#pending.set(id, { resolve: done(resolve), reject: done(reject), progress: options.onProgress });
      signal?.addEventListener("abort", onAbort, { once: true });
      if (this.#socket) this.#write(id, line, CONTROL_OPS.has(op));
      else this.#exchange(id, line).catch((err: unknown) => this.#rejectOwn(id, err));
    });
  }

  /** Rejects request `id` when it still waits (it is forgotten either way). */
  #rejectOwn(id: RequestId, err: unknown): void {
    const p = this.#pending.get(id);
    if (!p) return;
    this.#pending.delete(id);
    p.reject(err);
  }

  /**
   * Request `id` over HTTP, settled by its own reply whatever id the reply carries: the server answers
   * a request it refused before reading its id (401, 404, 413) with `"id": null`. A refused token is
   * read again from the endpoint file once (a server restarted on the same port has a new one) and
   * the request sent again: a refused request ran nothing.
   */
  async #exchange(id: RequestId, body: string): Promise<void> {
    const onProgress = (p: unknown) => this.#progress(id, p);
    let { status, answer } = await this.#post(body, onProgress, id);
    if (status === 401 && this.#pending.has(id) && (await this.#reloadToken())) ({ status, answer } = await this.#post(body, onProgress, id));
    if (answer.id === id) return this.#settle(answer);
    this.#rejectOwn(id, answer.ok ? new GavelError(`the gavel server answered HTTP ${status} for another request (id ${JSON.stringify(answer.id)})`, "INTERNAL") : fromWire(answer.error));
  }

  /** Reads the HTTP endpoint file again: true when it now names another URL or token. */
  async #reloadToken(): Promise<boolean> {
    const e = this.#endpoint;
    if (e.kind !== "http" || e.file === undefined) return false;
    const fresh = await readHttpEndpoint(e.file);
    if (fresh?.kind !== "http" || (fresh.token === e.token && fresh.url === e.url)) return false;
    this.#endpoint = fresh;
    return true;
  }

  /** Writes a request line now, or queues it while the connection holds its bound in flight. */
  #write(id: RequestId, line: string, control: boolean): void {
    if (control) return void this.#socket!.write(line);
    if (this.#sent.size >= DEFAULT_LIMITS.maxInFlightPerConnection) return void this.#waiting.push({ id, line });
    this.#sent.add(id);
    this.#socket!.write(line);
  }

  /** An answer came for `id`: the next waiting request goes out. */
  #answered(id: RequestId | null): void {
    if (id === null || !this.#sent.delete(id)) return;
    this.#cancelled.delete(id);
    const next = this.#waiting.shift();
    if (next && this.#socket && !this.#closed) this.#write(next.id, next.line, false);
  }

  #cancel(id: RequestId): void {
    const msg = { v: PROTOCOL_VERSION, id, op: "cancel" };
    if (this.#sent.has(id)) this.#cancelled.add(id);
    if (this.#socket && !this.#closed) this.#socket.write(JSON.stringify(msg) + "\n");
    else if (!this.#socket) this.#post(JSON.stringify(msg), () => undefined).catch(() => undefined);
  }

  /**
   * One HTTP exchange with the bearer token (of request `id`: dropped by close() while it waits). The
   * reply is one answer, or (a write asking for progress) NDJSON: progress lines, each to `onProgress`,
   * then the answer (serve/http-reply.ts). A reply cut short is INTERNAL.
   */
  async #post(body: string, onProgress: (p: unknown) => void, id?: RequestId): Promise<{ status: number; answer: Response }> {
    const e = this.#endpoint as Extract<Endpoint, { kind: "http" }>;
    const { request: httpRequest } = await import("node:http"); // loaded by an HTTP client only
    if (id !== undefined && !this.#pending.has(id)) throw new GavelError("the connection was closed", "DISPOSED"); // closed (or given up on) meanwhile: nothing is sent
    return new Promise((resolve, reject) => {
      const req = httpRequest(`${e.url}/v1`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${e.token}`, "content-length": Buffer.byteLength(body) } }, (res) => {
        readReply(res, onProgress).then(resolve, reject);
      });
      if (id !== undefined) {
        this.#exchanges.set(id, req);
        req.once("close", () => this.#exchanges.get(id) === req && this.#exchanges.delete(id));
      }
      let connected = false;
      req.once("socket", (s) => s.once("connect", () => (connected = true)));
      req.on("error", (err: NodeJS.ErrnoException) => reject(exchangeFailure(e.url, err, connected || req.reusedSocket))); // (a kept-alive socket comes connected)
      req.end(body);
    });
  }

  /**
   * Closes the connection; requests still pending reject (DISPOSED), and are cancelled on the server
   * (which answers a client that only stops sending, so it would otherwise run them to the end): over
   * the socket a `cancel` for each, over HTTP each one's exchange is dropped, which aborts it there.
   */
  close(): void {
    if (this.#socket && !this.#closed) for (const id of this.#sent) if (!this.#cancelled.has(id)) this.#cancel(id);
    if (this.#socket) this.#socket.end();
    for (const req of this.#exchanges.values()) req.destroy();
    this.#exchanges.clear();
    this.#failAll(new GavelError("the connection was closed", "DISPOSED"));
  }
}

/** Connects to the server of a bank (or socket); FILE_NOT_FOUND when none is running (or only a stale socket or endpoint file is left). */
export async function connect(options: EndpointOptions = {}): Promise<ServeClient> {
  const endpoint = await locateEndpoint(options, "connect options");
  if (!endpoint) throw notRunning(options.socket ?? `the bank ${options.bank ?? "(default)"}`);
  return ServeClient.open(endpoint);
}

/** Connects when a server is running, else null (a stale socket or `serve.http.json`, one whose server was killed, counts as none). */
export async function connectIfRunning(options: EndpointOptions = {}): Promise<ServeClient | null> {
  const endpoint = await locateEndpoint(options, "connectIfRunning options");
  if (!endpoint) return null;
  try {
    return await ServeClient.open(endpoint);
  } catch {
    return null;
  }
}

/** One request on a fresh connection, closed after. */
export async function request<T = unknown>(options: EndpointOptions, op: Exclude<Op, "cancel">, params: Record<string, unknown> = {}, ro: RequestOptions = {}): Promise<T> {
  requestOptions(ro); // before connecting (which checks `options`): refused whether a server runs or not
  const client = await connect(options);
  try {
    return await client.request<T>(op, params, ro);
  } finally {
    client.close();
  }
}

/**
 * Whether a server answers for this bank (a ping within `timeoutMs`, default 1 s). Takes the bank
 * directory as a string (`isRunning(".gavel/bank", { timeoutMs })`) or every option in one object, as
 * `connect` does (`isRunning({ bank: ".gavel/bank", timeoutMs })`).
 *
 * @throws GavelError `INVALID_ARGUMENT` when `bank` is neither a string nor an options object
 */
export async function isRunning(bank?: string | IsRunningOptions, options: Omit<IsRunningOptions, "bank"> = {}): Promise<boolean> {
  const o = isRunningOptions(bank, options);
  const client = await connectIfRunning({ bank: o.bank, socket: o.socket });
  if (!client) return false;
  try {
    await client.request("ping", {}, { timeoutMs: o.timeoutMs ?? 1000 });
    return true;
  } catch {
    return false;
  } finally {
    client.close();
  }
}


/**
 * Routes through the bank's resident router when one is running; null when none is (the caller then
 * opens the model itself). The result is the server's `route` result: `Router.route`'s, with NaN read-outs
 * as null, plus `winner` (what a host needs to load the chosen skill).
 */
export async function routeViaServerIfRunning<T = Record<string, unknown>>(task: string, options: ServerRouteOptions = {}): Promise<T | null> {
  const o = serverRouteOptions(options);
  const client = await connectIfRunning({ bank: o.bank, socket: o.socket });
  if (!client) return null;
  try {
    const { bank: _b, socket: _s, signal, ...params } = options;
    return await client.request<T>("route", { task, ...params }, { signal });
  } catch (err) {
    if (isNotRunning(err)) return null; // gone since it was found: nothing was routed
    throw err;
  } finally {
    client.close();
  }
}
