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
 * @module
 */
import { join } from "node:path";
import { GlanceIndex, openGlanceIndex, type IndexedSkill } from "../bank/glance-index.js";
import { glanceDevice } from "../bank/key-bank.js";
import type { Library } from "../bank/library.js";
import { config } from "../config.js";

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

async function openFor(library: Library): Promise<GlanceIndex> {
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
  const path = join(library.dir, GLANCE_INDEX_FILE);
  // a read-only router (gavel mcp, snapshots) reads the file a writer left, and writes nothing
  if (library.readOnly) return (await openGlanceIndex(path, library.keys, byId, skillOf, {}, { save: false })).index;
  try {
    return (await openGlanceIndex(path, library.keys, byId, skillOf)).index;
  } catch (err) {
    // a folder we may not write (another user's bank, a full disk): the index lives in memory
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EACCES" || code === "EPERM" || code === "EROFS" || code === "ENOSPC") return GlanceIndex.build(library.keys);
    throw err;
  }
}
