/**
 * Where the resident router of a bank listens (docs/serve-protocol.md, "Transports"): its socket, or
 * the HTTP endpoint its `serve.http.json` names. Imports only node built-ins, errors.ts and
 * protocol.ts, as client.ts.
 *
 * @module
 */
import { lstat, readFile, type Stats } from "node:fs";
import { GavelError } from "../errors.js";
import { defaultSocketPath, httpEndpointPath, resolveBankDir, type HttpEndpoint } from "./protocol.js";

/** Where to find a server: a bank (its default socket, else its HTTP endpoint file), or a socket path. */
export interface EndpointOptions {
  /** The bank directory (default: $GAVEL_BANK, else .gavel/bank). */
  bank?: string;
  /** An explicit socket path (default: the bank's, see `defaultSocketPath`). */
  socket?: string;
}

/** Options of `isRunning`: where the server is, and how long its ping may take. */
export interface IsRunningOptions extends EndpointOptions {
  /** Most milliseconds the ping may take (default 1000). */
  timeoutMs?: number;
}

/** A located server. */
export type Endpoint = { kind: "unix"; path: string } | { kind: "http"; url: string; token: string; /** The endpoint file it was read from (read again when the token is refused). */ file?: string };

export function notRunning(where: string): GavelError {
  return new GavelError(`no gavel server is running at ${where} (start one with \`gavel serve\`)`, "FILE_NOT_FOUND");
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
export async function findEndpoint(options: EndpointOptions = {}): Promise<Endpoint | null> {
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
  return o as IsRunningOptions;
}
