/**
 * Where the resident router of a bank listens (docs/serve-protocol.md, "Transports"): its socket, or
 * the HTTP endpoint its `serve.http.json` names. Imports only node built-ins (never
 * node:fs/promises), errors.ts, util/ and protocol.ts, as client.ts.
 *
 * @module
 */
import { lstat, readFile, type Stats } from "node:fs";
import { connect as netConnect } from "node:net";
import { GavelError, clip } from "../errors.js";
import { pidState } from "../util/pid.js";
import { readTextOrNull, removeIfUnchanged } from "../util/stale-file.js";
import { boolOption, checkInt, functionOption, optionsObject, pathOption, signalOption } from "../util/validate.js";
import { defaultSocketPath, httpEndpointPath, resolveBankDir, socketPathProblem, type HttpEndpoint } from "./protocol.js";

/** Where to find a server: a bank (its default socket, else its HTTP endpoint file), or a socket path. */
export interface EndpointOptions {
  /** The bank directory, a non-empty path (default: $GAVEL_BANK, else .gavel/bank). */
  bank?: string;
  /** An explicit socket path, non-empty (default: the bank's, see `defaultSocketPath`). */
  socket?: string;
}

/** Every key of {@link EndpointOptions}. */
export const ENDPOINT_KEYS: Readonly<Record<keyof EndpointOptions, true>> = { bank: true, socket: true };

/**
 * `value` as endpoint options, checked by key (`known`: the keys of the caller's options type, a
 * superset of {@link ENDPOINT_KEYS}) and `bank`, `socket` by value, before anything is read or connected.
 *
 * @throws GavelError `INVALID_ARGUMENT` naming the option
 */
export function endpointOptions(value: unknown, what: string, known: Readonly<Record<string, true>> = ENDPOINT_KEYS): Record<string, unknown> & EndpointOptions {
  const o = optionsObject(value, what, known);
  pathOption(o.bank, "bank");
  pathOption(o.socket, "socket");
  // a longer path would be cut short by the kernel and could reach another socket
  const problem = typeof o.socket === "string" ? socketPathProblem(o.socket) : null;
  if (problem) throw new GavelError(`${what}: socket ${clip(o.socket as string)} cannot be used: ${problem}`, "INVALID_ARGUMENT");
  return o;
}

/** Options of `isRunning`: where the server is, and how long its ping may take. */
export interface IsRunningOptions extends EndpointOptions {
  /** Most milliseconds the ping may take: an integer from 1 to 2^31 − 1 (default 1000). */
  timeoutMs?: number;
}

/** Options of one request. */
export interface RequestOptions {
  /** Aborts the request: the client sends a cancel and rejects with ABORTED. */
  signal?: AbortSignal;
  /** Rejects with ABORTED after this many milliseconds, an integer from 1 to 2^31 − 1 (and cancels it on the server). */
  timeoutMs?: number;
  /**
   * A write's progress (install, sync: `{done, total, skill, status}`), as the server streams it
   * before the answer: lines on the socket, or an NDJSON reply over HTTP.
   */
  onProgress?: (p: unknown) => void;
  /**
   * On abort, send the cancel and wait for the server's own answer (ABORTED, or the result when the
   * work had already finished) instead of rejecting at once: a write then settles on the server
   * (its committed part kept, as Ctrl-C leaves a local install) before the caller goes on.
   */
  settleOnAbort?: boolean;
}

/** Options of `routeViaServerIfRunning`: the route's own and where the server is. */
export interface ServerRouteOptions extends EndpointOptions {
  abstain?: boolean;
  /** As `RouteOptions.libraryCut` (the server's own default when absent). */
  libraryCut?: boolean;
  verdict?: boolean;
  explain?: boolean;
  lexical?: boolean;
  signal?: AbortSignal;
}

/** A located server. */
export type Endpoint = { kind: "unix"; path: string } | { kind: "http"; url: string; token: string; /** The endpoint file it was read from (read again when the token is refused). */ file?: string };

/** The errors {@link notRunning} made: "no server there", never a server's own FILE_NOT_FOUND answer. */
const NOT_RUNNING = new WeakSet<Error>();

export function notRunning(where: string): GavelError {
  const err = new GavelError(`no gavel server is running at ${clip(where)} (start one with \`gavel serve\`)`, "FILE_NOT_FOUND");
  NOT_RUNNING.add(err);
  return err;
}

/**
 * A connection to a server's socket or port that failed: refused (or no socket there) is no server
 * running (FILE_NOT_FOUND, {@link notRunning}); a socket whose server does not take connections now
 * (EAGAIN: its queue of connections is full, a live server busy) is BUSY; one this user may not
 * connect to is PERMISSION_DENIED; anything else INTERNAL, its system code named.
 */
