/**
 * JSONL readers, written once: one JSON value a line, plain or gzip-compressed (detected by the
 * gzip magic bytes, or a `.gz` name). Blank lines are skipped everywhere; line numbers are 1-based,
 * as an editor shows them, so an error can say `file:line`.
 */
import { createReadStream } from "node:fs";
import { open, readFile } from "node:fs/promises";
import { createInterface } from "node:readline";
import { createGunzip, gunzipSync } from "node:zlib";
import { GavelError, invalidArgument } from "../errors.js";

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

function isGzipMagic(bytes: Uint8Array): boolean {
  return bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
}

/**
 * Reads a whole JSONL file (plain or gzipped) and parses every non-blank line.
 *
 * @throws GavelError `FILE_NOT_FOUND` when the file cannot be read; `INVALID_ARGUMENT` when it is
 *   named `.gz` but is not gzip data, or a line is not JSON (the message says `path:line`)
 */
export async function readJsonl(path: string, options: ReadJsonlOptions = {}): Promise<JsonlRow[]> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (err) {
    const what = options.what ? `${options.what} ` : "";
    throw new GavelError(`cannot read ${what}${path}: ${(err as Error).message}`, "FILE_NOT_FOUND", { cause: err });
  }
  let text: string;
  try {
    text = (path.endsWith(".gz") || isGzipMagic(bytes) ? gunzipSync(bytes) : bytes).toString("utf8");
  } catch (err) {
    throw invalidArgument(`${path}: not gzip data (${(err as Error).message})`);
  }
  const lines = text.split("\n");
  const rows: JsonlRow[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() === "") continue;
    try {
      rows.push({ value: JSON.parse(lines[i]), line: i + 1 });
    } catch {
      // Only the text after the last newline can be a torn write.
      if (options.tornTail && i === lines.length - 1) break;
      throw invalidArgument(`${path}:${i + 1}: not JSON`);
    }
  }
  return rows;
}

/** Whether the file starts with the gzip magic bytes. */
async function isGzipFile(path: string): Promise<boolean> {
  let fh;
  try {
    fh = await open(path, "r");
    const buf = Buffer.alloc(2);
    const { bytesRead } = await fh.read(buf, 0, 2, 0);
    return isGzipMagic(buf.subarray(0, bytesRead));
  } catch (cause) {
    throw new GavelError(`cannot read ${path}`, "FILE_NOT_FOUND", { cause });
  } finally {
    await fh?.close();
  }
}

/**
 * Streams the non-blank lines of a JSONL file (plain or gzipped) without holding the file in memory,
 * for libraries of many thousand rows. Parsing is the caller's, so one bad row can be reported and
 * skipped. Stopping early (a `break`) closes the file.
 *
 * @throws GavelError `FILE_NOT_FOUND` when the file cannot be opened, `CORRUPT_FILE` when reading or
 *   decompressing fails midway (the message names the last line read)
 */
export async function* jsonlLines(path: string): AsyncGenerator<JsonlLine> {
  const gz = await isGzipFile(path);
  const file = createReadStream(path);
  const input = gz ? file.pipe(createGunzip()) : file;
  // A read error does not propagate through pipe(); forward it so the loop below sees it.
  if (gz) file.on("error", (e) => input.destroy(e));
  const rl = createInterface({ input, crlfDelay: Infinity });
  let line = 0;
  try {
    const it = rl[Symbol.asyncIterator]();
    for (;;) {
      let next: IteratorResult<string>;
      try {
        next = await it.next();
      } catch (cause) {
        throw new GavelError(`cannot read ${path} after line ${line}: ${(cause as Error).message}`, "CORRUPT_FILE", { cause });
      }
      if (next.done) return;
      line++;
      if (next.value.trim() !== "") yield { text: next.value, line };
    }
  } finally {
    rl.close();
    input.destroy();
    file.destroy();
  }
}
