/**
 * When a route's glance reads the bank's glance index (src/bank/glance-index.ts), and the index a
 * Library keeps for it. GAVEL_GLANCE_INDEX (docs/configuration.md): `on` prunes at any size and on
 * any device; `auto` (the default) and `off` never do. On a real bank (gavel-mini's ℓ7 projections over
 * the 30.6K public skills) the default knob's top 20 agreed with the exact glance's on 0.49 of its
 * entries, against ≥ 0.99 on synthetic banks (docs/BENCHMARKS.md, "The glance index"), so the route
 * keeps the exact glance unless asked; {@link PRUNE_FROM} is where `auto` will prune once a setting
 * reaches that agreement on real banks.
 *
 * The index is derived from the bank: `<bank>/glance-index.bin`, opened (or trained and written) on
 * the first glance that needs it, following the bank's installs and uninstalls by itself at each
 * search. A read-only router reads that file and writes nothing; a bank folder that cannot be written
 * keeps the index in memory only.
 *
 * The key IVF (src/bank/key-ivf.ts) is the other way to a sublinear CPU glance: each task row probes
 * the inverted lists of its nearest key centroids and the vote is the exact glance's over the keys
 * found (top-20 agreement with the exact glance in docs/BENCHMARKS.md). GAVEL_KEY_IVF: `auto` (the
 * default) reads it for a glance on the CPU from GAVEL_KEY_IVF_FROM routable skills
 * (an install over that many trains and writes it, {@link refreshKeyIvf}); `on` at any size and
 * device; `off` never. It is kept in `<bank>/key-ivf.bin` like the glance index.
 *
 * @module
 */
import { stat } from "node:fs/promises";
import { join } from "node:path";
import { GlanceIndex, openGlanceIndex, type IndexedSkill } from "../bank/glance-index.js";
import { KeyIvf } from "../bank/key-ivf.js";
import { openKeyIvf, saveKeyIvf } from "../bank/key-ivf-file.js";
import type { KeyBankGlanceResult } from "../bank/key-bank.js";
import { glanceDevice } from "../bank/key-bank.js";
import type { Library } from "../bank/library.js";
import { config } from "../config.js";
import { errnoOf, NO_SPACE_ERRNOS, PERMISSION_ERRNOS } from "../util/errno.js";
import { throwIfAborted } from "../util/validate.js";

/** Routable skills from which `auto` is meant to prune the CPU glance (it does not yet: see above). */
export const PRUNE_FROM = 8192;

/** The index file's name in a bank folder. */
export const GLANCE_INDEX_FILE = "glance-index.bin";

/** Whether `auto` prunes at all: not until the index agrees with the exact glance on real banks. */
const AUTO_PRUNES = false;

const held = new WeakMap<Library, Promise<GlanceIndex>>();

/** Whether a glance over `routable` skills reads the index under the configuration. */
export function prunes(routable: number): boolean {
  const mode = config().glanceIndex;
  if (mode === "off") return false;
  if (mode === "on") return true;
  return AUTO_PRUNES && routable >= PRUNE_FROM && glanceDevice().device === "cpu";
}

/**
 * The library's glance index: read from its bank folder, or trained (and written there) when
 * missing, damaged or outgrown. Concurrent callers share one open.
 */
export function glanceIndexOf(library: Library): Promise<GlanceIndex> {
  let p = held.get(library);
  if (!p) {
    p = openFor(library);
    held.set(library, p);
    p.catch(() => held.delete(library));
  }
  return p;
}

/** How a bank file names a skill and finds it again: by id and content hash. */
function namesOf(library: Library): { byId: (s: IndexedSkill) => number | undefined; skillOf: (h: number) => IndexedSkill | undefined } {
  const handleOf = new Map<string, number>();
  for (const h of library.keys.handles()) handleOf.set(library.idOf(h), h);
  const skillOf = (h: number): IndexedSkill | undefined => {
    let id: string;
    try {
      id = library.idOf(h);
    } catch {
      return undefined; // removed since
    }
    const e = library.find(id);
    return e ? { id, contentHash: e.contentHash } : undefined;
  };
  const byId = ({ id, contentHash }: IndexedSkill) => {
    const h = handleOf.get(id);
    return h !== undefined && library.find(id)?.contentHash === contentHash ? h : undefined;
  };
  return { byId, skillOf };
}