export function connectFailure(where: string, err: NodeJS.ErrnoException): GavelError {
  if (err.code === "ECONNREFUSED" || err.code === "ENOENT") return notRunning(where);
  if (err.code === "EAGAIN") return new GavelError(`the gavel server at ${clip(where)} takes no connection now (EAGAIN: its queue of connections is full); try again later`, "BUSY", { cause: err });
  if (err.code === "EACCES" || err.code === "EPERM") return new GavelError(`cannot connect to ${clip(where)} (${err.code}): not this user's to use`, "PERMISSION_DENIED", { cause: err });
  return new GavelError(`cannot connect to the gavel server at ${clip(where)} (${err.code ?? clip(err.message)})`, "INTERNAL", { cause: err });
}

/**
 * An HTTP exchange with a server that failed (its request's `error`), always typed: before the
 * connection was made, as {@link connectFailure} (ECONNREFUSED no server running; ETIMEDOUT,
 * EHOSTUNREACH, ENETUNREACH and the like INTERNAL naming the code); once connected, ECONNRESET or EPIPE
 * is the server closing the connection, a reply that is not HTTP (Node's `HPE_` codes) says so, and
 * anything else is INTERNAL naming its code.
 */
export function exchangeFailure(url: string, err: NodeJS.ErrnoException, connected: boolean): GavelError {
  if (err.code === "ECONNRESET" || err.code === "EPIPE") return new GavelError(`the gavel server closed the connection (${err.code})`, "INTERNAL", { cause: err });
  if (!connected) return connectFailure(url, err);
  if (err.code?.startsWith("HPE_")) return new GavelError(`the server at ${clip(url)} answered something other than HTTP (${err.code}: ${clip(err.message)})`, "INTERNAL", { cause: err });
  return new GavelError(`the connection to the gavel server at ${clip(url)} failed (${err.code ?? clip(err.message)})`, "INTERNAL", { cause: err });
}

/**
 * Whether `err` says that no server listens there (none found, its socket or port refused the
 * connection), as opposed to an answer of a server: the caller then does what it does when none runs.
 */
export function isNotRunning(err: unknown): boolean {
  return err instanceof Error && NOT_RUNNING.has(err);
}

/** Whether a file is ours: owned by this user (a socket or token of another user is never trusted). */
function ownedByMe(uid: number): boolean {
  return typeof process.getuid !== "function" || uid === process.getuid();
}

/** A file's lstat, or null when it cannot be had (node:fs's callback form: node:fs/promises is not loaded for it). */
function lstatOrNull(path: string): Promise<Stats | null> {
  return new Promise((resolve) => lstat(path, (err, st) => resolve(err ? null : st)));
}

/**
 * Finds the server of a bank without connecting: its socket when one exists and belongs to this user,
 * else its HTTP endpoint file. Null when there is neither (no server: the caller's fast path).
 */
export function findEndpoint(options: EndpointOptions = {}): Promise<Endpoint | null> {
  return locateEndpoint(options, "findEndpoint options");
}

/** {@link findEndpoint}, its options named `what` in an error. */
export async function locateEndpoint(value: unknown, what: string): Promise<Endpoint | null> {
  const options = endpointOptions(value, what);
  const bank = resolveBankDir(options.bank);
  const path = options.socket ?? defaultSocketPath(bank);
  const st = await lstatOrNull(path);
  if (st?.isSocket() && ownedByMe(st.uid)) return { kind: "unix", path };
  if (options.socket) return null;
  return readHttpEndpoint(httpEndpointPath(bank));
}

/** The HTTP endpoint a bank's `serve.http.json` names, when it is this user's, private and well formed. */
export async function readHttpEndpoint(file: string): Promise<Endpoint | null> {
  const fst = await lstatOrNull(file);
  if (!fst?.isFile() || !ownedByMe(fst.uid) || (fst.mode & 0o077) !== 0) return null;
  try {
    const text = await new Promise<string>((resolve, reject) => readFile(file, "utf8", (err, t) => (err ? reject(err) : resolve(t))));
    const e = JSON.parse(text) as HttpEndpoint;
    if (typeof e.url === "string" && typeof e.token === "string" && /^http:\/\/(127\.0\.0\.1|\[::1\]|localhost):\d+$/.test(e.url)) return { kind: "http", url: e.url, token: e.token, file };
  } catch {
    // unreadable or half-written: no server to talk to
  }
  return null;
}

/** How long the check of an HTTP endpoint waits for its connection (one still pending is taken as live). */
const HTTP_CHECK_MS = 2000;

/**
 * Checks, before a client is made for it, that something listens at the address an HTTP endpoint file
 * names. A refused connection means that the server which wrote the file is gone (killed: it removes
 * the file only when it shuts down): FILE_NOT_FOUND ({@link notRunning}), as for a stale socket, and
 * the file is removed when its server's process is gone too ({@link removeStaleEndpointFile}). Any
 * other failure to connect is left to the request, which reports it.
 */
