/**
 * GGUF writer. Metadata and tensor descriptors are encoded into one buffer; tensor data is then
 * streamed tensor by tensor (converted to its on-disk type on the fly), so writing needs little
 * more memory than the caller already holds. Files are written to a temporary name and renamed into
 * place, so a reader (or a concurrent writer of the same cache file) never sees a half-written file.
 */
import { endianness } from "node:os";
import { invalidArgument } from "../errors.js";
import { writeAll, writeFileDurable } from "../util/durable-file.js";
import { floatToHalf } from "../util/half.js";
import {
  GGML_MAX_DIMS,
  GGUF_DEFAULT_ALIGNMENT,
  GGUF_KEY_ALIGNMENT,
  GGUF_TYPE_ID,
  GGUF_VERSION,
  GgmlType,
  ggmlNBytes,
  ggmlTypeName,
  type GgufScalarTypeName,
  type GgufValue,
} from "./types.js";

/** Growable little-endian byte sink for the header. */
class ByteSink {
  buf = Buffer.allocUnsafe(1 << 16);
  len = 0;

  private reserve(n: number): void {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const b = Buffer.allocUnsafe(size);
    this.buf.copy(b, 0, 0, this.len);
    this.buf = b;
  }
  u8(v: number): void {
    this.reserve(1);
    this.buf.writeUInt8(v, this.len++);
  }
  i8(v: number): void {
    this.reserve(1);
    this.buf.writeInt8(v, this.len++);
  }
  u16(v: number): void {
    this.reserve(2);
    this.len = this.buf.writeUInt16LE(v, this.len);
  }
  i16(v: number): void {
    this.reserve(2);
    this.len = this.buf.writeInt16LE(v, this.len);
  }
  u32(v: number): void {
    this.reserve(4);
    this.len = this.buf.writeUInt32LE(v, this.len);
  }
  i32(v: number): void {
    this.reserve(4);
    this.len = this.buf.writeInt32LE(v, this.len);
  }
  f32(v: number): void {
    this.reserve(4);
    this.len = this.buf.writeFloatLE(v, this.len);
  }
  f64(v: number): void {
    this.reserve(8);
    this.len = this.buf.writeDoubleLE(v, this.len);
  }
  u64(v: bigint | number): void {
    this.reserve(8);
    this.len = this.buf.writeBigUInt64LE(BigInt(v), this.len);
  }
  i64(v: bigint | number): void {
    this.reserve(8);
    this.len = this.buf.writeBigInt64LE(BigInt(v), this.len);
  }
  str(s: string): void {
    const n = Buffer.byteLength(s, "utf8");
    this.reserve(8 + n);
    this.len = this.buf.writeBigUInt64LE(BigInt(n), this.len);
    this.len += this.buf.write(s, this.len, n, "utf8");
  }
  pad(alignment: number): void {
    const target = Math.ceil(this.len / alignment) * alignment;
    this.reserve(target - this.len);
    this.buf.fill(0, this.len, target);
    this.len = target;
  }
}

function writeScalar(sink: ByteSink, type: GgufScalarTypeName, v: unknown): void {
  switch (type) {
    case "u8":
      return sink.u8(v as number);
    case "i8":
      return sink.i8(v as number);
    case "bool":
      return sink.i8(v ? 1 : 0);
    case "u16":
      return sink.u16(v as number);
    case "i16":
      return sink.i16(v as number);
    case "u32":
      return sink.u32(v as number);
    case "i32":
      return sink.i32(v as number);
    case "f32":
      return sink.f32(v as number);
    case "f64":
      return sink.f64(v as number);
    case "u64":
      return sink.u64(v as bigint);
    case "i64":
      return sink.i64(v as bigint);
    case "str":
      return sink.str(v as string);
  }
}

/** Tensor element types the writer can encode from float32 input. */
export type GgufWritableType = GgmlType.F32 | GgmlType.F16;

/** Data of a tensor to write: float32 values (converted to the target type) or raw encoded bytes. */
export type GgufTensorData = Float32Array | Uint8Array;

