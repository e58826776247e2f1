/**
 * A streamed HTTP answer of the resident router (docs/serve-protocol.md): a write that asks for its
 * progress over HTTP is answered `200`, chunked `application/x-ndjson`, its progress lines as they
 * come and its answer as the last line, as the socket transport sends them.
 *
 * @module
 */
import type { ServerResponse } from "node:http";
import { encodeResponse, type ProgressLine, type Response } from "./protocol.js";

/** An NDJSON reply under way: a progress line, and the answer that ends it. */
export interface NdjsonReply {
  line(l: ProgressLine): void;
  end(r: Response): void;
}

/**
 * Sends the reply's head now and returns its writers; a client that leaves more than `maxUnread`
 * bytes unread is dropped (as a socket client that never reads its answers).
 */
export function ndjsonReply(res: ServerResponse, maxUnread: number): NdjsonReply {
  res.writeHead(200, { "content-type": "application/x-ndjson", "cache-control": "no-store" });
  const write = (text: string): boolean => {
    if (res.writableEnded || res.destroyed) return false;
    res.write(text);
    if (res.writableLength > maxUnread) res.destroy();
    return true;
  };
  return {
    line: (l) => void write(JSON.stringify(l) + "\n"),
    end: (r) => void (write(encodeResponse(r)) && res.end()),
  };
}
