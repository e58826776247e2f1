/**
 * Training checkpoints: the trainer's weights and AdamW moments, the step, and the sampler's RNG
 * state, so a resumed run draws the same batches as an uninterrupted one. Written atomically and
 * durably (util/durable-file), read with every size checked.
 *
 * Layout: the magic `GVLTRN01`, a u32 length, a JSON header (space-padded so the arrays are 4-byte
 * aligned), then W_q, W_s, m(W_q), v(W_q), m(W_s), v(W_s) as little-endian float32.
 *
 * @module
 */
import { readFile } from "node:fs/promises";
import { GavelError } from "../errors.js";
import type { NativeTrainerState } from "../native/binding.js";
import { writeFileDurable } from "../util/durable-file.js";

const CKPT_MAGIC = "GVLTRN01";

/** What a checkpoint holds besides the trainer's state. */
export interface CheckpointMeta {
  phase: "main" | "finetune";
  /** Sampler RNG state after the checkpointed step. */
  rng: number;
  /** Hash of the run's configuration; a resume under another configuration is refused. */
  config: string;
  nEmbd: number;
  dim: number;
  /** The fine-tune's starting weights are the main phase's result; kept for reports. */
  mainSteps?: number;
}

/** Writes a checkpoint atomically (temp file, fsync, rename, directory fsync). */
export async function saveCheckpoint(path: string, meta: CheckpointMeta, state: NativeTrainerState): Promise<void> {
  const json = Buffer.from(JSON.stringify({ ...meta, step: state.step }), "utf8");
  const pad = (4 - ((8 + 4 + json.length) % 4)) % 4;
  const head = Buffer.alloc(8 + 4 + json.length + pad, 0x20);
  head.write(CKPT_MAGIC, 0, "latin1");
  head.writeUInt32LE(json.length + pad, 8);
  json.copy(head, 12);
  const arrays = [state.wq, state.ws, state.mWq, state.vWq, state.mWs, state.vWs];
  await writeFileDurable(path, [head, ...arrays.map((a) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength))]);
}

/**
 * Reads a checkpoint, or returns undefined when there is none at `path`.
 * @throws GavelError `CORRUPT_FILE` for a file that is not a complete checkpoint.
 */
export async function loadCheckpoint(path: string): Promise<{ meta: CheckpointMeta; state: NativeTrainerState } | undefined> {
  let buf: Buffer;
  try {
    buf = await readFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new GavelError(`${path}: ${(err as Error).message}`, "FILE_NOT_FOUND", { cause: err });
  }
  const corrupt = (why: string) => new GavelError(`${path}: not a gavel training checkpoint (${why})`, "CORRUPT_FILE");
  if (buf.length < 12 || buf.toString("latin1", 0, 8) !== CKPT_MAGIC) throw corrupt("bad magic");
  const jlen = buf.readUInt32LE(8);
  let meta: CheckpointMeta & { step: number };
  try {
    meta = JSON.parse(buf.toString("utf8", 12, 12 + jlen));
  } catch {
    throw corrupt("bad header");
  }
  const n = meta.nEmbd * meta.dim;
  const start = 12 + jlen;
  if (!Number.isInteger(n) || n <= 0 || buf.length !== start + 6 * n * 4) throw corrupt("wrong size");
  const all = new Float32Array(buf.buffer.slice(buf.byteOffset + start, buf.byteOffset + buf.length));
  const part = (i: number) => all.slice(i * n, (i + 1) * n);
  const { step, ...rest } = meta;
  return { meta: rest, state: { step, wq: part(0), ws: part(1), mWq: part(2), vWq: part(3), mWs: part(4), vWs: part(5) } };
}
