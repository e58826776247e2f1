/**
 * The checks {@link Model.load} runs on a model file before llama.cpp reads it.
 *
 * @module
 */
import { openSync, readSync, closeSync, statSync } from "node:fs";
import { GavelError } from "../errors.js";
import { checkModelHeader, readGgufHeader, type GgufHeader } from "../gguf/index.js";

const GGUF_MAGIC = 0x46554747; // "GGUF" little-endian

export function checkGgufFile(path: string): void {
  let size: number;
  try {
    const st = statSync(path);
    if (!st.isFile()) throw new GavelError(`${path} is not a file`, "FILE_NOT_FOUND");
    size = st.size;
  } catch (err) {
    if (err instanceof GavelError) throw err;
    throw new GavelError(`model file not found: ${path}`, "FILE_NOT_FOUND", { cause: err });
  }
  const head = Buffer.alloc(8);
  try {
    const fd = openSync(path, "r");
    try {
      readSync(fd, head, 0, 8, 0);
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    // EIO (/proc/self/mem), EACCES, …: the file cannot be read
    throw new GavelError(`model file cannot be read: ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, "FILE_NOT_FOUND", { cause: err });
  }
  if (size < 24 || head.readUInt32LE(0) !== GGUF_MAGIC) throw new GavelError(`${path} is not a GGUF file`, "NOT_GGUF");
  const version = head.readUInt32LE(4);
  if (version < 2 || version > 3) throw new GavelError(`${path}: GGUF version ${version} is not supported (2 or 3)`, "NOT_GGUF");
}

/**
 * Reads the model's GGUF header with the bounded TypeScript reader and checks its hyper-parameters
 * and vocabulary (gguf/model-check.ts) before llama.cpp sees the file: llama.cpp aborts the process
 * on some malformed headers. An inconsistent header is MODEL_LOAD_FAILED; NOT_GGUF and
 * FILE_NOT_FOUND pass through.
 */
export async function validateModelFile(path: string): Promise<void> {
  let header: GgufHeader;
  try {
    header = await readGgufHeader(path);
  } catch (err) {
    if (err instanceof GavelError && err.code === "CORRUPT_FILE") throw new GavelError(err.message, "MODEL_LOAD_FAILED", { cause: err });
    throw err;
  }
  checkModelHeader(header, path);
}
