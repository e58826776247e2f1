/**
 * The GGUF reader's byte layer: a sequential little-endian reader that streams a file through a small
 * window (no whole-file read, so multi-GB models cost only their header) and checks every declared
 * length or count against the bytes left in the file before anything is allocated for it, and the
 * typed errors the readers raise.
 */
import type { FileHandle } from "node:fs/promises";
import { GavelError, clip } from "../errors.js";
import { openRegularFile, RegularFileError } from "./regular-file.js";

/** ggml's GGUF_MAX_STRING_LENGTH / GGUF_MAX_ARRAY_ELEMENTS: llama.cpp rejects anything longer. */
const MAX_ITEMS = 1n << 30n;

/**
 * The longest string (key or value, in bytes) the reader accepts: 64 MiB. Metadata strings are short
 * (a chat template is tens of KB; a whole tokenizer.json a few MB), and a longer one is refused with
 * NOT_GGUF before it is read, so a forged length costs nothing (one near V8's string limit would cost
 * its size in memory, then fail).
 */
export const MAX_GGUF_STRING_BYTES = 64 * 1024 * 1024;

/** Read window; headers with big vocabularies (~5 MB) take a handful of reads. */
const CHUNK = 1 << 20;

/** A file that is not GGUF, or whose header cannot be parsed (truncated, absurd counts). */
export function notGguf(path: string, why: string): GavelError {
  return new GavelError(`${clip(path)}: not a valid GGUF file: ${why}`, "NOT_GGUF");
}

/** A GGUF header that parses but is inconsistent, or tensor data the file lacks. */
export function corrupt(path: string, why: string): GavelError {
  return new GavelError(`${clip(path)}: corrupt GGUF file: ${why}`, "CORRUPT_FILE");
}

/**
 * Opens a file for reading; a missing or unreadable one, or one that is not a regular file after
 * following symlinks (a directory, a FIFO, a device such as /dev/zero), is FILE_NOT_FOUND. Never
 * blocks on a FIFO (see regular-file.ts).
 */
export async function openFile(path: string): Promise<FileHandle> {
  try {
    return (await openRegularFile(path)).fh;
  } catch (e) {
    if (e instanceof RegularFileError) throw new GavelError(e.message, "FILE_NOT_FOUND", { cause: e });
    throw e;
  }
}

/** Sequential little-endian reader over a file, refilling a window as it goes. */
export class StreamReader {
  private buf = Buffer.alloc(CHUNK);
  /** Absolute file position of buf[0]. */
  private bufStart = 0;
  /** Valid bytes in buf. */
  private bufLen = 0;
  /** Read cursor within buf. */
  private pos = 0;

  constructor(
    private readonly fh: FileHandle,
    readonly fileSize: number,
    private readonly path: string,
  ) {}

  /** Absolute position of the cursor. */
  tell(): number {
    return this.bufStart + this.pos;
  }

  /** Bytes between the cursor and the end of the file. */
  remaining(): number {
    return this.fileSize - this.tell();
  }

  /**
   * Make `n` bytes available at the cursor. `n` must already be bounded by the caller (it is
   * checked against the file size here as well, so a truncated header reports NOT_GGUF).
   */
  async need(n: number): Promise<void> {
    if (this.bufLen - this.pos >= n) return;
    if (n > this.remaining()) throw notGguf(this.path, `header truncated at byte ${this.tell()}`);
    const keep = this.bufLen - this.pos;
    if (n > this.buf.length) {
      // Only reached for single items larger than the window (a huge string); n <= remaining().
      const bigger = Buffer.alloc(Math.max(n, this.buf.length * 2));
      this.buf.copy(bigger, 0, this.pos, this.bufLen);
      this.buf = bigger;
    } else {
      this.buf.copy(this.buf, 0, this.pos, this.bufLen);
    }
    this.bufStart += this.pos;
    this.pos = 0;
    this.bufLen = keep;
    while (this.bufLen < n) {
      const want = Math.min(this.buf.length - this.bufLen, this.fileSize - this.bufStart - this.bufLen);
      const { bytesRead } = await this.fh.read(this.buf, this.bufLen, want, this.bufStart + this.bufLen);
      if (bytesRead === 0) throw notGguf(this.path, `header truncated at byte ${this.tell()}`);
      this.bufLen += bytesRead;
    }
  }

