/**
 * The bytes of the bank's lexicon file (`lexicon.bin`, see lexicon.ts): a 16-byte header ("GAVELLEX",
 * u32 format version, u32 tokenizer version), then records, each framed as [u32 payload bytes]
 * [u32 CRC-32 of the payload][payload], little-endian, the payload zero-padded to a multiple of 4
 * bytes so that every record, and the term arrays inside it, start 4-aligned in the file (they are
 * read back as views of the file's bytes, not copied).
 *
 * Payloads (str: u32 UTF-8 byte count + bytes; term ids index the vocabulary that the records before
 * build, in order of first use):
 * - ADD: u8 1, u8 flags (1: the skill's text was lost, so it has no terms), str id, str contentHash,
 *   u32 tokens, u32 firstNewTerm (= vocabulary size before it), u32 k, str (its k new terms, ids
 *   firstNewTerm…, joined by "\n", which no term holds), u32 m, zero padding to 4-alignment,
 *   m × i32 term ids, m × i32 counts.
 * - REMOVE: u8 2, str id.
 * - COMMIT: u8 3, f64 generation (the manifest's it lands with), u32 skills tracked, u32 vocabulary size.
 *
 * @module
 */
import { crc32 } from "../util/crc32.js";
import type { DocTerms } from "../lexical/postings.js";

/** The lexicon's file name in a bank directory. */
export const LEXICON_FILE = "lexicon.bin";
/** Temporary lexicon files of interrupted snapshots (util/durable-file's temp names). */
export const LEXICON_TMP_RE = /^lexicon\.bin\.[0-9a-f]+\.tmp$/;
/** Version of this layout. */
export const LEXICON_FORMAT_VERSION = 1;

const MAGIC = "GAVELLEX";
/** Bytes of the header: magic, format version, tokenizer version. */
export const HEADER_BYTES = 16;
const FRAME_BYTES = 8;

const ADD = 1;
const REMOVE = 2;
const COMMIT = 3;

/** One skill's document as recorded. */
export interface AddRecord {
  kind: "add";
  id: string;
  contentHash: string;
  /** The skill's text was lost when the lexicon was rebuilt: tracked, without terms. */
  lost: boolean;
  firstNewTerm: number;
  newTerms: string[];
  doc: DocTerms;
}

export type LexiconRecord =
  | AddRecord
  | { kind: "remove"; id: string }
  | { kind: "commit"; generation: number; skills: number; vocabulary: number };

/** The file header for this format and tokenizer. */
export function encodeHeader(tokenizerVersion: number): Buffer {
  const b = Buffer.alloc(HEADER_BYTES);
  b.write(MAGIC, 0, "latin1");
  b.writeUInt32LE(LEXICON_FORMAT_VERSION, 8);
  b.writeUInt32LE(tokenizerVersion, 12);
  return b;
}

/** Why the header is not this format's (undefined when it is). */
export function headerProblem(buf: Buffer, tokenizerVersion: number): string | undefined {
  if (buf.length < HEADER_BYTES || buf.toString("latin1", 0, 8) !== MAGIC) return "not a lexicon file";
  if (buf.readUInt32LE(8) !== LEXICON_FORMAT_VERSION) return `lexicon format ${buf.readUInt32LE(8)}, this version reads ${LEXICON_FORMAT_VERSION}`;
  if (buf.readUInt32LE(12) !== tokenizerVersion) return `written by tokenizer version ${buf.readUInt32LE(12)}, this one is ${tokenizerVersion}`;
  return undefined;
}

/** Appends payload fields to growing chunks, then frames them. */
class Writer {
  #parts: Buffer[] = [];
  #bytes = 0;

