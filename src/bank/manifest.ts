/**
 * The bank manifest (`manifest.json`): the {@link BankManifest} that says which keys file and how
 * many of its rows are committed, and one entry per skill. Parsing checks everything a crash or a
 * foreign writer could get wrong; writing replaces the file atomically and durably, in pieces.
 */
import { createHash } from "node:crypto";
import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { GavelError, invalidArgument, clip, clipMessage } from "../errors.js";
import { readRegularFile, RegularFileError } from "../gguf/regular-file.js";
import { describeMismatch, isModelFingerprint } from "../model/fingerprint.js";
import { writeAll, writeFileDurable } from "../util/durable-file.js";
import { checkLayer, isUint } from "../util/validate.js";
import { checkEntryFields, freezeEntry } from "./entries.js";
import { asPermissionError, BANK_FILE_MODE, permissionCause } from "./modes.js";
import { LEXICON_FILE } from "./lexicon-log.js";
import { BANK_FORMAT_VERSION, READABLE_BANK_FORMATS, type BankEntry, type BankEntryInput, type BankHeader, type BankManifest } from "./types.js";

/** The manifest's file name in a bank directory. */
export const MANIFEST = "manifest.json";
/** Names of keys files: `keys.bin`, and `keys.<generation>.bin` after a compaction. */
export const KEYS_FILE_RE = /^keys(\.\d+)?\.bin$/;
/** Temporary manifests of interrupted commits (util/durable-file's temp names). */
export const MANIFEST_TMP_RE = /^manifest\.json\.[0-9a-f]+\.tmp$/;

/**
 * Largest manifest read: ~2.7 KB a skill, so 30K skills take ~80 MB; this leaves room for ~150K while
 * staying under V8's string length limit.
 */
export const MAX_MANIFEST_BYTES = 400 * 1024 * 1024;

/** The manifest of a bank that was just created: no rows, no entries. */
export function emptyManifest(header: BankHeader): BankManifest {
  return {
    format: "gavel-bank",
    formatVersion: BANK_FORMAT_VERSION,
    header: normalizeHeader(header),
    keysFile: "keys.bin",
    rows: 0,
    generation: 0,
    entries: [],
  };
}

/**
 * The manifest's seal (format 2): its last key, `"manifestSha256"`, holds the sha256 hex of every byte
 * of the file before the comma that precedes it, so a change to any byte of any field (description,
 * source, name, allowed-tools, keys' checksums, …) or of the seal itself is caught, and the seal is
 * checked before anything the file says is used.
 */
export const MANIFEST_SEAL_KEY = "manifestSha256";
const SEAL_RE = /,"manifestSha256":"([0-9a-f]{64})"\}\n?$/;

/** The seal's tail of a manifest whose text so far (`{…,"entries":[…]`) hashed to `sha256`. */
function sealTail(sha256: string): string {
  return `,"${MANIFEST_SEAL_KEY}":"${sha256}"}\n`;
}

/**
 * The text of `m` as a format-2 manifest, sealed (for tools and tests that write one by hand; the
 * store writes it in pieces, see {@link writeManifest}). A `manifestSha256` in `m` is ignored.
 */
export function sealedManifestText(m: object): string {
  const { [MANIFEST_SEAL_KEY]: _old, ...rest } = m as Record<string, unknown>;
  const body = JSON.stringify(rest).slice(0, -1);
  return body + sealTail(createHash("sha256").update(body, "utf8").digest("hex"));
}

/**
 * Checks the seal of a manifest's bytes: null when it holds, else what is wrong (no seal where it
 * must be the last key, or a hash that does not match).
 */
export function manifestSealProblem(bytes: Buffer): string | null {
  // The seal is ASCII and at most ~90 bytes: look only at the tail.
  const tail = bytes.subarray(Math.max(0, bytes.length - 100)).toString("latin1");
  const m = SEAL_RE.exec(tail);
  if (!m) return `it has no valid "${MANIFEST_SEAL_KEY}" seal as its last key`;
  const end = bytes.length - (tail.length - m.index);
  const actual = createHash("sha256").update(bytes.subarray(0, end)).digest("hex");
  return actual === m[1] ? null : `its content does not match its "${MANIFEST_SEAL_KEY}" seal (it was edited or damaged)`;
}

/** Strings longer than this are flushed while the manifest is written (V8 caps a string's length). */
const PIECE_CHARS = 1 << 23;

