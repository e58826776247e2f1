/**
 * The word tables a projections file may carry, beside its maps and constants: the reference idf
 * (src/lexical/reference-idf.ts, abstention's `gcov`) and the domain table (src/lexical/domain.ts,
 * abstention's `domain`). Each is a set of metadata keys, all or none; src/projections/file.ts writes
 * and reads them through this module.
 *
 * @module
 */
import { GavelError } from "../errors.js";
import { arr, f64, ggufMetaNumber, u32, type GgufHeader, type GgufWriter } from "../gguf/index.js";
import { ReferenceIdf } from "../lexical/reference-idf.js";
import { DomainModel } from "../lexical/domain.js";

/**
 * The reference idf (src/lexical/reference-idf.ts); all four keys or none (absent: no table). The
 * hashes and document frequencies are u32 arrays of one length, the hashes strictly ascending.
 */
export const REFERENCE_KEY = {
  documents: "gavel.reference.documents",
  minDf: "gavel.reference.min_df",
  hashes: "gavel.reference.hashes",
  df: "gavel.reference.df",
} as const;

/** The domain score's word table (src/lexical/domain.ts); all three keys or none. */
export const DOMAIN_KEY = {
  hashes: "gavel.domain.hashes",
  weights: "gavel.domain.weights",
  bias: "gavel.domain.bias",
} as const;

/** Sets the keys of the tables `p` holds. */
export function writeWordTables(w: GgufWriter, p: { readonly referenceIdf?: ReferenceIdf | null; readonly domain?: DomainModel | null }): void {
  if (p.referenceIdf) {
    w.set(REFERENCE_KEY.documents, u32(p.referenceIdf.documents));
    w.set(REFERENCE_KEY.minDf, u32(p.referenceIdf.minDf));
    w.set(REFERENCE_KEY.hashes, arr("u32", p.referenceIdf.hashes));
    w.set(REFERENCE_KEY.df, arr("u32", p.referenceIdf.df));
  }
  if (p.domain) {
    w.set(DOMAIN_KEY.hashes, arr("u32", p.domain.hashes));
    w.set(DOMAIN_KEY.weights, arr("f32", p.domain.weights));
    w.set(DOMAIN_KEY.bias, f64(p.domain.bias));
  }
}

/** The reference idf of a header, or null when the file has none (no `gavel.reference.*` key). */
export function readReference(header: GgufHeader, corrupt: (why: string) => GavelError): ReferenceIdf | null {
  const meta = header.metadata;
  const present = Object.values(REFERENCE_KEY).filter((k) => meta.has(k));
  if (present.length === 0) return null;
  if (present.length < 4) throw corrupt(`the reference idf is incomplete: it has ${present.join(", ")} but not ${Object.values(REFERENCE_KEY).filter((k) => !meta.has(k)).join(", ")}`);
  const scalar = (key: string): number => {
    const v = meta.get(key)!;
    if (v.type !== "u32") throw corrupt(`metadata key ${key} is not a u32 (type ${v.type})`);
    return v.value;
  };
  const list = (key: string): Uint32Array => {
    const v = meta.get(key)!;
    if (v.type !== "arr" || v.itemType !== "u32") throw corrupt(`metadata key ${key} is not an array of u32`);
    return Uint32Array.from(v.value as ArrayLike<number>);
  };
  try {
    return new ReferenceIdf({ documents: scalar(REFERENCE_KEY.documents), minDf: scalar(REFERENCE_KEY.minDf), hashes: list(REFERENCE_KEY.hashes), df: list(REFERENCE_KEY.df) });
  } catch (err) {
    if (err instanceof GavelError && err.code === "CORRUPT_FILE") throw err;
    throw corrupt(`the reference idf: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** The domain score's table, or null when the file has none. */
export function readDomain(header: GgufHeader, corrupt: (why: string) => GavelError): DomainModel | null {
  const meta = header.metadata;
  const present = Object.values(DOMAIN_KEY).filter((k) => meta.has(k));
  if (present.length === 0) return null;
  if (present.length < 3) throw corrupt(`the domain table is incomplete: it has ${present.join(", ")} but not ${Object.values(DOMAIN_KEY).filter((k) => !meta.has(k)).join(", ")}`);
  const hashes = meta.get(DOMAIN_KEY.hashes)!;
  if (hashes.type !== "arr" || hashes.itemType !== "u32") throw corrupt(`metadata key ${DOMAIN_KEY.hashes} is not an array of u32`);
  const weights = meta.get(DOMAIN_KEY.weights)!;
  if (weights.type !== "arr" || weights.itemType !== "f32") throw corrupt(`metadata key ${DOMAIN_KEY.weights} is not an array of f32`);
  const bias = ggufMetaNumber(header, DOMAIN_KEY.bias);
  if (bias === undefined) throw corrupt(`metadata key ${DOMAIN_KEY.bias} is not a number`);
  try {
    return new DomainModel({ hashes: Uint32Array.from(hashes.value as ArrayLike<number>), weights: Float32Array.from(weights.value as ArrayLike<number>), bias });
  } catch (err) {
    if (err instanceof GavelError && err.code === "CORRUPT_FILE") throw err;
    throw corrupt(`the domain table: ${err instanceof Error ? err.message : String(err)}`);
  }
}
