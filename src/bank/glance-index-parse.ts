// The glance index file's reader: its framing checked, then every header field, size, offset, code
// and centroid, so a corrupt file is rebuilt over rather than read (see glance-index.ts).
import { readFramedFile } from "../util/framed-file.js";

/** The first bytes of an index file. */
export const MAGIC = "GVLIDX01";

/** An index file's content, checked. */
export interface ParsedIndex {
  dim: number;
  trainedRows: number;
  trainMeanSim: number;
  ids: string[];
  hashes: string[];
  centroids: Float32Array;
  offsets: Int32Array;
  codes: Int32Array;
  rows: Int32Array;
  sims: Float64Array;
}

/** The file's content, or why it is corrupt. */
export function parseIndexFile(bytes: Buffer): ParsedIndex | string {
  const framed = readFramedFile(bytes, MAGIC, "glance index");
  if (typeof framed === "string") return framed;
  const h = framed.header;
  const int = (v: unknown, min: number) => typeof v === "number" && Number.isInteger(v) && v >= min;
  if (h.version !== 1 || !int(h.dim, 1) || !int(h.centroids, 1) || !int(h.trainedRows, 0) || typeof h.trainMeanSim !== "number" || !int(h.skills, 0) || !int(h.codes, 0)) return "malformed header";
  const dim = h.dim as number, nc = h.centroids as number, skills = h.skills as number, ncodes = h.codes as number;
  const ids = h.ids, hashes = h.hashes;
  if (!Array.isArray(ids) || !Array.isArray(hashes) || ids.length !== skills || hashes.length !== skills || !ids.every((x) => typeof x === "string") || !hashes.every((x) => typeof x === "string")) return "malformed header";
  const need = nc * dim * 4 + (skills + 1) * 4 + ncodes * 4 + skills * 4 + skills * 8;
  // a copy, aligned for the typed views
  const payload = framed.payload;
  if (payload.length !== need) return "payload size does not match the header";
  let at = 0;
  const take = <T>(make: (buf: ArrayBuffer, off: number, n: number) => T, n: number, size: number): T => {
    const v = make(payload.buffer, at, n);
    at += n * size;
    return v;
  };
  const centroids = take((b, o, n) => new Float32Array(b, o, n), nc * dim, 4);
  const offsets = take((b, o, n) => new Int32Array(b, o, n), skills + 1, 4);
  const codes = take((b, o, n) => new Int32Array(b, o, n), ncodes, 4);
  const rows = take((b, o, n) => new Int32Array(b, o, n), skills, 4);
  // 8-byte alignment for the float64 view: copy out
  const sims = new Float64Array(payload.slice(at, at + skills * 8).buffer);
  if (offsets[0] !== 0 || offsets[skills] !== ncodes) return "code offsets out of range";
  for (let i = 0; i < skills; i++) if (offsets[i + 1] < offsets[i]) return "code offsets out of range";
  for (const c of codes) if (c < 0 || c >= nc) return "a code out of range";
  for (const x of centroids) if (!Number.isFinite(x)) return "a centroid is not finite";
  return { dim, trainedRows: h.trainedRows as number, trainMeanSim: h.trainMeanSim, ids: ids as string[], hashes: hashes as string[], centroids, offsets, codes, rows, sims };
}