/**
 * Replaces `<dir>/manifest.json` durably with `head` plus `entries`. The text is that of
 * JSON.stringify({ ...head, entries }), written in pieces: an entry's JSON is made once per entry
 * object and kept in `entryJson` (entries are frozen; a changed skill is a new object), so a commit
 * at 30K skills rewrites 80 MB without formatting 15M key tokens again, and no single string
 * approaches V8's length limit. The bytes are hashed as they are written, and the seal
 * (`manifestSha256`, {@link MANIFEST_SEAL_KEY}) closes the object.
 */
export async function writeManifest(
  dir: string,
  head: Omit<BankManifest, "entries">,
  entries: Iterable<BankEntry>,
  entryJson: WeakMap<BankEntry, string>,
): Promise<void> {
  await writeFileDurable(join(dir, MANIFEST), async (fh) => {
    const { [MANIFEST_SEAL_KEY]: _old, ...plainHead } = head as typeof head & Record<string, unknown>;
    let piece = JSON.stringify(plainHead).slice(0, -1) + ',"entries":[';
    let at = 0;
    const hash = createHash("sha256");
    const flush = async (text: string, sealed = true) => {
      const bytes = Buffer.from(text, "utf8");
      if (sealed) hash.update(bytes);
      await writeAll(fh, bytes, at);
      at += bytes.byteLength;
    };
    let first = true;
    for (const e of entries) {
      let json = entryJson.get(e);
      if (json === undefined) entryJson.set(e, (json = JSON.stringify(e)));
      piece += first ? json : "," + json;
      first = false;
      if (piece.length >= PIECE_CHARS) {
        await flush(piece);
        piece = "";
      }
    }
    await flush(piece + "]");
    await flush(sealTail(hash.digest("hex")), false);
  }, { mode: BANK_FILE_MODE });
}

/**
 * What of a bank lies in `dir` when its manifest does not: non-empty keys files, a lexicon, stored
 * texts (the files a commit leaves; an empty keys.bin is what a first open that crashed before its
 * first commit leaves, and holds nothing to lose).
 */
async function bankFilesWithoutManifest(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (KEYS_FILE_RE.test(e.name) || e.name === LEXICON_FILE) {
      const size = await stat(join(dir, e.name)).then((s) => s.size, () => 0);
      if (size > 0) found.push(`${e.name} (${size} bytes)`);
    } else if (e.name === "texts" && e.isDirectory()) {
      const n = (await readdir(join(dir, e.name)).catch(() => [])).length;
      if (n > 0) found.push(`texts/ (${n} files)`);
    }
  }
  return found;
}

/**
 * Throws CORRUPT_FILE when `dir` holds a bank's files but no manifest (called when there is none):
 * such a bank must never be re-initialised, which would truncate its keys. Changes nothing.
 */
export async function refuseBankWithoutManifest(dir: string): Promise<void> {
  const left = await bankFilesWithoutManifest(dir);
  if (left.length === 0) return;
  throw new GavelError(
    `bank ${dir} holds ${left.join(", ")} but no ${MANIFEST}, so its keys cannot be read; nothing was changed. ` +
      `Restore ${MANIFEST} from a backup, or move ${dir} aside and run \`gavel install\` to rebuild the bank`,
    "CORRUPT_FILE",
  );
}

/** The bank's manifest, or undefined when there is none; CORRUPT_FILE when it cannot be parsed. */
export async function readManifest(dir: string): Promise<BankManifest | undefined> {
  const path = join(dir, MANIFEST);
  let bytes: Buffer;
  try {
    // A regular file (after symlinks) within MAX_MANIFEST_BYTES: a FIFO never blocks the open and a
    // device such as /dev/zero is never read (util/regular-file.ts).
    bytes = await readRegularFile(path, MAX_MANIFEST_BYTES);
  } catch (err) {
    if (!(err instanceof RegularFileError)) {
      // An I/O error while reading (EIO, say: /proc/self/mem is a "regular file" of size 0).
      throw new GavelError(`${clip(path)} cannot be read (${clipMessage(err)}); restore it from a backup, or move ${clip(dir)} aside and run \`gavel install\` again`, "CORRUPT_FILE", { cause: err });
    }
    if (err.reason === "missing") return undefined;
    // another user's bank, or a folder this user may not read: not a damaged bank
    if (permissionCause(err) !== undefined) throw asPermissionError(err, dir, "reading");
    throw new GavelError(`${err.message}; the bank's manifest must be a regular file. Restore it from a backup, or move ${clip(dir)} aside and run \`gavel install\` again`, "CORRUPT_FILE", { cause: err });
  }
  return manifestFromBytes(bytes, dir);
}

