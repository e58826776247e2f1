/**
 * The skill texts a bank needs back at route time (the verdict re-renders r(s) for the shortlist):
 * one small JSON file per content hash under <bank>/texts/, written atomically before the manifest
 * that names it is committed, so a committed bank never points at a missing text.
 */
import { mkdir, readFile, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { GavelError } from "../errors.js";
import { fsyncDir, writeFileDurable } from "../util/durable-file.js";
import type { RenderableSkill } from "../render/index.js";

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

  /** Writes a skill's text under its content hash (whole or not at all). */
  async put(contentHash: string, skill: RenderableSkill): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const path = this.#path(contentHash);
    const text = JSON.stringify({ name: skill.name, description: skill.description, body: skill.body });
    // The file is fsynced before its rename; the texts directory is synced once by syncDir(), not
    // per skill, so an install of thousands of skills does not pay a directory fsync each.
    await writeFileDurable(path, text, { syncDir: false });
  }

  /**
   * fsyncs the texts directory, so the renames of every text put so far survive a power cut: call it
   * before committing a manifest that names them.
   */
  async syncDir(): Promise<void> {
    await fsyncDir(this.dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== "ENOENT") throw err; // no text was ever put
    });
  }

  /** A skill's text by content hash; CORRUPT_FILE when the bank has lost it. */
  async get(contentHash: string): Promise<RenderableSkill> {
    let text: string;
    try {
      text = await readFile(this.#path(contentHash), "utf8");
    } catch (err) {
      throw new GavelError(`the bank has lost the text of a skill (${contentHash}); reinstall it`, "CORRUPT_FILE", { cause: err });
    }
    const v = JSON.parse(text) as RenderableSkill;
    if (typeof v.name !== "string" || typeof v.description !== "string" || typeof v.body !== "string") {
      throw new GavelError(`the bank's text ${contentHash} is corrupt; reinstall the skill`, "CORRUPT_FILE");
    }
    return v;
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
        await rm(join(this.dir, name), { force: true });
        n++;
      }
    }
    return n;
  }
}