/** Whether a wagered write failed for want of a writable folder (the index then lives in memory). */
function unwritable(err: unknown): boolean {
  const code = errnoOf(err);
  return code !== undefined && (PERMISSION_ERRNOS.includes(code) || NO_SPACE_ERRNOS.includes(code));
}

async function openFor(library: Library): Promise<GlanceIndex> {
  const { byId, skillOf } = namesOf(library);
  const path = join(library.dir, GLANCE_INDEX_FILE);
  // a read-only router (gavel mcp, snapshots) reads the file a writer left, and writes nothing
  if (library.readOnly) return (await openGlanceIndex(path, library.keys, byId, skillOf, {}, { save: false })).index;
  try {
    return (await openGlanceIndex(path, library.keys, byId, skillOf)).index;
  } catch (err) {
    // a folder we may not write (another user's bank, a full disk): the index lives in memory
    if (unwritable(err)) return GlanceIndex.build(library.keys);
    throw err;
  }
}

/** The key IVF's file name in a bank folder. */
export const KEY_IVF_FILE = "key-ivf.bin";

const ivfHeld = new WeakMap<Library, Promise<KeyIvf>>();

/**
 * Whether a glance over `routable` skills reads the key IVF. A glance over some of the library's
 * skills (skills with disable-model-invocation, excluded sources or flags) reads it too, the others
 * taking no part ({@link keyIvfGlance}).
 */
export function readsKeyIvf(routable: number): boolean {
  const { keyIvf, keyIvfFrom } = config();
  if (keyIvf === "off") return false;
  if (keyIvf === "on") return true;
  return routable >= keyIvfFrom && glanceDevice().device === "cpu";
}

/**
 * The library's key IVF: read from its bank folder, or trained (and written there) when missing,
 * damaged or outgrown. Concurrent callers share one open.
 */
export function keyIvfOf(library: Library): Promise<KeyIvf> {
  let p = ivfHeld.get(library);
  if (!p) {
    p = openKeyIvfFor(library);
    ivfHeld.set(library, p);
    p.catch(() => ivfHeld.delete(library));
  }
  return p;
}

const ivfAbsent = new WeakMap<Library, number>();

/**
 * The key IVF a glance reads, or null for the exact glance. `GAVEL_KEY_IVF=on`: {@link keyIvfOf}
 * (trained, and written to the bank, when missing). `auto`: only an index an install or a sync wrote
 * (`<bank>/key-ivf.bin`, synced with the bank as it loads): a glance never trains one, so a route
 * never pays the training; without one the exact glance runs (and the file is looked for again when
 * it changes).
 */
export async function keyIvfForGlance(library: Library): Promise<KeyIvf | null> {
  if (config().keyIvf === "on") return keyIvfOf(library);
  const held = ivfHeld.get(library);
  if (held) return held;
  const path = join(library.dir, KEY_IVF_FILE);
  let stamp: number;
  try {
    stamp = (await stat(path)).mtimeMs;
  } catch {
    return null;
  }
  if (ivfAbsent.get(library) === stamp) return null;
  const { byId, skillOf } = namesOf(library);
  let index: KeyIvf | null;
  try {
    ({ index } = await openKeyIvf(path, library.keys, byId, skillOf, {}, { save: false, build: false }));
  } catch (err) {
    if (!unwritable(err)) throw err;
    index = null;
  }
  if (!index) {
    ivfAbsent.set(library, stamp);
    return null;
  }
  // a later install's refreshKeyIvf syncs this one and writes it back
  if (!ivfHeld.has(library)) ivfHeld.set(library, Promise.resolve(index));
  return ivfHeld.get(library) ?? index;
}

async function openKeyIvfFor(library: Library): Promise<KeyIvf> {
  const { byId, skillOf } = namesOf(library);
  const path = join(library.dir, KEY_IVF_FILE);
  if (library.readOnly) return (await openKeyIvf(path, library.keys, byId, skillOf, {}, { save: false })).index;
  try {
    return (await openKeyIvf(path, library.keys, byId, skillOf)).index;
  } catch (err) {
    if (unwritable(err)) return KeyIvf.build(library.keys);
    throw err;
  }
}