export async function checkHttpEndpoint(e: Extract<Endpoint, { kind: "http" }>): Promise<void> {
  // the port from the text: URL drops a scheme's default one (":80" reads as "")
  const m = /^http:\/\/(?:\[([^\]]+)\]|([^:/]+)):(\d+)$/.exec(e.url);
  const port = m ? Number(m[3]) : NaN;
  if (!m || !(port >= 1 && port <= 65535)) throw new GavelError(`the server's endpoint ${clip(e.url)} names no port from 1 to 65535`, "INVALID_ARGUMENT");
  const host = m[1] ?? m[2];
  const refused = await new Promise<boolean>((resolve) => {
    const s = netConnect({ host, port });
    const done = (v: boolean) => (clearTimeout(timer), s.destroy(), resolve(v));
    const timer = setTimeout(() => done(false), HTTP_CHECK_MS);
    s.once("connect", () => done(false));
    s.once("error", (err: NodeJS.ErrnoException) => done(err.code === "ECONNREFUSED"));
  });
  if (!refused) return;
  if (e.file !== undefined) await removeStaleEndpointFile(e.file, e.token);
  throw notRunning(e.url);
}

/**
 * Removes the endpoint file a killed server left, once its URL refused a connection: only while it
 * still names `token` (the same file: each server draws a new one) and the `pid` it names is gone (a
 * server that is shutting down no longer accepts, and removes its file itself). The file is renamed
 * aside first and put back when what moved is no longer it (a new server wrote its own meanwhile:
 * util/stale-file.ts). Only a server writes the file, and `gavel serve` holds the bank's lock, so no
 * second one can link its own into the gap before the put-back.
 */
async function removeStaleEndpointFile(file: string, token: string): Promise<void> {
  const text = await readTextOrNull(file);
  let named: { token?: unknown; pid?: unknown } | null = null;
  try {
    named = text === null ? null : (JSON.parse(text) as { token?: unknown; pid?: unknown });
  } catch {
    return; // half-written or damaged: not provably the stale one
  }
  // gone: signal 0 answers ESRCH (a live process, another user's (EPERM), or no valid pid is not)
  if (named?.token !== token || pidState(named.pid) !== "gone") return;
  await removeIfUnchanged(file, text).catch(() => undefined);
}

const IS_RUNNING_KEYS: Readonly<Record<keyof IsRunningOptions, true>> = { ...ENDPOINT_KEYS, timeoutMs: true };

/** `isRunning`'s arguments (client.ts) as one options object; INVALID_ARGUMENT for a call shape it does not take. */
export function isRunningOptions(bank: unknown, options: unknown): IsRunningOptions {
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
  const kind = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "an array" : typeof v === "object" ? "an object" : `a ${typeof v}`);
  const refuse = (what: string) => new GavelError(`isRunning takes a bank directory (a string) or { bank, socket, timeoutMs }: ${what}`, "INVALID_ARGUMENT");
  if (bank !== undefined && typeof bank !== "string" && !isObject(bank)) throw refuse(`got ${kind(bank)}`);
  if (!isObject(options)) throw refuse(`its options must be an object, got ${kind(options)}`);
  const o: Record<string, unknown> = isObject(bank) ? { ...options, ...bank } : { ...options, bank };
  if (o.bank !== undefined && typeof o.bank !== "string") throw refuse(`bank must be a string, got ${kind(o.bank)}`);
  if (o.socket !== undefined && typeof o.socket !== "string") throw refuse(`socket must be a string, got ${kind(o.socket)}`);
  endpointOptions(o, "isRunning options", IS_RUNNING_KEYS);
  if (o.timeoutMs !== undefined) checkInt(o.timeoutMs, "timeoutMs", 1);
  return o as IsRunningOptions;
}

const REQUEST_KEYS: Readonly<Record<keyof RequestOptions, true>> = { signal: true, timeoutMs: true, onProgress: true, settleOnAbort: true };
const SERVER_ROUTE_KEYS: Readonly<Record<keyof ServerRouteOptions, true>> = { ...ENDPOINT_KEYS, abstain: true, libraryCut: true, verdict: true, explain: true, lexical: true, signal: true };

/**
 * A request's options (client.ts's `RequestOptions`) checked by key and value
 * before anything is sent or connected: `signal` an AbortSignal, `timeoutMs` an integer from 1 to
 * 2^31 − 1, `onProgress` a function, `settleOnAbort` a boolean.
 *
 * @throws GavelError `INVALID_ARGUMENT` naming the option
 */
export function requestOptions(value: unknown): Record<string, unknown> {
  const o = optionsObject(value, "request options", REQUEST_KEYS);
  signalOption(o.signal);
  if (o.timeoutMs !== undefined) checkInt(o.timeoutMs, "timeoutMs", 1);
  functionOption(o.onProgress, "onProgress");
  boolOption(o.settleOnAbort, "settleOnAbort", false);
  return o;
}

/** `routeViaServerIfRunning`'s options checked by key: where the server is, the route's flags as booleans, the signal. */
export function serverRouteOptions(value: unknown): Record<string, unknown> & EndpointOptions {
  const o = endpointOptions(value, "routeViaServerIfRunning options", SERVER_ROUTE_KEYS);
  for (const f of ["abstain", "libraryCut", "verdict", "explain", "lexical"]) boolOption(o[f], f, false);
  signalOption(o.signal);
  return o;
}
