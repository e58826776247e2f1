/**
 * GGUF reader. The header is parsed by streaming the file through a small window (no whole-file
 * read, so multi-GB models cost only their header), and every declared length or count is checked
 * against the bytes actually left in the file before anything is allocated for it: a corrupt or
 * hostile file fails with a typed error instead of an out-of-memory crash.
 */
import { open, type FileHandle } from "node:fs/promises";
import { GavelError } from "../errors.js";
import {
  GGML_MAX_DIMS,
  GGML_TYPE_SIZE,
  GGUF_DEFAULT_ALIGNMENT,
  GGUF_KEY_ALIGNMENT,
  GGUF_TYPE_NAME,
  GgmlType,
  ggmlNBytes,
  ggmlTypeName,
  type GgufHeader,
  type GgufScalarTypeName,
  type GgufTensorInfo,
  type GgufTypeName,
  type GgufValue,
} from "./types.js";

/** ggml's GGUF_MAX_STRING_LENGTH / GGUF_MAX_ARRAY_ELEMENTS: llama.cpp rejects anything longer. */
const MAX_ITEMS = 1n << 30n;

/** Read window; headers with big vocabularies (~5 MB) take a handful of reads. */
const CHUNK = 1 << 20;

/** Minimum encoded size of each scalar type, used to bound array counts before allocating. */
const MIN_SIZE: Readonly<Record<GgufScalarTypeName, number>> = {
  u8: 1,
  i8: 1,
  bool: 1,
  u16: 2,
  i16: 2,
  u32: 4,
  i32: 4,
  f32: 4,
  u64: 8,
  i64: 8,
  f64: 8,
  str: 8, // length prefix only
};

function notGguf(path: string, why: string): GavelError {
  return new GavelError(`${path}: not a valid GGUF file: ${why}`, "NOT_GGUF");
}

function corrupt(path: string, why: string): GavelError {
  return new GavelError(`${path}: corrupt GGUF file: ${why}`, "CORRUPT_FILE");
}

async function openFile(path: string): Promise<FileHandle> {
  try {
    return await open(path, "r");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new GavelError(
      code === "ENOENT" ? `${path}: file not found` : `${path}: cannot open (${code ?? String(e)})`,
      "FILE_NOT_FOUND",
      { cause: e },
    );
  }
}

/** Sequential little-endian reader over a file, refilling a window as it goes. */
class StreamReader {
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

  /** A GGUF string: u64 byte length + UTF-8 bytes (no terminator). */
  async string(what: string): Promise<string> {
    const n = await this.count(`${what} length`, 1);
    await this.need(n);
    return this.utf8(n);
  }
}

async function readScalar(r: StreamReader, type: GgufScalarTypeName, what: string): Promise<GgufValue["value"]> {
  if (type === "str") return r.string(what);
  await r.need(MIN_SIZE[type]);
  return readBufferedScalar(r, type);
}

/** Read a fixed-size scalar whose bytes are already in the window. */
function readBufferedScalar(r: StreamReader, type: Exclude<GgufScalarTypeName, "str">): GgufValue["value"] {
  switch (type) {
    case "u8":
      return r.u8();
    case "i8":
      return r.i8();
    case "bool":
      return r.i8() !== 0;
    case "u16":
      return r.u16();
    case "i16":
      return r.i16();
    case "u32":
      return r.u32();
    case "i32":
      return r.i32();
    case "f32":
      return r.f32();
    case "f64":
      return r.f64();
    case "u64":
      return r.u64();
    case "i64":
      return r.i64();
  }
}

async function readTypeId(r: StreamReader, path: string, what: string): Promise<GgufTypeName> {
  await r.need(4);
  const id = r.i32();
  const name = GGUF_TYPE_NAME[id];
  if (name === undefined) throw notGguf(path, `${what} has unknown value type ${id}`);
  return name;
}

