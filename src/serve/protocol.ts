/**
 * The resident router's wire format (docs/serve-protocol.md), shared by the server and its clients.
 *
 * Version 1: newline-delimited JSON over a Unix domain socket, or one JSON object per HTTP POST on
 * localhost. A request is `{"v":1,"id":…,"op":…, …params}`, its answer
 * `{"v":1,"id":…,"ok":true,"result":…}` or `{"v":1,"id":…,"ok":false,"error":{"code","message"}}`.
 *
 * This module imports nothing but node's path, os and module helpers (node:crypto only for a socket
 * path too long for its bank): the hook loads it on every prompt, so it must stay small (no model, no
 * addon).
 *
 * @module
 */
import { createRequire } from "node:module";
import { fallbackSocketPath } from "../util/private-dir.js";
import { join, resolve } from "node:path";
import { bankDir, config } from "../config.js";

/** The protocol version this code speaks. */
export const PROTOCOL_VERSION = 1;

/** The operations of version 1. */
export const OPS = ["ping", "status", "route", "glance", "glance-top", "get-skill", "list", "install", "uninstall", "sync", "cancel"] as const;
export type Op = (typeof OPS)[number];

/** Operations that write the bank: the server runs them one at a time. */
export const WRITE_OPS: ReadonlySet<Op> = new Set<Op>(["install", "uninstall", "sync"]);

/** The writes that report progress (`"progress": true`): over HTTP their reply is NDJSON then; any other op answers one JSON. */
export const PROGRESS_OPS: ReadonlySet<Op> = new Set<Op>(["install", "sync"]);

/** A request id: a string or a number the client chooses, unique among its requests in flight. */
export type RequestId = string | number;

/** A request as it travels: the op's own fields sit beside v, id and op. */
export interface Request {
  v: number;
  id: RequestId;
  op: Op;
  [field: string]: unknown;
}

/** An error as it travels: a GavelErrorCode (src/errors.ts) and a sentence; a write's failure also carries the option it refuses (`GavelError.option`), where it refuses one. */
export interface WireError {
  code: string;
  message: string;
  option?: string;
}

/** An answer to one request. */
export type Response = { v: number; id: RequestId | null; ok: true; result: unknown } | { v: number; id: RequestId | null; ok: false; error: WireError };

/**
 * A progress line of a write in flight (install, sync), sent on a Unix socket before its answer when
 * the request carries `"progress": true`: `{"v":1,"id":…,"progress":{"done","total","skill","status"}}`.
 * It has no `ok` field; the answer that follows ends the request as usual.
 */
export interface ProgressLine {
  v: number;
  id: RequestId;
  progress: unknown;
}

/** Longest request line the server reads (bytes); a longer one closes the connection. */
export const MAX_LINE_BYTES = 4 << 20;

/** The file beside the socket path that an HTTP server writes: its URL and bearer token (mode 0600). */
export const HTTP_ENDPOINT_FILE = "serve.http.json";

/** What {@link HTTP_ENDPOINT_FILE} holds. */
export interface HttpEndpoint {
  v: number;
  url: string;
  token: string;
  pid: number;
}

/** The bank directory a command means, absolute: the argument, else $GAVEL_BANK, else .gavel/bank (config.ts's bankDir). */
export function resolveBankDir(bank?: string, cwd: string = process.cwd()): string {
  return resolve(cwd, bankDir(bank));
}

/**
 * Where the server of a bank listens by default: `<bank>/serve.sock`, or, when that path is too long
 * for a Unix socket (108 bytes on Linux), `$XDG_RUNTIME_DIR/gavel-<hash of the bank path>.sock`, else
 * `<tmpdir>/gavel-<uid>/<hash>.sock` in a private 0700 folder (util/private-dir.ts).
 */
export function defaultSocketPath(bank: string, runtimeDir: string | undefined = config().runtimeDir): string {
  const dir = resolve(bank);
  const inBank = join(dir, "serve.sock");
  if (Buffer.byteLength(inBank) <= 100) return inBank;
  // node:crypto is loaded here only: a socket in its bank (the usual case) needs no hash, and loading it
  // would cost the hook several milliseconds of its start
  const { createHash } = createRequire(import.meta.url)("node:crypto") as typeof import("node:crypto");
  const hash = createHash("sha256").update(dir).digest("hex").slice(0, 16);
  return fallbackSocketPath(`${hash}.sock`, runtimeDir);
}

/**
 * The longest Unix socket path this platform takes, in bytes of UTF-8 (null on Windows, whose named
 * pipes have no such bound): `sun_path` holds 108 bytes on Linux and 104 on macOS and the BSDs, the
 * last a NUL. Neither the kernel nor node refuses a longer path: it is cut short, and a server would
 * listen somewhere else than asked. ({@link defaultSocketPath} keeps its own documented 100 bytes.)
 */
export const MAX_SOCKET_PATH_BYTES: number | null = process.platform === "win32" ? null : process.platform === "linux" ? 107 : 103;

/** What is wrong with `path` as a Unix socket path (its length), or null when it fits. */
export function socketPathProblem(path: string): string | null {
  const bytes = Buffer.byteLength(path);
  if (MAX_SOCKET_PATH_BYTES === null || bytes <= MAX_SOCKET_PATH_BYTES) return null;
  return `the path is ${bytes} bytes, over the ${MAX_SOCKET_PATH_BYTES} bytes a Unix socket path can hold on this platform`;
}

/** The HTTP endpoint file of a bank. */
export function httpEndpointPath(bankDir: string): string {
  return join(resolve(bankDir), HTTP_ENDPOINT_FILE);
}

/** A response line. */
export function encodeResponse(r: Response): string {
  // NaN (L and V of a skipped verdict) travels as null, as JSON.stringify writes it
  return JSON.stringify(r) + "\n";
}

/** Checks the envelope of a parsed request; the error message when it is not one. */
export function envelopeError(msg: unknown): string | null {
  if (typeof msg !== "object" || msg === null || Array.isArray(msg)) return "a request is a JSON object";
  const m = msg as Record<string, unknown>;
  if (m.v !== PROTOCOL_VERSION) return `unsupported protocol version ${JSON.stringify(m.v)} (this server speaks v${PROTOCOL_VERSION})`;
  if (!(typeof m.id === "string" || (typeof m.id === "number" && Number.isFinite(m.id)))) return "id must be a string or a number";
  if (typeof m.op !== "string" || !(OPS as readonly string[]).includes(m.op)) return `unknown op ${JSON.stringify(m.op)} (one of ${OPS.join(", ")})`;
  return null;
}
