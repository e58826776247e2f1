/**
 * `<bank>/mcp.http.json`, the file `gavel mcp --port` writes its URL, token and pid to: one serving
 * process a bank. A start refuses while the file names another live process (`BANK_LOCKED`), replaces
 * a file left by a process that is gone (removed under `<file>.break` while it still reads as the
 * stale record, as a stale bank lock is: bank/lock.ts), and a stop removes the file only while it is still its own (its
 * pid and token), so that one server never deletes another's.
 *
 * @module
 */
import { randomBytes } from "node:crypto";
import { link, readFile, rm, writeFile } from "node:fs/promises";
import { GavelError, clip } from "../../errors.js";
import { pidAlive } from "../../util/pid.js";
import { breakStaleOrPause } from "../../bank/lock.js";

/** What the file holds. */
export interface McpEndpointRecord {
  url: string;
  token: string;
  pid: number;
}

/** The record `text` holds, or null when it holds none (no file, or not a JSON object). */
function parseRecord(text: string | null): Partial<McpEndpointRecord> | null {
  try {
    const value = text === null ? null : (JSON.parse(text) as unknown);
    return value !== null && typeof value === "object" ? (value as Partial<McpEndpointRecord>) : null;
  } catch {
    return null;
  }
}

/** The record in `file`, or null when there is none or it cannot be read as one. */
async function readRecord(file: string): Promise<Partial<McpEndpointRecord> | null> {
  return parseRecord(await readFile(file, "utf8").catch(() => null));
}

/** A `BANK_LOCKED` error when `record` names another live process (another user's too); else nothing. */
function refuseRecord(file: string, record: Partial<McpEndpointRecord> | null): void {
  if (record && record.pid !== process.pid && pidAlive(record.pid)) {
    throw new GavelError(
      `a gavel mcp --port (pid ${record.pid}) already serves this bank at ${clip(String(record.url))}; use it, or stop it first ` +
        `(if pid ${record.pid} is not gavel mcp, remove ${clip(file)})`,
      "BANK_LOCKED",
    );
  }
}

/** A `BANK_LOCKED` error when `file` names another live process; else nothing. */
export async function refuseIfServed(file: string): Promise<void> {
  refuseRecord(file, await readRecord(file));
}

/**
 * Writes this process's record to `file` (mode 0600): refused while another live process holds it, a
 * stale one replaced (`CORRUPT_FILE` when what is there cannot be read, a directory say). The record is written whole to a temporary file and linked into place (a link
 * fails with EEXIST atomically), so no reader ever sees the file empty or half written.
 */
export async function claimEndpointFile(file: string, endpoint: { url: string; token: string }): Promise<void> {
  const text = JSON.stringify({ url: endpoint.url, token: endpoint.token, pid: process.pid }) + "\n";
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
  await writeFile(tmp, text, { mode: 0o600, flag: "wx" });
  try {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        return await link(tmp, file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      }
      const found = await readFile(file, "utf8").catch((err: NodeJS.ErrnoException) => {
        if (err.code === "ENOENT") return null; // removed meanwhile: link again
        throw new GavelError(`${clip(file)} cannot be read (${err.code ?? clip(err.message)}); move it aside`, "CORRUPT_FILE", { cause: err });
      });
      if (found === null) continue;
      refuseRecord(file, parseRecord(found));
      // a record of a process that is gone: removed only while it is still that record, one breaker
      // at a time (another start that broke it first and linked its own is left alone; the next
      // link then refuses)
      await breakStaleOrPause(file, found, `the endpoint file ${clip(file)}`);
    }
  } finally {
    await rm(tmp, { force: true });
  }
  throw new GavelError(`${clip(file)} is rewritten as gavel mcp --port writes it: another process is starting on this bank`, "BANK_LOCKED");
}

/** Removes `file` when it still holds this process's record (`token`); another's is left alone. */
export async function releaseEndpointFile(file: string, token: string): Promise<void> {
  const record = await readRecord(file);
  if (record?.pid === process.pid && record.token === token) await rm(file, { force: true });
}