async function readValue(r: StreamReader, path: string, key: string): Promise<GgufValue> {
  const type = await readTypeId(r, path, `key '${key}'`);
  if (type !== "arr") {
    const t = type;
    return { type: t, value: await readScalar(r, t, `value of '${key}'`) } as GgufValue;
  }
  const itemType = await readTypeId(r, path, `array '${key}'`);
  if (itemType === "arr") throw notGguf(path, `array '${key}' nests arrays, which GGUF readers do not support`);
  const it: GgufScalarTypeName = itemType;
  const n = await r.count(`array '${key}'`, MIN_SIZE[it]);
  const out: unknown[] = new Array(n);
  if (it === "str") {
    for (let i = 0; i < n; i++) {
      // Token lists and merges have 150k+ items: decode synchronously while the string is already
      // in the window, and only take the async refill path at window boundaries.
      out[i] = r.stringIfBuffered() ?? (await r.string(`item of '${key}'`));
    }
  } else {
    // n * size <= remaining() was checked by count(), so this window is bounded by the file.
    await r.need(n * MIN_SIZE[it]);
    for (let i = 0; i < n; i++) out[i] = readBufferedScalar(r, it);
  }
  return { type: "arr", itemType: it, value: out } as GgufValue;
}

/**
 * Read the header (metadata and tensor descriptors) of a GGUF file without reading tensor data.
 *
 * @param path file to read
 * @returns the header; tensor `offset`s are relative to `dataOffset`
 * @throws GavelError `FILE_NOT_FOUND` when the file cannot be opened; `NOT_GGUF` for a bad magic,
 *   an unsupported version (1, > 3, or big-endian), a truncated header, or counts/lengths larger
 *   than the file can hold; `CORRUPT_FILE` when the header parses but is inconsistent (duplicate
 *   names, bad alignment, unknown tensor type, tensor data outside the file)
 */
export async function readGgufHeader(path: string): Promise<GgufHeader> {
  const fh = await openFile(path);
  try {
    const fileSize = (await fh.stat()).size;
    const r = new StreamReader(fh, fileSize, path);
    if (fileSize < 4) throw notGguf(path, "file too short for the GGUF magic");
    await r.need(4);
    const magic = r.utf8(4);
    if (magic !== "GGUF") throw notGguf(path, `bad magic ${JSON.stringify(magic)}`);
    await r.need(4);
    const version = r.u32();
    if ((version & 0xffff) === 0 && version !== 0) {
      throw notGguf(path, `version ${version} looks byte-swapped (big-endian GGUF is not supported)`);
    }
    if (version < 2 || version > 3) throw notGguf(path, `unsupported GGUF version ${version}`);

    // Each tensor descriptor takes at least 8 (name len) + 4 (n_dims) + 4 (type) + 8 (offset)
    // bytes, each KV at least 8 (key len) + 4 (type) + 1; bound the counts by that.
    await r.need(16);
    const nTensorsBig = r.i64();
    const nKvBig = r.i64();
    if (nTensorsBig < 0n || nTensorsBig > BigInt(Math.floor(r.remaining() / 24))) {
      throw notGguf(path, `absurd tensor count ${nTensorsBig}`);
    }
    if (nKvBig < 0n || nKvBig > BigInt(Math.floor(r.remaining() / 13))) {
      throw notGguf(path, `absurd metadata count ${nKvBig}`);
    }
    const nTensors = Number(nTensorsBig);
    const nKv = Number(nKvBig);

    const metadata = new Map<string, GgufValue>();
    for (let i = 0; i < nKv; i++) {
      const key = await r.string(`key #${i}`);
      if (metadata.has(key)) throw corrupt(path, `duplicate metadata key '${key}'`);
      metadata.set(key, await readValue(r, path, key));
    }

    let alignment = GGUF_DEFAULT_ALIGNMENT;
    const al = metadata.get(GGUF_KEY_ALIGNMENT);
    if (al !== undefined) {
      if (al.type !== "u32") throw corrupt(path, `${GGUF_KEY_ALIGNMENT} has type ${al.type}, expected u32`);
      alignment = al.value;
      if (alignment === 0 || (alignment & (alignment - 1)) !== 0) {
        throw corrupt(path, `alignment ${alignment} is not a power of two`);
      }
    }

    const raw: { name: string; dims: number[]; type: number; offset: bigint }[] = [];
    const names = new Set<string>();
    for (let i = 0; i < nTensors; i++) {
      const name = await r.string(`tensor #${i} name`);
      if (names.has(name)) throw corrupt(path, `duplicate tensor name '${name}'`);
      names.add(name);
      await r.need(4);
      const nDims = r.u32();
      if (nDims > GGML_MAX_DIMS) throw notGguf(path, `tensor '${name}' has ${nDims} dimensions (max ${GGML_MAX_DIMS})`);
      await r.need(nDims * 8 + 4 + 8);
      const dims: number[] = [];
      for (let d = 0; d < nDims; d++) {
        const ne = r.i64();
        if (ne < 0n || ne > BigInt(Number.MAX_SAFE_INTEGER)) {
          throw notGguf(path, `tensor '${name}' has dimension ${ne}`);
        }
        dims.push(Number(ne));
      }
      const type = r.i32();
      const offset = r.u64();
      raw.push({ name, dims, type, offset });
    }

    // Data section starts at the next multiple of the alignment (ggml pads even when there are
    // no tensors when writing; a reader must not require the padding bytes then).
    const headerEnd = r.tell();
    const dataOffset = Math.ceil(headerEnd / alignment) * alignment;

    const tensors: GgufTensorInfo[] = raw.map(({ name, dims, type, offset }) => {
      if (GGML_TYPE_SIZE[type as GgmlType] === undefined) throw corrupt(path, `tensor '${name}' has unknown ggml type ${type}`);
      let nElements = 1;
      for (const d of dims) nElements *= d;
      if (!Number.isSafeInteger(nElements)) throw corrupt(path, `tensor '${name}' is absurdly large`);
      const blck = GGML_TYPE_SIZE[type as GgmlType]![0];
      if (dims.length > 0 && dims[0] % blck !== 0) {
        throw corrupt(path, `tensor '${name}' rows are not a whole number of ${ggmlTypeName(type)} blocks`);
      }
      const nBytes = ggmlNBytes(type, nElements);
      if (nBytes === undefined) {
        throw corrupt(path, `tensor '${name}' of type ${ggmlTypeName(type)} has a size that is not a whole number of blocks`);
      }
      if (offset % BigInt(alignment) !== 0n) throw corrupt(path, `tensor '${name}' offset ${offset} is not aligned to ${alignment}`);
      if (offset + BigInt(dataOffset) + BigInt(nBytes) > BigInt(fileSize)) {
        throw corrupt(path, `tensor '${name}' data (${nBytes} bytes at ${offset}) lies beyond the end of the file`);
      }
      return { name, dims, type: type as GgmlType, offset: Number(offset), nElements, nBytes };
    });

    return { version, metadata, tensors, dataOffset, alignment, fileSize };
  } finally {
    await fh.close();
  }
}