interface PendingTensor {
  name: string;
  dims: number[];
  type: GgmlType;
  nBytes: number;
  data: GgufTensorData | (() => GgufTensorData);
}

/**
 * Builds a GGUF v3 file: typed metadata plus tensors, written with {@link GgufWriter.write}.
 *
 * @example
 * const w = new GgufWriter();
 * w.set("general.architecture", str("gavel-projections"));
 * w.set("gavel.layer", u32(12));
 * w.addTensor("W_q", [nEmbd, r], wq);            // F32 by default
 * w.addTensor("tok", [64, 1000], emb, GgmlType.F16);
 * await w.write("/path/out.gguf");
 */
export class GgufWriter {
  private readonly metadata = new Map<string, GgufValue>();
  private readonly tensors: PendingTensor[] = [];
  private readonly names = new Set<string>();

  /**
   * Set (or replace) a metadata key. Keys keep their first insertion order. Use the typing helpers
   * (`u32`, `f32`, `str`, `arr`, ...) from `./types.js` to build values.
   * Setting `general.alignment` (a `u32` power of two) changes the data alignment.
   */
  set(key: string, value: GgufValue): this {
    if (typeof key !== "string" || key.length === 0) throw invalidArgument("GGUF metadata key must be a non-empty string");
    if (key === GGUF_KEY_ALIGNMENT) {
      if (value.type !== "u32" || value.value === 0 || (value.value & (value.value - 1)) !== 0) {
        throw invalidArgument(`${GGUF_KEY_ALIGNMENT} must be a u32 power of two`);
      }
    }
    if (value.type === "arr" && (value.itemType as string) === "arr") {
      throw invalidArgument(`nested arrays are not supported (key '${key}')`);
    }
    this.metadata.set(key, value);
    return this;
  }

  /** Set several keys at once, in object order. */
  setAll(entries: Record<string, GgufValue> | Iterable<[string, GgufValue]>): this {
    const it = Symbol.iterator in entries ? (entries as Iterable<[string, GgufValue]>) : Object.entries(entries);
    for (const [k, v] of it) this.set(k, v);
    return this;
  }

  /** Remove a metadata key. */
  delete(key: string): this {
    this.metadata.delete(key);
    return this;
  }

  /** Current metadata value of `key`. */
  get(key: string): GgufValue | undefined {
    return this.metadata.get(key);
  }

  /** Alignment the data section will use. */
  get alignment(): number {
    const v = this.metadata.get(GGUF_KEY_ALIGNMENT);
    return v?.type === "u32" ? v.value : GGUF_DEFAULT_ALIGNMENT;
  }

  /**
   * Add a tensor.
   *
   * @param name unique tensor name
   * @param dims dimensions in ggml `ne` order (`dims[0]` contiguous), 1 to 4 of them. A row-major
   *   matrix `M[rows][cols]` is `[cols, rows]`.
   * @param data float32 values (converted to `type`; F32 and F16 supported), or a `Uint8Array`
   *   of already-encoded bytes of `type` (any ggml type). May be a function returning either; it is
   *   called while writing, so large generated tensors need not all be alive at once.
   * @param type on-disk element type, default F32
   */
  addTensor(
    name: string,
    dims: readonly number[],
    data: GgufTensorData | (() => GgufTensorData),
    type: GgmlType = GgmlType.F32,
  ): this {
    if (typeof name !== "string" || name.length === 0) throw invalidArgument("tensor name must be a non-empty string");
    if (this.names.has(name)) throw invalidArgument(`duplicate tensor name '${name}'`);
    if (dims.length < 1 || dims.length > GGML_MAX_DIMS || dims.some((d) => !Number.isSafeInteger(d) || d < 0)) {
      throw invalidArgument(`tensor '${name}': dims must be 1..${GGML_MAX_DIMS} non-negative integers, got [${dims}]`);
    }
    const n = dims.reduce((a, b) => a * b, 1);
    const nBytes = ggmlNBytes(type, n);
    if (nBytes === undefined) {
      throw invalidArgument(`tensor '${name}': ${n} elements are not a whole number of ${ggmlTypeName(type)} blocks`);
    }
    if (typeof data !== "function") checkData(name, data, type, n, nBytes);
    this.names.add(name);
    this.tensors.push({ name, dims: [...dims], type, nBytes, data });
    return this;
  }

