/**
 * The key IVF's file in a bank folder (`key-ivf.bin`, src/util/framed-file.ts's framing): written whole
 * or not at all, loaded and matched to the bank by skill id and content hash, rebuilt (or, with
 * `build: false`, left absent) when missing, corrupt or stale. The index itself: key-ivf.ts.
 *
 * @module
 */
import { GavelError } from "../errors.js";
import { readCacheFile, readFramedFile, saveCache, writeFramedFile } from "../util/framed-file.js";
import { checkCodeLists, isIntAtLeast, type ParsedCodeIndex, PayloadCursor, readCodeIndexHeader } from "./code-index-file.js";
import type { IndexedSkill } from "./glance-index.js";
import type { KeyBank } from "./key-bank.js";
import { KeyIvf, type KeyIvfTrainOptions } from "./key-ivf.js";

/** The first bytes of a key IVF file. */
const MAGIC = "GVLKIV01";

/** One indexed skill as the file names it: its id and content hash in the bank (as the glance index's file does). */
export type KeyIvfSkill = IndexedSkill;

/**
 * Writes the index to `path` whole or not at all (temp file, fsync, rename, directory fsync): the
 * centroids and every skill's key codes under its id and content hash (`skillOf(handle)`; skills it
 * returns nothing for are left out), then a SHA-256 of everything before it. A cache: the bank
 * stays the truth.
 */
export async function saveKeyIvf(path: string, index: KeyIvf, skillOf: (handle: number) => KeyIvfSkill | undefined): Promise<void> {
  const { codes: e, stats: s } = await index.exportAsync();
  const ids: string[] = [], hashes: string[] = [];
  const offsets: number[] = [0], sims: number[] = [];
  const parts32: Int32Array[] = [];
  let nCodes = 0;
  for (let i = 0; i < e.handles.length; i++) {
    const skill = skillOf(e.handles[i]);
    if (!skill) continue;
    ids.push(skill.id);
    hashes.push(skill.contentHash);
    const c = e.codes.subarray(e.offsets[i], e.offsets[i + 1]);
    parts32.push(c);
    nCodes += c.length;
    offsets.push(nCodes);
    sims.push(e.simSums[i]);
  }
  const codes = new Int32Array(nCodes);
  let at = 0;
  for (const c of parts32) {
    codes.set(c, at);
    at += c.length;
  }
  const header = {
    version: 1, dim: index.dim, centroids: s.centroids, groups: Math.max(0, e.groupStart.length - 1), trainedRows: s.trainedRows, trainMeanSim: s.trainMeanSim,
    skills: ids.length, codes: nCodes, ids, hashes,
  };
  await writeFramedFile(path, MAGIC, header, [e.centroids, e.coarse, e.groupStart, Int32Array.from(offsets), codes, Float64Array.from(sims)]);
}

/**
 * How {@link openKeyIvf} got the index: loaded from the file, rebuilt from the bank, or (with
 * `build: false`) absent: the file could not serve and nothing was trained.
 */
export type KeyIvfOpenOutcome =
  | { kind: "loaded"; kept: number; assigned: number; dropped: number }
  | { kind: "rebuilt" | "absent"; reason: "missing" | "corrupt" | "stale"; detail: string };

/**
 * The key IVF for `bank` from the file at `path`, or rebuilt from the bank (and written back) when
 * the file is missing, corrupt (magic, truncation, checksum, malformed header or payload) or stale
 * (another dim, or centroids the bank outgrew: {@link KeyIvf.needsRetrain}). A loaded file's skills
 * are matched to the bank by id and content hash (`handleOf`); skills it lacks, holds under another
 * content or with another key count are assigned anew, skills the bank does not hold are dropped.
 * `save: false` writes nothing back (a read-only reader of the bank). `build: false` trains nothing:
 * where the index would be rebuilt, `index` is null and the outcome `absent` (a reader that falls
 * back to the exact glance rather than train on a route).
 *
 * @throws GavelError `INVALID_ARGUMENT` when the bank holds no key (nothing to train on); file
 *   system errors other than a missing file.
 */
