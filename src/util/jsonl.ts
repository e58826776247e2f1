/**
 * JSONL readers, written once: one JSON value a line, plain or gzip-compressed (detected by the
 * gzip magic bytes, or a `.gz` name). Blank lines are skipped everywhere; line numbers are 1-based,
 * as an editor shows them, so an error can say `file:line`.
 */
import type { ReadStream } from "node:fs";
import { readFile, type FileHandle } from "node:fs/promises";
import { createGunzip, gunzipSync } from "node:zlib";
import { GavelError, invalidArgument, clip, clipMessage } from "../errors.js";
import { openRegularFile } from "./regular-file.js";
import { errnoCause, PERMISSION_ERRNOS } from "./errno.js";

/** One non-blank line of a JSONL file. */
export interface JsonlLine {
  /** The line's text, as read. */
  text: string;
  /** Its 1-based line number. */
  line: number;
}

/** One parsed row of a JSONL file. */
export interface JsonlRow {
  /** The parsed JSON value (not checked further). */
  value: unknown;
  /** Its 1-based line number. */
  line: number;
}

/** Options of {@link readJsonl}. */
export interface ReadJsonlOptions {
  /** What the file holds, for the read error ("cannot read tasks <path>: …"). */
  what?: string;
  /**
   * Drop a last line that a stopped writer left unfinished (no newline after it, not JSON) instead of
   * refusing it: what resuming an appended-to file needs.
   */
  tornTail?: boolean;
}

/** The text without a leading U+FEFF (a UTF-8 BOM), as SKILL.md parsing drops it. */
function stripBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/**
 * The error of a JSONL file that cannot be opened: PERMISSION_DENIED, `doing` and the errno when the
 * file system refuses this user (EACCES, EPERM, EROFS); else FILE_NOT_FOUND, `doing` and `detail`.
 */
function openError(doing: string, detail: string, cause: unknown): GavelError {
  const denied = errnoCause(cause, PERMISSION_ERRNOS);
  if (denied) return new GavelError(`${doing}: permission denied (${denied.code})`, "PERMISSION_DENIED", { cause });
  return new GavelError(`${doing}: ${detail}`, "FILE_NOT_FOUND", { cause });
}

function isGzipMagic(bytes: Uint8Array): boolean {
  return bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
}

/**
 * Reads a whole JSONL file (plain or gzipped) and parses every non-blank line.
 *
 * @throws GavelError `FILE_NOT_FOUND` when the file cannot be read, `PERMISSION_DENIED` when this
 *   user may not read it (EACCES, EPERM); `INVALID_ARGUMENT` when it is
 *   named `.gz` but is not gzip data, or a line is not JSON (the message says `path:line`)
 */
export async function readJsonl(path: string, options: ReadJsonlOptions = {}): Promise<JsonlRow[]> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (err) {
    const what = options.what ? `${options.what} ` : "";
    throw openError(`cannot read ${what}${clip(path)}`, clipMessage(err), err);
  }
  let text: string;
  try {
    text = (path.endsWith(".gz") || isGzipMagic(bytes) ? gunzipSync(bytes) : bytes).toString("utf8");
  } catch (err) {
    throw invalidArgument(`${clip(path)}: not gzip data (${(err as Error).message})`);
  }
  // a leading BOM (as some editors write) is no part of the first row, as in SKILL.md (normalizeNewlines)
  const lines = stripBom(text).split("\n");
  const rows: JsonlRow[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() === "") continue;
    try {
      rows.push({ value: JSON.parse(lines[i]), line: i + 1 });
    } catch {
      // Only the text after the last newline can be a torn write.
      if (options.tornTail && i === lines.length - 1) break;
      throw invalidArgument(`${clip(path)}:${i + 1}: not JSON`);
    }
  }
  return rows;
}

/** Longest line {@link jsonlLines} takes by default (one skill row; a longer line is refused, never buffered whole). */
export const MAX_JSONL_LINE_BYTES = 64 * 1024 * 1024;

