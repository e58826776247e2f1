/**
 * GGUF header reader: magic, version, metadata and tensor descriptors, streamed (stream.ts) and
 * checked, without reading tensor data (tensors.ts reads that).
 */
import {
  GGML_MAX_DIMS,
  GGML_TYPE_SIZE,
  GGUF_DEFAULT_ALIGNMENT,
  GGUF_KEY_ALIGNMENT,
  GgmlType,
  ggmlNBytes,
  ggmlTypeName,
  type GgufHeader,
  type GgufTensorInfo,
  type GgufValue,
} from "./types.js";
import { readValue } from "./metadata.js";
import { corrupt, notGguf, openFile, StreamReader } from "./stream.js";
import { quoteForMessage } from "./regular-file.js";

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
    const { version, nTensors, nKv } = await readPreamble(r, path);
    const metadata = new Map<string, GgufValue>();
    for (let i = 0; i < nKv; i++) {
      const key = await r.string(`key #${i}`);
      if (metadata.has(key)) throw corrupt(path, `duplicate metadata key ${quoteForMessage(key)}`);
      metadata.set(key, await readValue(r, path, key));
    }
    const alignment = alignmentOf(metadata, path);
    const raw: RawTensorInfo[] = [];
    const names = new Set<string>();
    for (let i = 0; i < nTensors; i++) {
      const t = await readTensorInfo(r, path, i);
      if (names.has(t.name)) throw corrupt(path, `duplicate tensor name ${quoteForMessage(t.name)}`);
      names.add(t.name);
      raw.push(t);
    }
    // Data section starts at the next multiple of the alignment (ggml pads even when there are
    // no tensors when writing; a reader must not require the padding bytes then).
    const dataOffset = Math.ceil(r.tell() / alignment) * alignment;
    const tensors = raw.map((t) => checkTensor(t, { path, alignment, dataOffset, fileSize }));
    return { version, metadata, tensors, dataOffset, alignment, fileSize };
  } finally {
    await fh.close();
  }
}

/** Magic, version, and the tensor and metadata counts (each bounded by the bytes left). */
async function readPreamble(r: StreamReader, path: string): Promise<{ version: number; nTensors: number; nKv: number }> {
  if (r.fileSize < 4) throw notGguf(path, "file too short for the GGUF magic");
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
  return { version, nTensors: Number(nTensorsBig), nKv: Number(nKvBig) };
}

/** The data section's alignment: general.alignment (a u32 power of two) or the default. */
function alignmentOf(metadata: Map<string, GgufValue>, path: string): number {
  const al = metadata.get(GGUF_KEY_ALIGNMENT);
  if (al === undefined) return GGUF_DEFAULT_ALIGNMENT;
  if (al.type !== "u32") throw corrupt(path, `${GGUF_KEY_ALIGNMENT} has type ${al.type}, expected u32`);
  const alignment = al.value;
  if (alignment === 0 || (alignment & (alignment - 1)) !== 0) {
    throw corrupt(path, `alignment ${alignment} is not a power of two`);
  }
  return alignment;
}

/** A tensor descriptor as stored, before its type, size and offset are checked. */
interface RawTensorInfo {
  name: string;
  dims: number[];
  type: number;
  offset: bigint;
}

/** Tensor descriptor #i: name, dimensions, ggml type, data offset. */
async function readTensorInfo(r: StreamReader, path: string, i: number): Promise<RawTensorInfo> {
  const name = await r.string(`tensor #${i} name`);
  await r.need(4);
  const nDims = r.u32();
  if (nDims > GGML_MAX_DIMS) throw notGguf(path, `tensor ${quoteForMessage(name)} has ${nDims} dimensions (max ${GGML_MAX_DIMS})`);
  await r.need(nDims * 8 + 4 + 8);
  const dims: number[] = [];
  for (let d = 0; d < nDims; d++) {
    const ne = r.i64();
    if (ne < 0n || ne > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw notGguf(path, `tensor ${quoteForMessage(name)} has dimension ${ne}`);
    }
    dims.push(Number(ne));
  }
  const type = r.i32();
  const offset = r.u64();
  return { name, dims, type, offset };
}

/** A descriptor whose type is known, whose size is whole blocks, and whose data is aligned and inside the file. */
function checkTensor(
  { name, dims, type, offset }: RawTensorInfo,
  file: { path: string; alignment: number; dataOffset: number; fileSize: number },
): GgufTensorInfo {
  const { path, alignment, dataOffset, fileSize } = file;
  if (GGML_TYPE_SIZE[type as GgmlType] === undefined) throw corrupt(path, `tensor ${quoteForMessage(name)} has unknown ggml type ${type}`);
  let nElements = 1;
  for (const d of dims) nElements *= d;
  if (!Number.isSafeInteger(nElements)) throw corrupt(path, `tensor ${quoteForMessage(name)} is absurdly large`);
  const blck = GGML_TYPE_SIZE[type as GgmlType]![0];
  if (dims.length > 0 && dims[0] % blck !== 0) {
    throw corrupt(path, `tensor ${quoteForMessage(name)} rows are not a whole number of ${ggmlTypeName(type)} blocks`);
  }
  const nBytes = ggmlNBytes(type, nElements);
  if (nBytes === undefined) {
    throw corrupt(path, `tensor ${quoteForMessage(name)} of type ${ggmlTypeName(type)} has a size that is not a whole number of blocks`);
  }
  if (offset % BigInt(alignment) !== 0n) throw corrupt(path, `tensor ${quoteForMessage(name)} offset ${offset} is not aligned to ${alignment}`);
  if (offset + BigInt(dataOffset) + BigInt(nBytes) > BigInt(fileSize)) {
    throw corrupt(path, `tensor ${quoteForMessage(name)} data (${nBytes} bytes at ${offset}) lies beyond the end of the file`);
  }
  return { name, dims, type: type as GgmlType, offset: Number(offset), nElements, nBytes };
}