/**
 * The manifest of bank `dir` from its file's bytes, as {@link readManifest} reads it: JSON, then the
 * seal (format 2 on, or wherever one is present), then every field.
 *
 * @throws GavelError CORRUPT_FILE naming what is wrong
 */
export function manifestFromBytes(bytes: Buffer, dir: string): BankManifest {
  const path = join(dir, MANIFEST);
  let raw: unknown;
  try {
    raw = JSON.parse(bytes.toString("utf8"));
  } catch (err) {
    throw new GavelError(`${clip(path)} is not valid JSON (${clipMessage(err)}); delete ${clip(dir)} and run \`gavel install\` again`, "CORRUPT_FILE", { cause: err });
  }
  // From format 2 on, nothing the file says is used before its seal is checked; a manifest that
  // carries a seal has it checked whatever its version says, so a flipped bit in the version is
  // damage (CORRUPT_FILE), not a bank of another format.
  const version = (raw as { formatVersion?: unknown } | null)?.formatVersion;
  const sealed = typeof raw === "object" && raw !== null && Object.hasOwn(raw, MANIFEST_SEAL_KEY);
  if (sealed || (typeof version === "number" && version >= 2 && READABLE_BANK_FORMATS.includes(version))) {
    const problem = manifestSealProblem(bytes);
    if (problem !== null) {
      throw new GavelError(
        `${path} is corrupt: ${problem}; restore it from a backup, or delete ${dir} and run \`gavel install\` again`,
        "CORRUPT_FILE",
      );
    }
  }
  return parseManifest(raw, path, dir);
}

/** A parsed manifest, checked field by field (CORRUPT_FILE saying what is wrong and how to rebuild). */
function parseManifest(raw: unknown, path: string, dir: string): BankManifest {
  const bad = (why: string) =>
    new GavelError(`${clip(path)} is corrupt: ${why}; delete ${clip(dir)} and run \`gavel install\` again`, "CORRUPT_FILE");
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw bad("not a JSON object");
  const m = raw as Record<string, unknown>;
  if (m.format !== "gavel-bank") throw bad(`format is ${JSON.stringify(m.format)}, expected "gavel-bank"`);
  if (!isUint(m.formatVersion)) throw bad("formatVersion is not a non-negative integer");
  if (!READABLE_BANK_FORMATS.includes(m.formatVersion)) {
    // Readable enough to report the mismatch; the rest may follow another layout, so stop here.
    return { ...(m as unknown as BankManifest), entries: [] };
  }
  try {
    checkHeader(m.header as BankHeader, "header");
  } catch (err) {
    throw bad((err as Error).message);
  }
  const header = m.header as BankHeader;
  if (typeof m.keysFile !== "string" || !KEYS_FILE_RE.test(m.keysFile)) throw bad(`keysFile ${JSON.stringify(m.keysFile)} is not a keys file name`);
  if (!isUint(m.rows)) throw bad("rows is not a non-negative integer");
  if (!isUint(m.generation)) throw bad("generation is not a non-negative integer");
  if (!Array.isArray(m.entries)) throw bad("entries is not an array");
  const rows = m.rows;
  const ids = new Set<string>();
  let end = 0;
  const entries: BankEntry[] = m.entries.map((e: unknown, i: number) => {
    let entry: BankEntry;
    try {
      const x = e as Record<string, unknown>;
      if (typeof e !== "object" || e === null) throw new Error("not an object");
      if (!isUint(x.nKeys) || x.nKeys === 0) throw new Error("nKeys is not a positive integer");
      if (!isUint(x.offset)) throw new Error("offset is not a non-negative integer");
      const nKeys = x.nKeys as number;
      const offset = x.offset as number;
      const sum = x.keysSha256;
      if (sum !== undefined && (typeof sum !== "string" || !/^[0-9a-f]{64}$/.test(sum))) throw new Error("keysSha256 is not a sha256 hex string");
      entry = { ...checkEntryFields(x as unknown as BankEntryInput, nKeys), nKeys, offset, ...(sum !== undefined ? { keysSha256: sum } : {}) };
    } catch (err) {
      throw bad(`entry ${i}: ${(err as Error).message}`);
    }
    if (ids.has(entry.id)) throw bad(`entry ${i}: duplicate id ${JSON.stringify(entry.id)}`);
    ids.add(entry.id);
    // Entries are written in row order and never share rows; anything else was not written by us.
    if (entry.offset < end) throw bad(`entry ${i} (${entry.id}) overlaps or precedes the previous entry's rows`);
    end = entry.offset + entry.nKeys;
    if (end > rows) throw bad(`entry ${i} (${entry.id}) ends at row ${end}, past the ${rows} committed rows`);
    return freezeEntry(entry);
  });
  return {
    format: "gavel-bank",
    formatVersion: m.formatVersion,
    header: normalizeHeader(header),
    keysFile: m.keysFile,
    rows,
    generation: m.generation,
    entries,
  };
}

