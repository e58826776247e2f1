// The glance index file's reader: its framing checked, then every header field, size, offset, code
// and centroid, so a corrupt file is rebuilt over rather than read (see glance-index.ts). The fields
// it shares with the key IVF's file are read by code-index-file.ts.
import { readFramedFile } from "../util/framed-file.js";
import { checkCodeLists, type ParsedCodeIndex, PayloadCursor, readCodeIndexHeader } from "./code-index-file.js";

/** The first bytes of an index file. */
export const MAGIC = "GVLIDX01";

/** An index file's content, checked: the shared fields and each skill's row count. */
export interface ParsedIndex extends ParsedCodeIndex {
  rows: Int32Array;
}

/** The file's content, or why it is corrupt. */
export function parseIndexFile(bytes: Buffer): ParsedIndex | string {
  const framed = readFramedFile(bytes, MAGIC, "glance index");
  if (typeof framed === "string") return framed;
  const h = readCodeIndexHeader(framed.header);
  if (typeof h === "string") return h;
  const { dim, nc, skills, nCodes } = h;
  // layout: centroids, offsets, codes, rows, sims
  const need = nc * dim * 4 + (skills + 1) * 4 + nCodes * 4 + skills * 4 + skills * 8;
  if (framed.payload.length !== need) return "payload size does not match the header";
  const p = new PayloadCursor(framed.payload);
  const centroids = p.f32(nc * dim), offsets = p.i32(skills + 1), codes = p.i32(nCodes), rows = p.i32(skills), sims = p.f64(skills);
  const bad = checkCodeLists(h, offsets, codes, [centroids]) ?? checkRows(rows, sims, offsets);
  if (bad !== null) return bad;
  return { dim, trainedRows: h.trainedRows, trainMeanSim: h.trainMeanSim, ids: h.ids, hashes: h.hashes, centroids, offsets, codes, rows, sims };
}

/**
 * Why a skill's row count or similarity sum is corrupt, or null: a skill has at least as many key rows
 * as distinct codes (so none negative), and its similarity sum is finite.
 */
function checkRows(rows: Int32Array, sims: Float64Array, offsets: Int32Array): string | null {
  for (let i = 0; i < rows.length; i++) {
    if (rows[i] < offsets[i + 1] - offsets[i]) return "a skill's row count out of range";
    if (!Number.isFinite(sims[i])) return "a skill's similarity sum is not finite";
  }
  return null;
}