/** IEEE half → float, via a table for the 65536 possible inputs (fast on big tensors). */
let halfTable: Float32Array | undefined;
function getHalfTable(): Float32Array {
  if (halfTable) return halfTable;
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const s = h & 0x8000 ? -1 : 1;
    const e = (h >> 10) & 0x1f;
    const m = h & 0x3ff;
    if (e === 0) t[h] = s * m * 2 ** -24;
    else if (e === 31) t[h] = m ? NaN : s * Infinity;
    else t[h] = s * (1 + m / 1024) * 2 ** (e - 15);
  }
  halfTable = t;
  return t;
}

/** Convert IEEE binary16 values to float32. */
export function halfToFloat(src: Uint16Array, dst = new Float32Array(src.length)): Float32Array {
  const t = getHalfTable();
  for (let i = 0; i < src.length; i++) dst[i] = t[src[i]];
  return dst;
}

/** Tensor types {@link readGgufTensor} can decode to float32. */
export const READABLE_TENSOR_TYPES: readonly GgmlType[] = [GgmlType.F32, GgmlType.F16, GgmlType.BF16, GgmlType.Q8_0];

/**
 * Read one tensor's data as float32 values in stored (`ne`) order.
 *
 * Supports F32, F16, BF16 and Q8_0 (dequantised: each block of 32 values is an f16 scale and 32
 * int8s).
 *
 * @param path the file the header came from
 * @param header result of {@link readGgufHeader} for that file
 * @param name tensor name
 * @throws GavelError `INVALID_ARGUMENT` for an unknown tensor name or an unsupported type;
 *   `FILE_NOT_FOUND` when the file is gone; `CORRUPT_FILE` when the file is shorter than the header
 *   says (it changed since the header was read)
 */
