/**
 * The reading of one HTTP reply of the resident server (serve/client.ts's HTTP transport): one answer,
 * or (a write asking for progress) NDJSON progress lines, then the answer. Imports only errors.ts and
 * protocol.ts's types, so the hook that loads client.ts loads nothing more.
 *
 * @module
 */
import type { IncomingMessage } from "node:http";
import { StringDecoder } from "node:string_decoder";
import { GavelError } from "../errors.js";
import type { ProgressLine, Response } from "./protocol.js";

/**
 * Reads `res` to its end: each progress line to `onProgress`, resolving with the answer. Rejects
 * INTERNAL when the reply is cut off before its answer (the server closed the connection, whether
 * before a byte of the body or part-way through it: the message says how much came) or when it
 * answered whole but not with JSON.
 */
export function readReply(res: IncomingMessage, onProgress: (p: unknown) => void): Promise<{ status: number; answer: Response }> {
  return new Promise((resolve, reject) => {
    const utf8 = new StringDecoder("utf8"); // a character split across chunks is decoded whole
    let text = "";
    let bytes = 0;
    let notJson = false;
    let answer: Response | null = null;
    const lines = (all: boolean) => {
      let nl: number;
      while ((nl = text.indexOf("\n")) >= 0 || (all && text.trim())) {
        const line = nl >= 0 ? text.slice(0, nl) : text;
        text = nl >= 0 ? text.slice(nl + 1) : "";
        if (!line.trim()) continue;
        const m = JSON.parse(line) as Response | ProgressLine;
        if ("progress" in m && !("ok" in m)) onProgress(m.progress);
        else answer = m as Response;
      }
    };
    const withoutJson = () => new GavelError(`the gavel server answered HTTP ${res.statusCode} without JSON`, "INTERNAL");
    res.on("data", (d: Buffer) => {
      bytes += d.length;
      text += utf8.write(d);
      try {
        lines(false);
      } catch {
        notJson = true;
        res.destroy(); // "close" below says so
      }
    });
    res.on("error", () => undefined); // "close" follows
    res.on("close", () => {
      if (notJson) return reject(withoutJson());
      text += utf8.end();
      try {
        lines(true);
      } catch {
        // a last line that is no JSON: a reply cut part-way, or one that is not JSON (below)
      }
      if (answer) return resolve({ status: res.statusCode ?? 0, answer });
      reject(res.complete ? withoutJson() : cutOff(res, bytes));
    });
  });
}

/** The reply `res` ended by the server before its whole answer, `bytes` of its body come. */
function cutOff(res: IncomingMessage, bytes: number): GavelError {
  if (bytes === 0) return new GavelError("the gavel server closed the connection before its answer", "INTERNAL");
  const length = Number(res.headers["content-length"]);
  const of = Number.isSafeInteger(length) && length > bytes ? ` of ${length}` : "";
  return new GavelError(`the gavel server closed the connection before its whole answer (HTTP ${res.statusCode}, ${bytes}${of} bytes came)`, "INTERNAL");
}
