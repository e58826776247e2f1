/**
 * `gavel mcp`'s stdio transport: newline-delimited JSON-RPC on a readable and a writable stream (stdin
 * and stdout), in place of the SDK's `StdioServerTransport`, so that no frame can stop the server.
 *
 * - A line over {@link MCP_STDIO_MAX_FRAME} bytes is never held whole: once past the cap, the rest of
 *   it is dropped as it streams, and the line is answered `-32600` ("frame over N bytes"), with the id
 *   when the line's first bytes show it (the SDK's transport closed the server, exit 0, the call unanswered).
 * - A line that is not JSON is answered `-32700`; JSON that is not a JSON-RPC 2.0 message `-32600`, with
 *   the message's id when it is a string or an integer; a batch (an array) `-32600` "batch not supported".
 *   Each is named on stderr (through `log`). Blank lines are skipped. The server goes on with the next line.
 * - The writable failing (the client closed its end: EPIPE) or the readable ending closes the transport,
 *   so the session ends as when the client closes stdin.
 *
 * @module
 */
import type { Readable, Writable } from "node:stream";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { MESSAGE_CHARS, clip } from "../../errors.js";

/** Most bytes of one stdio frame (a line, without its newline): as `--port`'s largest body, 8 MiB. */
export const MCP_STDIO_MAX_FRAME = 8 * 1024 * 1024;

/** Bytes of an over-cap line kept to read its id from. */
const HEAD_BYTES = 1024;

/** What a JSON value checked as a JSON-RPC message gives: the message, or the first issue (path: message). */
export type FrameCheck = { ok: true; message: JSONRPCMessage } | { ok: false; issue: string };

/** A zod schema's `safeParse`, enough of it to check a message. */
interface SafeParser {
  safeParse(value: unknown): { success: true; data: unknown } | { success: false; error: { issues: ZodIssueLike[] } };
}
interface ZodIssueLike {
  path?: PropertyKey[];
  keys?: string[]; // unrecognized_keys
  message?: string;
  errors?: ZodIssueLike[][]; // zod 4's union
  unionErrors?: { issues: ZodIssueLike[] }[]; // zod 3's union
}

/** The issue to name: inside a union, the first issue of the branch with fewest (the one the value came closest to). */
function firstIssue(issues: ZodIssueLike[]): ZodIssueLike | undefined {
  const first = issues[0];
  const branches = first?.errors ?? first?.unionErrors?.map((u) => u.issues);
  if (!branches || branches.length === 0) return first;
  const best = branches.reduce((a, b) => (b.length < a.length ? b : a));
  return firstIssue(best) ?? first;
}

/** A checker of JSON-RPC messages over the SDK's schema (`JSONRPCMessageSchema`). */
export function messageChecker(schema: SafeParser): (value: unknown) => FrameCheck {
  return (value) => {
    const r = schema.safeParse(value);
    if (r.success) return { ok: true, message: r.data as JSONRPCMessage };
    const issue = firstIssue(r.error.issues);
    const at = issue?.path?.length ? issue.path : issue?.keys?.length === 1 ? issue.keys : null;
    const path = at ? at.map(String).join(".") : "(the message)";
    return { ok: false, issue: `${path}: ${issue?.message ?? "invalid"}` };
  };
}

/** A JSON-RPC id worth echoing: a string of at most 200 characters, or a safe integer; else null. */
function readableId(id: unknown): string | number | null {
  if (typeof id === "string" && id.length <= 200) return id;
  if (typeof id === "number" && Number.isSafeInteger(id)) return id;
  return null;
}

/** The id at the start of an over-cap line: `{"jsonrpc":"2.0","id":…` or `{"id":…`, keys before it plain strings. */
export function idFromHead(head: string): string | number | null {
  const m = /^\s*\{(?:\s*"(?:jsonrpc|method)"\s*:\s*"[^"\\]{0,64}"\s*,)*\s*"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,16})\s*[,}]/.exec(head);
  if (!m) return null;
  try {
    return readableId(JSON.parse(m[1]));
  } catch {
    return null;
  }
}

/** Options of {@link LineTransport}. */
export interface LineTransportOptions {
  input: Readable;
  output: Writable;
  /** Checks a parsed line as a JSON-RPC message. */
  check: (value: unknown) => FrameCheck;
  /** Hears one line for stderr per refused frame. */
  log: (line: string) => void;
  /** Most bytes of one line (default {@link MCP_STDIO_MAX_FRAME}). */
  maxFrame?: number;
  /** Hears each line read, before it is handled. */
  onLine?: () => void;
}

