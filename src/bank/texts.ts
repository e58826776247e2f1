/**
 * The skill texts a bank needs back at route time (the verdict re-renders r(s) for the shortlist):
 * one small JSON file per content hash under <bank>/texts/, written atomically before the manifest
 * that names it is committed, so a committed bank never points at a missing text.
 */
import { mkdir, readFile, readdir, rename, rm, open } from "node:fs/promises";
import { join } from "node:path";
import { GavelError } from "../errors.js";
import type { RenderableSkill } from "../render/index.js";

export class TextStore {
  readonly dir: string;
  constructor(bankDir: string) {
    this.dir = join(bankDir, "texts");
  }

  #path(contentHash: string): string {
    if (!/^[0-9a-f]{16,128}$/.test(contentHash)) throw new GavelError(`bad content hash ${contentHash}`, "CORRUPT_FILE");
    return join(this.dir, `${contentHash}.json`);
  }

  async put(contentHash: string, skill: RenderableSkill): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const path = this.#path(contentHash);
    const tmp = `${path}.${process.pid}.tmp`;
    const fh = await open(tmp, "w");
    try {
      await fh.writeFile(JSON.stringify({ name: skill.name, description: skill.description, body: skill.body }));
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, path);
  }

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