  #push(b: Buffer): void {
    this.#parts.push(b);
    this.#bytes += b.length;
  }

  u8(v: number): this {
    this.#push(Buffer.of(v));
    return this;
  }

  u32(v: number): this {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    this.#push(b);
    return this;
  }

  f64(v: number): this {
    const b = Buffer.alloc(8);
    b.writeDoubleLE(v);
    this.#push(b);
    return this;
  }

  str(s: string): this {
    const b = Buffer.from(s, "utf8");
    return this.u32(b.length).bytes(b);
  }

  bytes(b: ArrayBufferView): this {
    this.#push(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
    return this;
  }

  /** Zero bytes up to a multiple of 4 from the payload's start. */
  align(): this {
    if (this.#bytes % 4) this.#push(Buffer.alloc(4 - (this.#bytes % 4)));
    return this;
  }

  /** [length][crc][payload] as one buffer. */
  frame(): Buffer {
    this.align();
    const payload = Buffer.concat(this.#parts, this.#bytes);
    const out = Buffer.allocUnsafe(FRAME_BYTES + payload.length);
    out.writeUInt32LE(payload.length, 0);
    out.writeUInt32LE(crc32(payload), 4);
    payload.copy(out, FRAME_BYTES);
    return out;
  }
}

/** A framed ADD record. */
export function encodeAdd(r: Omit<AddRecord, "kind">): Buffer {
  const w = new Writer().u8(ADD).u8(r.lost ? 1 : 0).str(r.id).str(r.contentHash).u32(r.doc.length).u32(r.firstNewTerm);
  w.u32(r.newTerms.length).str(r.newTerms.join("\n"));
  return w.u32(r.doc.terms.length).align().bytes(r.doc.terms).bytes(r.doc.tfs).frame();
}

/** A framed REMOVE record. */
export function encodeRemove(id: string): Buffer {
  return new Writer().u8(REMOVE).str(id).frame();
}

/** A framed COMMIT record. */
export function encodeCommit(generation: number, skills: number, vocabulary: number): Buffer {
  return new Writer().u8(COMMIT).f64(generation).u32(skills).u32(vocabulary).frame();
}

/** Reads payload fields; any read past the end throws (a record that lies about its size). */
class Reader {
  at: number;
  constructor(
    readonly buf: Buffer,
    from: number,
    readonly end: number,
  ) {
    this.at = from;
  }

  /** Skips zero padding up to a multiple of 4 from `from`. */
  align(from: number): void {
    const pad = (4 - ((this.at - from) % 4)) % 4;
    const at = this.#take(pad);
    for (let i = 0; i < pad; i++) if (this.buf[at + i] !== 0) throw new Error("non-zero padding");
  }

  #take(n: number): number {
    if (this.at + n > this.end) throw new Error("record shorter than its fields");
    const at = this.at;
    this.at += n;
    return at;
  }

  u8(): number {
    return this.buf[this.#take(1)];
  }

  u32(): number {
    return this.buf.readUInt32LE(this.#take(4));
  }

  f64(): number {
    return this.buf.readDoubleLE(this.#take(8));
  }

  str(): string {
    const n = this.u32();
    const at = this.#take(n);
    return this.buf.toString("utf8", at, at + n);
  }

  /** n int32s: a view of the buffer where it is aligned (the file's records are), else a copy. */
  i32s(n: number): Int32Array {
    const at = this.#take(4 * n);
    if ((this.buf.byteOffset + at) % 4 === 0) return new Int32Array(this.buf.buffer, this.buf.byteOffset + at, n);
    const out = new Int32Array(n);
    new Uint8Array(out.buffer).set(this.buf.subarray(at, at + 4 * n));
    return out;
  }
}

function decodeAdd(r: Reader, from: number): AddRecord {
  const lost = (r.u8() & 1) === 1;
  const id = r.str();
  const contentHash = r.str();
  const length = r.u32();
  const firstNewTerm = r.u32();
  const k = r.u32();
  const joined = r.str();
  const newTerms = k === 0 ? [] : joined.split("\n");
  if (newTerms.length !== k) throw new Error(`${newTerms.length} new terms, the record says ${k}`);
  const m = r.u32();
  r.align(from);
  const terms = r.i32s(m);
  const tfs = r.i32s(m);
  return { kind: "add", id, contentHash, lost, firstNewTerm, newTerms, doc: { terms, tfs, length } };
}

/** One record's payload. */
function decodePayload(r: Reader): LexiconRecord {
  const from = r.at;
  const kind = r.u8();
  let rec: LexiconRecord;
  if (kind === ADD) rec = decodeAdd(r, from);
  else if (kind === REMOVE) rec = { kind: "remove", id: r.str() };
  else if (kind === COMMIT) rec = { kind: "commit", generation: r.f64(), skills: r.u32(), vocabulary: r.u32() };
  else throw new Error(`unknown record kind ${kind}`);
  r.align(from);
  if (r.at !== r.end) throw new Error("record longer than its fields");
  return rec;
}

/**
 * The records of a lexicon file after its header, each with the offset where it ends, up to the
 * first that is torn (cut short by a crash), fails its CRC or does not parse; `stop` says why it
 * stopped there (undefined at a clean end of file).
 */
export function* readRecords(buf: Buffer): Generator<{ record: LexiconRecord; end: number }, { stop?: string; at: number }> {
  let at = HEADER_BYTES;
  while (at < buf.length) {
    if (at + FRAME_BYTES > buf.length) return { stop: "a torn record frame", at };
    const n = buf.readUInt32LE(at);
    const from = at + FRAME_BYTES;
    if (from + n > buf.length) return { stop: "a torn record", at };
    if (crc32(buf.subarray(from, from + n)) !== buf.readUInt32LE(at + 4)) return { stop: `a record that fails its CRC at byte ${at}`, at };
    let record: LexiconRecord;
    try {
      record = decodePayload(new Reader(buf, from, from + n));
    } catch (err) {
      return { stop: `a malformed record at byte ${at} (${(err as Error).message})`, at };
    }
    at = from + n;
    yield { record, end: at };
  }
  return { at };
}
