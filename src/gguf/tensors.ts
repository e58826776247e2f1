/**
 * GGUF tensor data: one tensor's bytes read by range, and decoded to float32 (F32, F16, BF16, Q8_0).
 */
import { GavelError, clip } from "../errors.js";
import { GgmlType, ggmlTypeName, type GgufHeader } from "./types.js";
import { fromHalf, halfToFloat } from "../util/half.js";
import { corrupt, openFile } from "./stream.js";

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
  if (!info) throw new GavelError(`${clip(path)}: no tensor named '${clip(name)}'`, "INVALID_ARGUMENT");
  if (!READABLE_TENSOR_TYPES.includes(info.type)) {
    throw new GavelError(
      `${clip(path)}: tensor '${clip(name)}' has type ${ggmlTypeName(info.type)}; only F32, F16, BF16 and Q8_0 can be read`,
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
  if (!info) throw new GavelError(`${clip(path)}: no tensor named '${clip(name)}'`, "INVALID_ARGUMENT");
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
      const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      const q = new Int8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      for (let b = 0, o = 0; o < n; b += 34, o += 32) {
        const d = fromHalf(dv.getUint16(b, true));
        for (let j = 0; j < 32; j++) out[o + j] = d * q[b + 2 + j];
      }
      return out;
    }
    default:
      throw new GavelError(`cannot decode ${ggmlTypeName(type)}`, "INVALID_ARGUMENT");
  }
}