const short = (h: string) => `${h.slice(0, 12)}…`;

/** Throws BANK_MISMATCH naming every difference between the bank's header and `expected`. */
export function verifyHeader(dir: string, m: BankManifest, expected: BankHeader): void {
  const rebuild = `delete ${dir} and run \`gavel install\` again to rebuild it`;
  if (!READABLE_BANK_FORMATS.includes(m.formatVersion)) {
    const newer = m.formatVersion > BANK_FORMAT_VERSION;
    throw new GavelError(
      `bank ${dir} uses bank format ${m.formatVersion}, ${newer ? "newer than" : "older than"} the format ${BANK_FORMAT_VERSION} this gavel-router reads; ` +
        (newer ? `upgrade gavel-router, or ${rebuild}` : rebuild) +
        ".",
      "BANK_MISMATCH",
    );
  }
  const h = m.header;
  const diffs: string[] = [];
  const modelDiff = describeMismatch(h.model, expected.model);
  if (modelDiff !== undefined) diffs.push(`it was built with another model (${modelDiff}; bank vs now)`);
  if (h.projectionsHash !== expected.projectionsHash) {
    diffs.push(`it was built with projections ${short(h.projectionsHash)}, the projections in use are ${short(expected.projectionsHash)}`);
  }
  if (h.layer !== expected.layer) diffs.push(`its keys read layer ${h.layer}, the projections read layer ${expected.layer}`);
  if (h.eps !== expected.eps) diffs.push(`it was compressed with ε = ${h.eps}, the projections use ε = ${expected.eps}`);
  if (h.dim !== expected.dim) diffs.push(`its keys have ${h.dim} dimensions, the projections produce ${expected.dim}`);
  if (diffs.length === 0) return;
  throw new GavelError(
    `bank ${dir} does not match this setup: ${diffs.join("; ")}. ` +
      `Open it with the model and projections ${short(h.projectionsHash)} it was built with (\`gavel info ${dir}\` prints them; \`gavel info <projections.gguf>\` a file's keysHash), or ${rebuild}.`,
    "BANK_MISMATCH",
  );
}

/** Checks a header given by a caller (or read from a manifest); the ℓ* check is util/validate's. */
export function checkHeader(h: BankHeader, what: string): void {
  if (typeof h !== "object" || h === null) throw invalidArgument(`${what} must be a BankHeader object`);
  if (!isModelFingerprint(h.model)) throw invalidArgument(`${what}.model is not a model fingerprint`);
  if (typeof h.projectionsHash !== "string" || !/^[0-9a-f]{64}$/.test(h.projectionsHash)) {
    throw invalidArgument(`${what}.projectionsHash must be a sha256 hex string`);
  }
  checkLayer(h.layer, h.model.nLayer, `${what}.layer`);
  if (typeof h.eps !== "number" || !(h.eps > 0 && h.eps <= 2)) throw invalidArgument(`${what}.eps must be in (0, 2]`);
  if (!isUint(h.dim) || h.dim === 0) throw invalidArgument(`${what}.dim must be a positive integer`);
}

/** A plain copy holding only the header's fields (no extra properties leak into the manifest). */
export function normalizeHeader(h: BankHeader): BankHeader {
  const { architecture, nLayer, nEmbd, nVocab, vocabHash } = h.model;
  return Object.freeze({
    model: Object.freeze({ architecture, nLayer, nEmbd, nVocab, vocabHash }),
    projectionsHash: h.projectionsHash,
    layer: h.layer,
    eps: h.eps,
    dim: h.dim,
  });
}