  /** Encode the header (everything before the data section), padded to the alignment. */
  private encodeHeader(): Buffer {
    const alignment = this.alignment;
    const sink = new ByteSink();
    sink.buf.write("GGUF", 0, "latin1");
    sink.len = 4;
    sink.u32(GGUF_VERSION);
    sink.i64(this.tensors.length);
    sink.i64(this.metadata.size);
    for (const [key, v] of this.metadata) {
      sink.str(key);
      sink.i32(GGUF_TYPE_ID[v.type]);
      if (v.type === "arr") {
        sink.i32(GGUF_TYPE_ID[v.itemType]);
        sink.u64(v.value.length);
        for (const item of v.value) writeScalar(sink, v.itemType, item);
      } else {
        writeScalar(sink, v.type, v.value);
      }
    }
    let offset = 0;
    for (const t of this.tensors) {
      sink.str(t.name);
      sink.u32(t.dims.length);
      for (const d of t.dims) sink.i64(d);
      sink.i32(t.type);
      sink.u64(offset);
      // llama.cpp requires tensors packed in order, each padded to the alignment.
      offset += Math.ceil(t.nBytes / alignment) * alignment;
    }
    sink.pad(alignment);
    return sink.buf.subarray(0, sink.len);
  }

  /**
   * Write the file. It is written as `path.<random>.tmp`, fsynced and renamed onto `path` when
   * complete (then the directory is fsynced), so a crash leaves the old file or the new one.
   *
   * @throws GavelError `INVALID_ARGUMENT` when a lazily supplied tensor has the wrong size
   */
  async write(path: string): Promise<void> {
    if (endianness() !== "LE") throw invalidArgument("GGUF writing needs a little-endian host");
    const alignment = this.alignment;
    const header = this.encodeHeader();
    // Whole or not at all, and durable: util/durable-file writes a temp file, fsyncs, renames.
    await writeFileDurable(path, async (fh) => {
      let pos = 0;
      const put = async (bytes: Uint8Array) => {
        await writeAll(fh, bytes, pos);
        pos += bytes.byteLength;
      };
      await put(header);
      const zeros = new Uint8Array(alignment);
      for (const t of this.tensors) {
        const data = typeof t.data === "function" ? t.data() : t.data;
        checkData(t.name, data, t.type, t.dims.reduce((a, b) => a * b, 1), t.nBytes);
        await put(encode(data, t.type));
        const padded = Math.ceil(t.nBytes / alignment) * alignment;
        if (padded > t.nBytes) await put(zeros.subarray(0, padded - t.nBytes));
      }
    });
  }
}

function checkData(name: string, data: GgufTensorData, type: GgmlType, n: number, nBytes: number): void {
  if (data instanceof Float32Array) {
    if (type !== GgmlType.F32 && type !== GgmlType.F16) {
      throw invalidArgument(`tensor '${name}': float32 input can only be written as F32 or F16, not ${ggmlTypeName(type)}`);
    }
    if (data.length !== n) throw invalidArgument(`tensor '${name}': ${data.length} values for ${n} elements`);
  } else if (data instanceof Uint8Array) {
    if (data.byteLength !== nBytes) {
      throw invalidArgument(`tensor '${name}': ${data.byteLength} bytes of ${ggmlTypeName(type)} data, expected ${nBytes}`);
    }
  } else {
    throw invalidArgument(`tensor '${name}': data must be a Float32Array or Uint8Array`);
  }
}

function encode(data: GgufTensorData, type: GgmlType): Uint8Array {
  if (data instanceof Uint8Array) return data;
  if (type === GgmlType.F32) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const h = floatToHalf(data);
  return new Uint8Array(h.buffer, h.byteOffset, h.byteLength);
}
