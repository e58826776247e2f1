/**
 * Training checkpoints: the trainer's weights and AdamW moments, the step, and the sampler's RNG
 * state, so a resumed run draws the same batches as an uninterrupted one. Written atomically and
 * durably (util/durable-file), read with every size checked.
 *
 * Layout: the magic `GVLTRN01`, a u32 length, a JSON header (space-padded so the arrays are 4-byte
 * aligned), then W_q, W_s, m(W_q), v(W_q), m(W_s), v(W_s) as little-endian float32; then, when the
 * header's `lists` says so, per-example skill lists (the glance's hard negatives at the checkpointed
 * step) as little-endian int32: lists.count + 1 offsets, then the entries.
 *
 * @module
 */
import { readFile } from "node:fs/promises";
import { GavelError } from "gavel-router";
import { type NativeTrainerState, writeFileDurable } from "gavel-router/internal";

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
  /** Set by {@link saveCheckpoint} when per-example lists follow the arrays: how many lists, how many entries. */
  lists?: { count: number; entries: number };
}

/** Per-example skill lists a checkpoint carries (undefined: the example has none). */
export type ExampleLists = readonly (readonly number[] | undefined)[];

/** Lists as int32 offsets (count + 1) and entries; an absent list is empty. */
function packLists(lists: ExampleLists): Int32Array {
  const offsets = new Int32Array(lists.length + 1);
  lists.forEach((l, i) => (offsets[i + 1] = offsets[i] + (l?.length ?? 0)));
  const out = new Int32Array(offsets.length + offsets[lists.length]);
  out.set(offsets);
  lists.forEach((l, i) => l && out.set(l, offsets.length + offsets[i]));
  return out;
}

/** Writes a checkpoint atomically (temp file, fsync, rename, directory fsync). */
export async function saveCheckpoint(path: string, meta: CheckpointMeta, state: NativeTrainerState, lists?: ExampleLists): Promise<void> {
  const packed = lists ? packLists(lists) : undefined;
  const listMeta = lists ? { lists: { count: lists.length, entries: packed!.length - lists.length - 1 } } : {};
  const json = Buffer.from(JSON.stringify({ ...meta, ...listMeta, step: state.step }), "utf8");
  const pad = (4 - ((8 + 4 + json.length) % 4)) % 4;
  const head = Buffer.alloc(8 + 4 + json.length + pad, 0x20);
  head.write(CKPT_MAGIC, 0, "latin1");
  head.writeUInt32LE(json.length + pad, 8);
  json.copy(head, 12);
  const arrays: (Float32Array | Int32Array)[] = [state.wq, state.ws, state.mWq, state.vWq, state.mWs, state.vWs];
  if (packed) arrays.push(packed);
  await writeFileDurable(path, [head, ...arrays.map((a) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength))]);
}

/**
 * Reads a checkpoint, or returns undefined when there is none at `path`.
 * @throws GavelError `CORRUPT_FILE` for a file that is not a complete checkpoint.
 */
export async function loadCheckpoint(path: string): Promise<{ meta: CheckpointMeta; state: NativeTrainerState; lists?: number[][] } | undefined> {
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
  const lm = meta.lists;
  const listInts = lm ? lm.count + 1 + lm.entries : 0;
  if (lm && !(Number.isInteger(lm.count) && lm.count >= 0 && Number.isInteger(lm.entries) && lm.entries >= 0)) throw corrupt("bad lists header");
  if (!Number.isInteger(n) || n <= 0 || buf.length !== start + 6 * n * 4 + listInts * 4) throw corrupt("wrong size");
  const all = new Float32Array(buf.buffer.slice(buf.byteOffset + start, buf.byteOffset + start + 6 * n * 4));
  const part = (i: number) => all.slice(i * n, (i + 1) * n);
  const { step, lists: _, ...rest } = meta;
  const state = { step, wq: part(0), ws: part(1), mWq: part(2), vWq: part(3), mWs: part(4), vWs: part(5) };
  if (!lm) return { meta: rest, state };
  const ints = new Int32Array(buf.buffer.slice(buf.byteOffset + start + 6 * n * 4, buf.byteOffset + buf.length));
  const off = ints.subarray(0, lm.count + 1);
  if (off[0] !== 0 || off[lm.count] !== lm.entries || off.some((o, i) => i > 0 && o < off[i - 1])) throw corrupt("bad list offsets");
  const lists = Array.from({ length: lm.count }, (_, i) => Array.from(ints.subarray(lm.count + 1 + off[i], lm.count + 1 + off[i + 1])));
  return { meta: rest, state, lists };
}
