// What the glance index's file (glance-index-parse.ts) and the key IVF's file (key-ivf-file.ts)
// share: the header fields both carry, the skills' code lists and the checks on them. Each file
// reads its own other fields and payload sections around these.

/** A code index file's content both files share, checked. */
export interface ParsedCodeIndex {
  dim: number;
  trainedRows: number;
  trainMeanSim: number;
  /** Each indexed skill's id and content hash in the bank, in file order. */
  ids: string[];
  hashes: string[];
  centroids: Float32Array;
  /** Skill `i`'s codes are `codes[offsets[i]..offsets[i+1])`. */
  offsets: Int32Array;
  codes: Int32Array;
  sims: Float64Array;
}

/** The shared header fields, checked: the sizes the payload is laid out by, and the skills' names. */
export interface CodeIndexHeader {
  dim: number;
  /** How many centroids (`h.centroids`). */
  nc: number;
  skills: number;
  nCodes: number;
  trainedRows: number;
  trainMeanSim: number;
  ids: string[];
  hashes: string[];
}

/** True for an integer at least `min`. */
export function isIntAtLeast(v: unknown, min: number): v is number {
  return typeof v === "number" && Number.isInteger(v) && v >= min;
}

/** The shared header fields of `h`, or "malformed header". */
export function readCodeIndexHeader(h: Record<string, unknown>): CodeIndexHeader | string {
  const int = isIntAtLeast;
  if (h.version !== 1 || !int(h.dim, 1) || !int(h.centroids, 1) || !int(h.trainedRows, 0) || typeof h.trainMeanSim !== "number" || !int(h.skills, 0) || !int(h.codes, 0)) {
    return "malformed header";
  }
  const skills = h.skills, ids = h.ids, hashes = h.hashes;
  if (!Array.isArray(ids) || !Array.isArray(hashes) || ids.length !== skills || hashes.length !== skills || !ids.every((x) => typeof x === "string") || !hashes.every((x) => typeof x === "string")) {
    return "malformed header";
  }
  return { dim: h.dim, nc: h.centroids, skills, nCodes: h.codes, trainedRows: h.trainedRows, trainMeanSim: h.trainMeanSim, ids: ids as string[], hashes: hashes as string[] };
}

/** Typed views over a payload (a copy, aligned at 0), section after section. */
export class PayloadCursor {
  #at = 0;
  constructor(private readonly payload: Uint8Array<ArrayBuffer>) {}
  f32(n: number): Float32Array {
    const v = new Float32Array(this.payload.buffer, this.#at, n);
    this.#at += n * 4;
    return v;
  }
  i32(n: number): Int32Array {
    const v = new Int32Array(this.payload.buffer, this.#at, n);
    this.#at += n * 4;
    return v;
  }
  /** Copied out: the section need not be 8-byte aligned. */
  f64(n: number): Float64Array {
    const v = new Float64Array(this.payload.slice(this.#at, this.#at + n * 8).buffer);
    this.#at += n * 8;
    return v;
  }
}

/**
 * Why the skills' code lists or the centroids are corrupt, or null: offsets that do not run from 0
 * to the code count without going back, a code naming no centroid, a centroid (of any of
 * `centroidSets`) not finite.
 */
export function checkCodeLists(h: CodeIndexHeader, offsets: Int32Array, codes: Int32Array, centroidSets: readonly Float32Array[]): string | null {
  if (offsets[0] !== 0 || offsets[h.skills] !== h.nCodes) return "code offsets out of range";
  for (let i = 0; i < h.skills; i++) if (offsets[i + 1] < offsets[i]) return "code offsets out of range";
  for (const c of codes) if (c < 0 || c >= h.nc) return "a code out of range";
  for (const set of centroidSets) for (const x of set) if (!Number.isFinite(x)) return "a centroid is not finite";
  return null;
}
