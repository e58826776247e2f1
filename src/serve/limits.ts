/**
 * The bounds of the resident router (docs/serve-protocol.md, "Limits"): what any one client can make
 * the server hold, with their defaults.
 *
 * @module
 */
import type { IncomingMessage } from "node:http";
import { checkInt } from "../util/validate.js";
import { MAX_LINE_BYTES } from "./protocol.js";

/**
 * What one server lets its clients hold (docs/serve-protocol.md, "Limits"): every bound a client
 * could otherwise push without end, so a broken or hostile local client cannot wedge the server.
 */
export interface ServeLimits {
  /** Connections open at once; one over it is closed as it is accepted. */
  maxConnections: number;
  /** Requests in flight on one socket connection (ping, status and cancel not counted); more are answered BUSY. */
  maxInFlightPerConnection: number;
  /** Requests in flight on the whole server (ping, status and cancel not counted); more are answered BUSY. */
  maxInFlight: number;
  /** A connection with nothing in flight and no traffic for this long is closed. */
  idleMs: number;
  /** A request (a socket line, or HTTP headers and body) must arrive whole within this long of its first byte. */
  requestMs: number;
  /** Longest request (a socket line, or an HTTP body), in bytes. */
  maxRequestBytes: number;
  /** Answers a socket client has not read yet, in bytes; past it the client is dropped. */
  maxOutputBytes: number;
  /**
   * The per-request budget: most tokens of task one `route` or `glance` may carry; a longer task is
   * refused with CONTEXT_OVERFLOW, counted off the JavaScript thread. 0: no budget.
   */
  maxTaskTokens: number;
  /**
   * Most task tokens one batched forward pass carries (states-scheduler.ts): the glance passes of
   * concurrent requests are decoded together up to this; a longer task goes alone.
   */
  maxBatchTokens: number;
  /** Most tasks one batched forward pass carries. */
  maxBatchTasks: number;
}

/** The bounds a server takes when not told otherwise. */
export const DEFAULT_LIMITS: Readonly<ServeLimits> = Object.freeze({
  maxConnections: 256,
  maxInFlightPerConnection: 64,
  maxInFlight: 512,
  idleMs: 300_000,
  requestMs: 30_000,
  maxRequestBytes: MAX_LINE_BYTES,
  maxOutputBytes: 64 << 20,
  maxTaskTokens: 16_384,
  maxBatchTokens: 4096,
  maxBatchTasks: 64,
});

/** Ops answered at once from what the server holds: never counted against the in-flight bounds. */
export const CONTROL_OPS: ReadonlySet<string> = new Set(["ping", "status", "cancel"]);

/**
 * The limits given, completed with {@link DEFAULT_LIMITS} and checked: each an integer from 1 (from 0
 * for `maxTaskTokens`, 0 being no budget) to 2^31 − 1 (the times end in timers, which take no more),
 * else INVALID_ARGUMENT naming the limit and the range.
 */
export function limitsOf(given: Partial<ServeLimits> | undefined): ServeLimits {
  const l = { ...DEFAULT_LIMITS, ...given };
  for (const [k, v] of Object.entries(l)) checkInt(v, `limits.${k}`, k === "maxTaskTokens" ? 0 : 1);
  return l;
}

/** The body of an HTTP request, at most `max` bytes; null when the client went away before it ended. */
export function readBody(req: IncomingMessage, max: number): Promise<Buffer | "too-large" | null> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (v: Buffer | "too-large" | null) => {
      req.removeAllListeners("data");
      resolve(v);
    };
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > max) done("too-large");
      else chunks.push(c);
    });
    req.once("end", () => done(Buffer.concat(chunks, size)));
    // ECONNRESET mid-body ("aborted"), or the socket closed: nobody to answer
    req.once("error", () => done(null));
    req.once("close", () => done(req.complete ? Buffer.concat(chunks, size) : null));
  });
}

/** Most bytes of a body over the bound read and discarded before its 413 (see {@link discardBody}): this many times the bound. */
export const DISCARD_FACTOR = 4;

/**
 * Reads and discards the rest of a body refused as too large, at most `max` more bytes: a 413 sent
 * while the body still arrives, its connection then closed, would reset the connection under a client
 * still sending (its write fails, the 413 unread). Resolves once the body ended, the client went away,
 * or `max` bytes passed. Its time is bounded by the server's `requestMs` (node's requestTimeout).
 */
export function discardBody(req: IncomingMessage, max: number): Promise<void> {
  return new Promise((resolve) => {
    if (req.complete || req.destroyed) return resolve();
    let size = 0;
    const done = () => {
      req.removeListener("data", onData);
      resolve();
    };
    const onData = (c: Buffer) => {
      size += c.length;
      if (size > max) done();
    };
    req.on("data", onData);
    req.once("end", done);
    req.once("error", done);
    req.once("close", done);
  });
}
