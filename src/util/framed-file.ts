/**
 * The framing of the bank's index files (src/bank/glance-index.ts, src/bank/key-ivf.ts): an 8-byte
 * magic, the JSON header's length (uint32, little-endian), the header, the payload arrays one after
 * another, then a SHA-256 of everything before it. Each file's own module checks its header's fields
 * and its payload's size.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { writeFileDurable } from "./durable-file.js";
import { readRegularFile, RegularFileError } from "./regular-file.js";

/** The bytes of a typed array, in place. */
export function bytesOf(a: ArrayBufferView): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

/**
 * Writes `magic` (8 latin1 characters), `header` as JSON and `payload`, checksummed, durably (temp
 * file, fsync, rename), the file created with `mode` (a bank's files: 0o600).
 */
export async function writeFramedFile(path: string, magic: string, header: unknown, payload: readonly ArrayBufferView[], mode = 0o600): Promise<void> {
  const json = Buffer.from(JSON.stringify(header));
  const head = Buffer.alloc(12);
  head.write(magic, 0, "latin1");
  head.writeUInt32LE(json.length, 8);
  const parts = [head, json, ...payload.map(bytesOf)];
  const hash = createHash("sha256");
  for (const p of parts) hash.update(p);
  await writeFileDurable(path, [...parts, hash.digest()], { mode });
}

/**
 * The header and the payload (a copy, aligned for typed views) of a framed file's bytes, or why they
 * cannot be read: `not a ${what} file (magic)`, `checksum mismatch`, `truncated header` or
 * `malformed header` (not a JSON object).
 */
export function readFramedFile(bytes: Buffer, magic: string, what: string): { header: Record<string, unknown>; payload: Uint8Array<ArrayBuffer> } | string {
  if (bytes.length < 12 + 32 || bytes.toString("latin1", 0, 8) !== magic) return `not a ${what} file (magic)`;
  const body = bytes.subarray(0, bytes.length - 32);
  if (!createHash("sha256").update(body).digest().equals(bytes.subarray(bytes.length - 32))) return "checksum mismatch";
  const hlen = bytes.readUInt32LE(8);
  if (12 + hlen > body.length) return "truncated header";
  let header: unknown;
  try {
    header = JSON.parse(body.toString("utf8", 12, 12 + hlen));
  } catch {
    return "malformed header";
  }
  if (header === null || typeof header !== "object") return "malformed header";
  const payload = new Uint8Array(body.length - 12 - hlen);
  payload.set(body.subarray(12 + hlen));
  return { header: header as Record<string, unknown>, payload };
}

/** The largest derived cache read back (a key IVF over 100K skills is a few hundred MB). */
export const CACHE_MAX_BYTES = 2 ** 31 - 1;

/**
 * A derived cache's bytes, read as a bounded regular file: null when it is missing, or a string
 * saying why it cannot be used (a FIFO, a device, a directory, a symlink loop, past `maxBytes`),
 * never a blocked read or an unbounded one. The caller rebuilds it in both cases.
 */
export async function readCacheFile(path: string, maxBytes = CACHE_MAX_BYTES): Promise<Buffer | null | string> {
  try {
    return await readRegularFile(path, maxBytes);
  } catch (err) {
    if (!(err instanceof RegularFileError)) throw err;
    return err.reason === "missing" ? null : err.message;
  }
}

/**
 * Saves a rebuilt cache, or leaves it unsaved when its path cannot hold it (a directory put in its
 * place): a cache is never the bank's truth, so the next open rebuilds it again. Other failures
 * (a full disk, permissions) still throw.
 */
export async function saveCache(path: string, save: () => Promise<void>): Promise<void> {
  try {
    await save();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EISDIR" || code === "ENOTEMPTY" || code === "EEXIST" || code === "ELOOP" || code === "ENOTDIR") return;
    throw err;
  }
}