/** Options of {@link jsonlLines}. */
export interface JsonlLinesOptions {
  /** Longest line taken, in bytes (after decompression); default {@link MAX_JSONL_LINE_BYTES}. */
  maxLineBytes?: number;
}

/**
 * Streams the non-blank lines of a JSONL file (plain or gzipped) without holding the file in memory,
 * for libraries of many thousand rows. Parsing is the caller's, so one bad row can be reported and
 * skipped. Stopping early (a `break`) closes the file.
 *
 * Only a regular file is read (gguf/regular-file.ts: a FIFO or a device such as /dev/zero is refused
 * before a byte is read, and an open never blocks), only up to the size it had when opened, and no
 * line is buffered past `maxLineBytes`, so neither a swapped-in file nor a gzip bomb of one endless
 * line can wedge the reader or grow its memory.
 *
 * @throws GavelError `FILE_NOT_FOUND` when the file cannot be opened or is not a regular file,
 *   `PERMISSION_DENIED` when this user may not read it (EACCES, EPERM),
 *   `CORRUPT_FILE` when reading or decompressing fails midway or a line is too long (the message
 *   names the last line read)
 */
export async function* jsonlLines(path: string, options: JsonlLinesOptions = {}): AsyncGenerator<JsonlLine> {
  const maxLine = options.maxLineBytes ?? MAX_JSONL_LINE_BYTES;
  let opened: { fh: FileHandle; size: number };
  try {
    opened = await openRegularFile(path);
  } catch (cause) {
    throw openError(`cannot read ${clip(path)}`, (cause as Error).message, cause);
  }
  const { fh, size } = opened;
  let file: ReadStream | undefined;
  let input: NodeJS.ReadableStream & { destroy(e?: Error): void } | undefined;
  let line = 0;
  try {
    if (size === 0) return;
    const head = Buffer.alloc(2);
    const { bytesRead } = await fh.read(head, 0, 2, 0);
    const gz = isGzipMagic(head.subarray(0, bytesRead));
    // Up to the size at open: a file that grows meanwhile is not followed.
    file = fh.createReadStream({ start: 0, end: size - 1, autoClose: false });
    const src = file;
    input = gz ? src.pipe(createGunzip()) : src;
    // A read error does not propagate through pipe(); forward it so the loop below sees it.
    if (gz) src.on("error", (e) => input?.destroy(e));
    let parts: Buffer[] = [];
    let pending = 0;
    const take = (tail: Buffer): string => {
      const bytes = parts.length === 0 ? tail : Buffer.concat([...parts, tail]);
      parts = [];
      pending = 0;
      const n = bytes.length > 0 && bytes[bytes.length - 1] === 0x0d ? bytes.length - 1 : bytes.length;
      const text = bytes.toString("utf8", 0, n);
      // line is the count before this one: a BOM at the file's start is no part of its first row
      return line === 0 ? stripBom(text) : text;
    };
    const tooLong = () =>
      new GavelError(`cannot read ${clip(path)}: line ${line + 1} is longer than ${maxLine} bytes`, "CORRUPT_FILE");
    const it = (input as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
    for (;;) {
      let next: IteratorResult<Buffer>;
      try {
        next = await it.next();
      } catch (cause) {
        throw new GavelError(`cannot read ${clip(path)} after line ${line}: ${clipMessage(cause)}`, "CORRUPT_FILE", { cause });
      }
      if (next.done) break;
      const chunk = next.value;
      let at = 0;
      for (;;) {
        const nl = chunk.indexOf(0x0a, at);
        if (nl < 0) break;
        if (pending + (nl - at) > maxLine) throw tooLong();
        const text = take(chunk.subarray(at, nl));
        line++;
        if (text.trim() !== "") yield { text, line };
        at = nl + 1;
      }
      if (at < chunk.length) {
        pending += chunk.length - at;
        if (pending > maxLine) throw tooLong();
        parts.push(chunk.subarray(at));
      }
    }
    if (pending > 0) {
      const text = take(Buffer.alloc(0));
      line++;
      if (text.trim() !== "") yield { text, line };
    }
  } finally {
    input?.destroy();
    file?.destroy();
    await fh.close().catch(() => undefined);
  }
}
