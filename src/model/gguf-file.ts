/**
 * The checks {@link Model.load} runs on a model file before llama.cpp reads it.
 *
 * @module
 */
import { openSync, readSync, closeSync, statSync } from "node:fs";
import { GavelError, clip } from "../errors.js";
import { checkModelHeader, ggufMetaNumber, ggufMetaString, readGgufHeader, type GgufHeader } from "../gguf/index.js";

const GGUF_MAGIC = 0x46554747; // "GGUF" little-endian

export function checkGgufFile(path: string): void {
  let size: number;
  try {
    const st = statSync(path);
    if (!st.isFile()) throw new GavelError(`${clip(path)} is not a file`, "FILE_NOT_FOUND");
    size = st.size;
  } catch (err) {
    if (err instanceof GavelError) throw err;
    throw new GavelError(`model file not found: ${clip(path)}`, "FILE_NOT_FOUND", { cause: err });
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
    throw new GavelError(`model file cannot be read: ${clip(path)} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, "FILE_NOT_FOUND", { cause: err });
  }
  if (size < 24 || head.readUInt32LE(0) !== GGUF_MAGIC) throw new GavelError(`${clip(path)} is not a GGUF file`, "NOT_GGUF");
  const version = head.readUInt32LE(4);
  if (version < 2 || version > 3) throw new GavelError(`${clip(path)}: GGUF version ${version} is not supported (2 or 3)`, "NOT_GGUF");
}

/**
 * Reads the model's GGUF header with the bounded TypeScript reader and checks its hyper-parameters
 * and vocabulary (gguf/model-check.ts) before llama.cpp sees the file: llama.cpp aborts the process
 * on some malformed headers. An inconsistent header is MODEL_LOAD_FAILED; NOT_GGUF and
 * FILE_NOT_FOUND pass through, and any other failure of the read (an I/O error, an exhausted
 * allocation) is MODEL_LOAD_FAILED too: Model.load rejects with its documented codes only.
 */
export async function validateModelFile(path: string): Promise<GgufHeader> {
  let header: GgufHeader;
  try {
    header = await readGgufHeader(path);
  } catch (err) {
    if (err instanceof GavelError && err.code === "CORRUPT_FILE") throw new GavelError(err.message, "MODEL_LOAD_FAILED", { cause: err });
    if (err instanceof GavelError) throw err;
    throw new GavelError(`${clip(path)}: its GGUF header could not be read: ${clip(err instanceof Error ? err.message : String(err))}`, "MODEL_LOAD_FAILED", { cause: err });
  }
  checkModelHeader(header, path);
  return header;
}

/** A context size when none is asked for: 8192 tokens, lowered to the model's trained context when that is smaller. */
export const DEFAULT_CONTEXT = 8192;

/** The shortest trained context the default follows: below it a skill render and a task do not both fit. */
export const MIN_FOLLOWED_CONTEXT = 1024;

/** The model's trained context (`<arch>.context_length`), or null when the header does not say. */
export function headerContext(header: GgufHeader): number | null {
  const arch = ggufMetaString(header, "general.architecture");
  const n = arch === undefined ? undefined : ggufMetaNumber(header, `${arch}.context_length`);
  return n !== undefined && Number.isInteger(n) && n > 0 ? n : null;
}

/**
 * The context a model loads with when the caller gives none: {@link DEFAULT_CONTEXT}, or the trained
 * context when it is smaller (positions past it are out of distribution; gavel-mini is trained at
 * 2048), unless that is under {@link MIN_FOLLOWED_CONTEXT} (a tiny test model), where 8192 stays.
 */
export function defaultContextFor(trained: number | null): number {
  if (trained === null || trained >= DEFAULT_CONTEXT || trained < MIN_FOLLOWED_CONTEXT) return DEFAULT_CONTEXT;
  return trained;
}