/** The transport; see the module's comment. */
export class LineTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onerror?: (error: Error) => void;
  onclose?: () => void;
  private readonly max: number;
  private parts: Buffer[] = [];
  private size = 0;
  /** The first bytes of a line past the cap (the rest is dropped), or null while under it. */
  private over: Buffer | null = null;
  private closed = false;

  constructor(private readonly o: LineTransportOptions) {
    this.max = o.maxFrame ?? MCP_STDIO_MAX_FRAME;
  }

  private readonly onData = (chunk: Buffer | string) => {
    const buf = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    let pos = 0;
    while (!this.closed && pos < buf.length) {
      const nl = buf.indexOf(10, pos);
      this.take(buf.subarray(pos, nl === -1 ? buf.length : nl));
      if (nl === -1) break;
      this.endLine();
      pos = nl + 1;
    }
  };
  private readonly onEnd = () => void this.close();
  private readonly onInputError = (err: Error) => {
    this.onerror?.(err);
    void this.close();
  };
  // the client closed its end of stdout (EPIPE): nobody to answer, the session ends
  private readonly onOutputError = () => void this.close();

  /** Adds a piece of the current line, keeping at most the cap (past it, only the head). */
  private take(piece: Buffer): void {
    if (piece.length === 0) return;
    if (this.over) {
      if (this.over.length < HEAD_BYTES) this.over = Buffer.concat([this.over, piece.subarray(0, HEAD_BYTES - this.over.length)]);
      return;
    }
    if (this.size + piece.length > this.max) {
      this.over = Buffer.concat([...this.parts, piece], Math.min(HEAD_BYTES, this.size + piece.length));
      this.parts = [];
      this.size = 0;
      return;
    }
    this.parts.push(piece);
    this.size += piece.length;
  }

  private endLine(): void {
    const over = this.over;
    const line = over ? null : Buffer.concat(this.parts).toString("utf8");
    this.parts = [];
    this.size = 0;
    this.over = null;
    if (over) return this.refuse(idFromHead(over.toString("utf8")), -32600, `Invalid Request: frame over ${this.max} bytes`, `a frame over ${this.max} bytes (dropped)`);
    this.frame(line!.replace(/\r$/, "").replace(/^\uFEFF/, ""));
  }

  private frame(line: string): void {
    if (line.trim() === "") return;
    this.o.onLine?.();
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      return this.refuse(null, -32700, "Parse error: the frame is not JSON", `a frame that is not JSON: ${(err as Error).message}`);
    }
    if (Array.isArray(value)) return this.refuse(null, -32600, "Invalid Request: batch not supported (send one message a line)", "a batch (not supported over stdio)");
    const checked = this.o.check(value);
    if (!checked.ok) {
      const id = value !== null && typeof value === "object" ? readableId((value as { id?: unknown }).id) : null;
      return this.refuse(id, -32600, `Invalid Request: the frame is not a JSON-RPC 2.0 message (${clip(checked.issue, 200)})`, `a frame that is not a JSON-RPC message: ${checked.issue}`);
    }
    this.onmessage?.(checked.message);
  }

  private refuse(id: string | number | null, code: number, message: string, why: string): void {
    this.o.log(`gavel mcp: ${clip(why, MESSAGE_CHARS)}`);
    void this.send({ jsonrpc: "2.0", id, error: { code, message } } as unknown as JSONRPCMessage);
  }

  async start(): Promise<void> {
    this.o.input.on("data", this.onData);
    this.o.input.on("end", this.onEnd);
    this.o.input.on("close", this.onEnd);
    this.o.input.on("error", this.onInputError);
    this.o.output.on("error", this.onOutputError); // left on: a later write's error must not crash the process
  }

  send(message: JSONRPCMessage): Promise<void> {
    const out = this.o.output;
    if (this.closed || out.destroyed || !out.writable) return Promise.resolve();
    return new Promise((resolve) => {
      if (out.write(JSON.stringify(message) + "\n")) return resolve();
      const done = () => {
        out.off("drain", done);
        out.off("close", done);
        resolve();
      };
      out.once("drain", done);
      out.once("close", done);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const input = this.o.input;
    input.off("data", this.onData);
    input.off("end", this.onEnd);
    input.off("close", this.onEnd);
    input.off("error", this.onInputError);
    input.on("error", () => undefined);
    if (input.listenerCount("data") === 0) input.pause();
    this.parts = [];
    this.over = null;
    this.onclose?.();
  }
}