export async function readGgufTensor(path: string, header: GgufHeader, name: string): Promise<Float32Array> {
  const info = header.tensors.find((t) => t.name === name);
  if (!info) throw new GavelError(`${path}: no tensor named '${name}'`, "INVALID_ARGUMENT");
  if (!READABLE_TENSOR_TYPES.includes(info.type)) {
    throw new GavelError(
      `${path}: tensor '${name}' has type ${ggmlTypeName(info.type)}; only F32, F16, BF16 and Q8_0 can be read`,
      "INVALID_ARGUMENT",
    );
  }
  const bytes = await readRange(path, header.dataOffset + info.offset, info.nBytes);
  return decodeTensor(info.type, bytes, info.nElements);
}

/**
 * Read a tensor's raw bytes (any type), e.g. to copy it into another file unchanged.
 * Errors as in {@link readGgufTensor}.
 */
export async function readGgufTensorBytes(path: string, header: GgufHeader, name: string): Promise<Uint8Array> {
  const info = header.tensors.find((t) => t.name === name);
  if (!info) throw new GavelError(`${path}: no tensor named '${name}'`, "INVALID_ARGUMENT");
  return readRange(path, header.dataOffset + info.offset, info.nBytes);
}

async function readRange(path: string, position: number, length: number): Promise<Uint8Array> {
  const fh = await openFile(path);
  try {
    // 8-byte aligned backing store so the F32/F16 views below need no copy.
    const out = new Uint8Array(new ArrayBuffer(Math.ceil(length / 8) * 8), 0, length);
    let done = 0;
    while (done < length) {
      const { bytesRead } = await fh.read(out, done, length - done, position + done);
      if (bytesRead === 0) throw corrupt(path, `tensor data truncated at byte ${position + done}`);
      done += bytesRead;
    }
    return out;
  } finally {
    await fh.close();
  }
}

function decodeTensor(type: GgmlType, bytes: Uint8Array, n: number): Float32Array {
  switch (type) {
    case GgmlType.F32:
      return new Float32Array(bytes.buffer, bytes.byteOffset, n);
    case GgmlType.F16:
      return halfToFloat(new Uint16Array(bytes.buffer, bytes.byteOffset, n));
    case GgmlType.BF16: {
      const src = new Uint16Array(bytes.buffer, bytes.byteOffset, n);
      const out = new Float32Array(n);
      const u = new Uint32Array(out.buffer);
      for (let i = 0; i < n; i++) u[i] = src[i] << 16;
      return out;
    }
    case GgmlType.Q8_0: {
      const out = new Float32Array(n);
      const half = getHalfTable();
      const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      const q = new Int8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      for (let b = 0, o = 0; o < n; b += 34, o += 32) {
        const d = half[dv.getUint16(b, true)];
        for (let j = 0; j < 32; j++) out[o + j] = d * q[b + 2 + j];
      }
      return out;
    }
    default:
      throw new GavelError(`cannot decode ${ggmlTypeName(type)}`, "INVALID_ARGUMENT");
  }
}

/**
 * Plain value of a metadata key, or `undefined` when absent. 64-bit integers come back as `bigint`.
 */
export function ggufMeta(header: GgufHeader, key: string): GgufValue["value"] | undefined {
  return header.metadata.get(key)?.value;
}

/**
 * A numeric metadata value as a JS number (u64/i64 converted when safe), or `undefined` when the
 * key is absent or not a number.
 */
export function ggufMetaNumber(header: GgufHeader, key: string): number | undefined {
  const v = header.metadata.get(key);
  if (!v || v.type === "arr" || v.type === "str" || v.type === "bool") return undefined;
  if (typeof v.value === "bigint") {
    return v.value <= BigInt(Number.MAX_SAFE_INTEGER) && v.value >= BigInt(Number.MIN_SAFE_INTEGER)
      ? Number(v.value)
      : undefined;
  }
  return v.value;
}

/** A string metadata value, or `undefined` when absent or not a string. */
export function ggufMetaString(header: GgufHeader, key: string): string | undefined {
  const v = header.metadata.get(key);
  return v?.type === "str" ? v.value : undefined;
}