export async function openKeyIvf(
  path: string,
  bank: KeyBank,
  handleOf: (skill: KeyIvfSkill) => number | undefined,
  skillOf: (handle: number) => KeyIvfSkill | undefined,
  options?: KeyIvfTrainOptions,
  flags?: { save?: boolean; build?: true },
): Promise<{ index: KeyIvf; outcome: KeyIvfOpenOutcome }>;
export async function openKeyIvf(
  path: string,
  bank: KeyBank,
  handleOf: (skill: KeyIvfSkill) => number | undefined,
  skillOf: (handle: number) => KeyIvfSkill | undefined,
  options: KeyIvfTrainOptions,
  flags: { save?: boolean; build: boolean },
): Promise<{ index: KeyIvf | null; outcome: KeyIvfOpenOutcome }>;
export async function openKeyIvf(
  path: string,
  bank: KeyBank,
  handleOf: (skill: KeyIvfSkill) => number | undefined,
  skillOf: (handle: number) => KeyIvfSkill | undefined,
  options: KeyIvfTrainOptions = {},
  { save = true, build = true }: { save?: boolean; build?: boolean } = {},
): Promise<{ index: KeyIvf | null; outcome: KeyIvfOpenOutcome }> {
  const rebuild = async (reason: "missing" | "corrupt" | "stale", detail: string) => {
    if (!build) return { index: null, outcome: { kind: "absent", reason, detail } as const };
    const index = await KeyIvf.build(bank, options);
    if (save) await saveCache(path, () => saveKeyIvf(path, index, skillOf));
    return { index, outcome: { kind: "rebuilt", reason, detail } as const };
  };
  // bounded, and never a blocking read (a FIFO or a device in its place is rebuilt over)
  const bytes = await readCacheFile(path);
  if (bytes === null) return rebuild("missing", `${path} does not exist`);
  if (typeof bytes === "string") return rebuild("corrupt", bytes);
  const parsed = parseKeyIvfFile(bytes);
  if (typeof parsed === "string") return rebuild("corrupt", parsed);
  if (parsed.dim !== bank.dim) return rebuild("stale", `the file's dim (${parsed.dim}) differs from the bank's (${bank.dim})`);
  let index: KeyIvf;
  try {
    index = KeyIvf._restore(bank.dim, parsed, parsed.trainedRows, parsed.trainMeanSim);
  } catch (err) {
    if (err instanceof GavelError && err.code === "INVALID_ARGUMENT") return rebuild("corrupt", err.message);
    throw err;
  }
  const held = new Set(bank.handles());
  const take: number[] = [];
  const handles: number[] = [];
  for (let i = 0; i < parsed.ids.length; i++) {
    const h = handleOf({ id: parsed.ids[i], contentHash: parsed.hashes[i] });
    if (h === undefined || !held.has(h)) continue;
    take.push(i);
    handles.push(h);
  }
  // the file's skills the bank holds, in handle order, with their codes
  const order = take.map((_, j) => j).sort((a, b) => handles[a] - handles[b]);
  const offsets = new Int32Array(order.length + 1);
  for (let j = 0; j < order.length; j++) {
    const i = take[order[j]];
    offsets[j + 1] = offsets[j] + parsed.offsets[i + 1] - parsed.offsets[i];
  }
  const codes = new Int32Array(offsets[order.length]);
  const sims = new Float64Array(order.length);
  for (let j = 0; j < order.length; j++) {
    const i = take[order[j]];
    codes.set(parsed.codes.subarray(parsed.offsets[i], parsed.offsets[i + 1]), offsets[j]);
    sims[j] = parsed.sims[i];
  }
  const kept = index._load(bank, Int32Array.from(order.map((j) => handles[j])), offsets, codes, sims);
  const sync = await index.sync(bank);
  if (index.needsRetrain()) return rebuild("stale", "the bank outgrew the centroids (growth or drift past the retrain bounds)");
  if (save && (sync.added > 0 || parsed.ids.length !== kept)) await saveKeyIvf(path, index, skillOf);
  return { index, outcome: { kind: "loaded", kept, assigned: sync.added, dropped: parsed.ids.length - kept } };
}

/** A key IVF file's content, checked: the shared fields and the coarse level's centroids and groups. */
interface ParsedKeyIvf extends ParsedCodeIndex {
  coarse: Float32Array;
  groupStart: Int32Array;
}

/** The file's content, or why it is corrupt. */
function parseKeyIvfFile(bytes: Buffer): ParsedKeyIvf | string {
  const framed = readFramedFile(bytes, MAGIC, "key IVF");
  if (typeof framed === "string") return framed;
  const h = readCodeIndexHeader(framed.header);
  if (typeof h === "string") return h;
  const G = framed.header.groups;
  if (!isIntAtLeast(G, 0)) return "malformed header";
  const { dim, nc, skills, nCodes } = h;
  const gs = G > 0 ? G + 1 : 0;
  // layout: centroids, coarse centroids, group starts, offsets, codes, sims
  const need = nc * dim * 4 + G * dim * 4 + gs * 4 + (skills + 1) * 4 + nCodes * 4 + skills * 8;
  if (framed.payload.length !== need) return "payload size does not match the header";
  const p = new PayloadCursor(framed.payload);
  const centroids = p.f32(nc * dim), coarse = p.f32(G * dim), groupStart = p.i32(gs), offsets = p.i32(skills + 1), codes = p.i32(nCodes), sims = p.f64(skills);
  const bad = checkCodeLists(h, offsets, codes, [centroids, coarse]);
  if (bad !== null) return bad;
  return { dim, trainedRows: h.trainedRows, trainMeanSim: h.trainMeanSim, ids: h.ids, hashes: h.hashes, centroids, coarse, groupStart, offsets, codes, sims };
}