  // The typed getters below assume need() was called for their size.
  u8(): number {
    return this.buf.readUInt8(this.pos++);
  }
  i8(): number {
    return this.buf.readInt8(this.pos++);
  }
  u16(): number {
    const v = this.buf.readUInt16LE(this.pos);
    this.pos += 2;
    return v;
  }
  i16(): number {
    const v = this.buf.readInt16LE(this.pos);
    this.pos += 2;
    return v;
  }
  u32(): number {
    const v = this.buf.readUInt32LE(this.pos);
    this.pos += 4;
    return v;
  }
  i32(): number {
    const v = this.buf.readInt32LE(this.pos);
    this.pos += 4;
    return v;
  }
  f32(): number {
    const v = this.buf.readFloatLE(this.pos);
    this.pos += 4;
    return v;
  }
  f64(): number {
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }
  u64(): bigint {
    const v = this.buf.readBigUInt64LE(this.pos);
    this.pos += 8;
    return v;
  }
  i64(): bigint {
    const v = this.buf.readBigInt64LE(this.pos);
    this.pos += 8;
    return v;
  }
  /** Decode `n` bytes as UTF-8 (need(n) first). */
  utf8(n: number): string {
    const s = this.buf.toString("utf8", this.pos, this.pos + n);
    this.pos += n;
    return s;
  }

  /**
   * A u64 length/count that must fit in the file (`unit` minimum bytes per counted item) and stay
   * under ggml's own 1 Gi cap on strings and arrays.
   */
  async count(what: string, unit: number): Promise<number> {
    await this.need(8);
    const at = this.tell();
    const n = this.u64();
    if (n > MAX_ITEMS || n > BigInt(Math.floor(this.remaining() / unit))) {
      throw notGguf(this.path, `${what} at byte ${at} declares ${n} items, more than the file can hold`);
    }
    return Number(n);
  }

  /**
   * A string whose length prefix and bytes are both in the window, or `undefined` (cursor
   * unchanged) when a refill is needed.
   */
  stringIfBuffered(): string | undefined {
    const avail = this.bufLen - this.pos;
    if (avail < 8) return undefined;
    const n = this.buf.readBigUInt64LE(this.pos);
    if (n > BigInt(avail - 8)) return undefined;
    const len = Number(n);
    this.pos += 8;
    return this.utf8(len);
  }

  /** A GGUF string: u64 byte length + UTF-8 bytes (no terminator), at most {@link MAX_GGUF_STRING_BYTES}. */
  async string(what: string): Promise<string> {
    const at = this.tell();
    const n = await this.count(`${what} length`, 1);
    if (n > MAX_GGUF_STRING_BYTES) throw notGguf(this.path, `${what} at byte ${at} is ${n} bytes long, more than the ${MAX_GGUF_STRING_BYTES} a metadata string may be`);
    await this.need(n);
    return this.utf8(n);
  }

  /**
   * The next `n` bytes (n ≤ remaining(), checked by the caller) in a fresh Uint8Array of their own
   * (offset 0, so any typed array may view it): what the window holds is copied, the rest is read
   * from the file straight into it, so a large array costs its size once.
   */
  async bytes(n: number): Promise<Uint8Array> {
    if (n > this.remaining()) throw notGguf(this.path, `header truncated at byte ${this.tell()}`);
    const out = new Uint8Array(n);
    const have = Math.min(n, this.bufLen - this.pos);
    out.set(this.buf.subarray(this.pos, this.pos + have));
    this.pos += have;
    if (have === n) return out;
    let at = this.tell();
    for (let got = have; got < n; ) {
      const { bytesRead } = await this.fh.read(out, got, n - got, at);
      if (bytesRead === 0) throw notGguf(this.path, `header truncated at byte ${at}`);
      got += bytesRead;
      at += bytesRead;
    }
    this.bufStart = at; // the window is spent: the next need() refills from here
    this.bufLen = 0;
    this.pos = 0;
    return out;
  }
}
