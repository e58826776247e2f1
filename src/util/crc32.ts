/**
 * CRC-32 (IEEE 802.3, zlib's): node's native `zlib.crc32` where the runtime has it (Node ≥ 20.15),
 * else the table-driven reference, which gives the same values. Used to tell a torn or damaged record
 * of a derived file (the bank's lexicon) from a whole one.
 */
import * as zlib from "node:zlib";

let table: Uint32Array | undefined;

function crcTable(): Uint32Array {
  if (table) return table;
  table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
}

/** CRC-32 of `bytes` in plain JavaScript (the reference the native one is checked against). */
export function crc32Js(bytes: Uint8Array): number {
  const t = crcTable();
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = t[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

const native = (zlib as { crc32?: (data: Uint8Array) => number }).crc32;

/** CRC-32 of `bytes`, as an unsigned 32-bit integer. */
export function crc32(bytes: Uint8Array): number {
  return native ? native(bytes) >>> 0 : crc32Js(bytes);
}