/**
 * Brings the library's key IVF up to date after installs: opened (trained and written the first
 * time), synced with the bank, retrained when the bank outgrew its centroids or a training would now
 * make about twice as many ({@link KeyIvf.coarserThanDefault}), and written back
 * (whole, crash-safe) when it changed. A read-only or unwritable bank keeps it in memory.
 */
export async function refreshKeyIvf(library: Library): Promise<void> {
  const index = await keyIvfOf(library);
  const sync = await index.sync(library.keys);
  let changed = sync.added > 0 || sync.removed > 0;
  const s = await index.statsAsync();
  if (index.needsRetrain(s) || index.coarserThanDefault(s)) {
    await index.train(library.keys);
    changed = true;
  }
  if (!changed || library.readOnly) return;
  const { skillOf } = namesOf(library);
  try {
    await saveKeyIvf(join(library.dir, KEY_IVF_FILE), index, skillOf);
  } catch (err) {
    if (!unwritable(err)) throw err;
  }
}

/**
 * The library's glance through its key IVF at the default nprobe, shared out among the task's rows by
 * their weights (`probeSpread: "weight"`): g over every skill, or over `handles` alone where given
 * (the others take no vote, as in the exact glance over those handles), in the bank's handle order;
 * no per-token detail. With `GAVEL_KEY_IVF_I8=on` (the default)
 * through the int8 list codes and the list bound: the same g.
 *
 * @throws GavelError `ABORTED` when `signal` aborted before or during the search.
 */
export async function keyIvfGlance(library: Library, index: KeyIvf, queries: Float32Array, weights: Float32Array, k: number, signal?: AbortSignal, handles?: Int32Array): Promise<KeyBankGlanceResult> {
  throwIfAborted(signal, "glance");
  const fast = config().keyIvfI8 === "on";
  const r = await index.glance(library.keys, queries, { weights, k, probeSpread: "weight", ...(fast ? { i8: true, prune: true } : {}), ...(handles ? { handles } : {}) });
  throwIfAborted(signal, "glance");
  return { g: r.g, handles: r.handles, m: new Float32Array(0), argmax: new Int32Array(0), columns: new Int32Array(0) };
}

/** What {@link warmKeyIvf} made ready. */
export interface KeyIvfWarm {
  /** The route's glance reads the library's key IVF (GAVEL_KEY_IVF), and it was opened. */
  keyIvf: boolean;
  /** (row, key) pairs scored in int8 by the warming glance: every list's keys, its seed list's twice (once for the floor) (0: GAVEL_KEY_IVF_I8=off). */
  coded: number;
  /** Thread-ms spent coding the lists (0 when they already were). */
  codeMs: number;
  /** The index's native memory after it, codes included, in bytes (0 without an index). */
  bytes: number;
}

/**
 * Makes ready what the route's first glances would otherwise make: the library's key IVF opened
 * (when the route reads it) and, with `GAVEL_KEY_IVF_I8=on`, every list's int8 codes, by one glance of
 * one row over every list. Over 30K skills that is seconds of CPU; glances wait for it meanwhile.
 * `signal` is checked before each step (the coding glance, once started, runs to its end).
 */
export async function warmKeyIvf(library: Library, signal?: AbortSignal): Promise<KeyIvfWarm> {
  throwIfAborted(signal, "Router.warm");
  const none = { keyIvf: false, coded: 0, codeMs: 0, bytes: 0 };
  const handles = library.routable();
  if (handles.length === 0 || !readsKeyIvf(handles.length)) return none;
  const index = await keyIvfForGlance(library);
  if (!index || (handles.length < library.keys.size && !index.restricts)) return none;
  throwIfAborted(signal, "Router.warm");
  if (config().keyIvfI8 !== "on") return { ...none, keyIvf: true, bytes: (await index.statsAsync()).bytes };
  const row = new Float32Array(index.dim);
  row[0] = 1;
  const r = await index.glance(library.keys, row, { nprobe: "all", i8: true });
  throwIfAborted(signal, "Router.warm");
  return { keyIvf: true, coded: r.coded, codeMs: r.codeMs, bytes: (await index.statsAsync()).bytes };
}
