/**
 * The skill texts a bank needs back at route time (the verdict re-renders r(s) for the shortlist):
 * one small JSON file per content hash under <bank>/texts/, written atomically before the manifest
 * that names it is committed, so a committed bank never points at a missing text.
 */
import { lstat, mkdir, readdir, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { GavelError, clip, clipMessage } from "../errors.js";
import { BANK_DIR_MODE, BANK_FILE_MODE } from "./modes.js";
import { readRegularFile, RegularFileError } from "../gguf/regular-file.js";
import { skillContentHash } from "../skills/index.js";
import { fsyncDir, writeFileDurable } from "../util/durable-file.js";
import type { RenderableSkill } from "../render/index.js";

/** Largest stored text read (V8's string limit is ~512 MB; a text is one skill's). */
export const MAX_TEXT_BYTES = 256 * 1024 * 1024;

/**
 * Whether a content hash can be checked against the text it names: the hashes install writes are
 * sha256 hex of [name, description, body] (`skillContentHash`); other writers' hashes (16–128 hex
 * digits) are read unverified.
 */
export function isVerifiableHash(contentHash: string): boolean {
  return /^[0-9a-f]{64}$/.test(contentHash);
}

/**
 * Parses a stored text and checks it against its content hash; a plain Error saying what is wrong
 * (the caller names the file).
 */
export function parseStoredText(bytes: Buffer, contentHash: string): RenderableSkill {
  let v: unknown;
  try {
    v = JSON.parse(bytes.toString("utf8"));
  } catch (err) {
    throw new Error(`it is not valid JSON (${clipMessage(err)})`);
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Error("it is not a JSON object");
  const { name, description, body } = v as Record<string, unknown>;
  if (typeof name !== "string" || typeof description !== "string" || typeof body !== "string") {
    throw new Error("it lacks a string name, description or body");
  }
  if (isVerifiableHash(contentHash) && skillContentHash(name, description, body) !== contentHash) {
    throw new Error("its content does not match the hash it is stored under");
  }
  return { name, description, body };
}

/**
 * Removes a folder standing where a text is about to be written (damage: texts/ holds only the
 * bank's files, and the text written is the one its hash names), which the rename could not replace.
 * Anything else is replaced by the rename itself.
 */
async function clearPlace(path: string): Promise<void> {
  const st = await lstat(path).catch(() => undefined);
  if (!st?.isDirectory()) return;
  await rm(path, { recursive: true, force: true }).catch((err: unknown) => {
    throw new GavelError(`${clip(path)} is a folder where the bank keeps a skill's text and cannot be removed (${clipMessage(err)}); move it aside`, "CORRUPT_FILE", { cause: err });
  });
}

/** The texts of one bank, by content hash. */
export class TextStore {
  /** `<bank>/texts`. */
  readonly dir: string;
  constructor(bankDir: string) {
    this.dir = join(bankDir, "texts");
  }

  #path(contentHash: string): string {
    if (!/^[0-9a-f]{16,128}$/.test(contentHash)) throw new GavelError(`bad content hash ${contentHash}`, "CORRUPT_FILE");
    return join(this.dir, `${contentHash}.json`);
  }

  /** Writes a skill's text under its content hash (whole or not at all), over whatever is in its place. */
  async put(contentHash: string, skill: RenderableSkill): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: BANK_DIR_MODE }).catch((err: unknown) => {
      throw new GavelError(`${clip(this.dir)} cannot hold the bank's texts (${clipMessage(err)}); move it aside`, "CORRUPT_FILE", { cause: err });
    });
    const path = this.#path(contentHash);
    await clearPlace(path);
    const text = JSON.stringify({ name: skill.name, description: skill.description, body: skill.body });
    // The file is fsynced before its rename; the texts directory is synced once by syncDir(), not
    // per skill, so an install of thousands of skills does not pay a directory fsync each.
    await writeFileDurable(path, text, { syncDir: false, mode: BANK_FILE_MODE });
  }

  /**
   * fsyncs the texts directory, so the renames of every text put so far survive a power cut: call it
   * before committing a manifest that names them.
   */
  async syncDir(): Promise<void> {
    // Only a directory is opened: a FIFO or a device put in its place would block or fail the open.
    const st = await stat(this.dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === "ENOENT") return undefined; // no text was ever put
      throw new GavelError(`${clip(this.dir)} cannot be read (${err.message})`, "CORRUPT_FILE", { cause: err });
    });
    if (st === undefined) return;
    if (!st.isDirectory()) throw new GavelError(`${clip(this.dir)} is not a directory, so the bank's texts are lost; move it aside and reinstall the skills`, "CORRUPT_FILE");
    await fsyncDir(this.dir);
  }

  /** The path of the text stored under `contentHash`. */
  pathOf(contentHash: string): string {
    return this.#path(contentHash);
  }

  /**
   * A skill's text by content hash, verified against that hash; CORRUPT_FILE naming the file when the
   * bank has lost it, it is not a regular file, it does not parse, or its content is not the one the
   * hash names (a damaged or replaced file is never used as is).
   */
  async get(contentHash: string): Promise<RenderableSkill> {
    const path = this.#path(contentHash);
    let bytes: Buffer;
    try {
      bytes = await readRegularFile(path, MAX_TEXT_BYTES);
    } catch (err) {
      const why = err instanceof RegularFileError && err.reason === "missing" ? "is missing" : `cannot be read (${(err as Error).message})`;
      throw new GavelError(`the bank has lost the text of a skill: ${clip(path)} ${why}; reinstall the skill`, "CORRUPT_FILE", { cause: err });
    }
    try {
      return parseStoredText(bytes, contentHash);
    } catch (err) {
      throw new GavelError(`the bank's text ${clip(path)} is corrupt: ${clipMessage(err)}; reinstall the skill`, "CORRUPT_FILE", { cause: err });
    }
  }

  /** Deletes texts no entry names any more (and temp files of interrupted writes). */
  async prune(live: Set<string>): Promise<number> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch {
      return 0;
    }
    let n = 0;
    for (const name of names) {
      const hash = name.endsWith(".json") ? name.slice(0, -5) : null;
      if (hash === null || !live.has(hash)) {
        // texts/ holds only the bank's files: a folder in it is damage, removed as a stray text is
        await rm(join(this.dir, name), { recursive: true, force: true });
        n++;
      }
    }
    return n;
  }
}
