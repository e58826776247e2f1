/**
 * What a sync of the skill watcher (watch.ts) reads of its folders: each SKILL.md, 16 at a time,
 * against the skill installed from that folder.
 *
 * @module
 */
import { basename, join } from "node:path";
import type { Router } from "../route/index.js";
import { MAX_SOURCE_BYTES } from "../route/skill-source.js";
import { parseSkillMarkdown } from "../skills/parse.js";
import type { Skill } from "../skills/types.js";
import { inOrder } from "../util/in-order.js";
import { readRegularFile, RegularFileError } from "../util/regular-file.js";

/** What one sync of the watcher did. */
export interface WatchSync {
  installed: string[];
  updated: string[];
  uninstalled: string[];
  /** Skills left as installed, and why (their SKILL.md is unreadable, not a regular file, too large, or no longer parses). */
  kept: { id: string; reason: string }[];
  failed: { where: string; message: string }[];
}

export const SKILL_FILE = "SKILL.md";
/** SKILL.md files a sync reads at once. */
const READ_WIDTH = 16;

/**
 * Reads each folder's SKILL.md: the installed skills whose text changed or whose entry was built
 * with other budgets than the router's (`changed`), the skills of
 * folders not installed (`fresh`), the installed skills whose SKILL.md is gone (`gone`: id and folder);
 * an installed skill whose SKILL.md cannot be read or parsed is kept (in `out`).
 */
export async function readSkillFolders(router: Router, dirs: readonly string[], installed: ReadonlyMap<string, { id: string; source: string }>, out: WatchSync, signal: AbortSignal) {
  const changed: Skill[] = [];
  /** What was read installed for each skill to install over it: its source, and content where read. */
  const saw = new Map<string, { source: string; contentHash?: string }>();
  const fresh: { skill: Skill; dir: string }[] = [];
  const gone = new Map<string, string>();
  // read and parsed 16 at a time, taken in the folders' order
  const readOne = async (dir: string) => {
    const file = join(dir, SKILL_FILE);
    return parseSkillMarkdown(await readRegularFile(file, MAX_SOURCE_BYTES), file, { folderName: basename(dir) });
  };
  await inOrder(new Set(dirs), { width: READ_WIDTH, beforeEach: () => signal.throwIfAborted() }, readOne, (dir, read) => {
    const known = installed.get(dir);
    if (!read.ok) {
      const err = read.error;
      if (err instanceof RegularFileError && err.reason === "missing") {
        if (known) gone.set(known.id, dir);
      } else if (known) out.kept.push({ id: known.id, reason: err instanceof Error ? err.message : String(err) });
      return; // not a skill folder (a file beside the skills, a folder without SKILL.md): nothing to do
    }
    const skill = read.value;
    if (!known) return void fresh.push({ skill, dir });
    skill.id = known.id; // a plugin's skill keeps its plugin:skill id
    const now = router.installedState(known.id);
    if (now === undefined) return; // uninstalled since this sync listed it (by another client): not this sync's
    if (skill.contentHash !== now.contentHash || now.builtOtherwise) { // or built with other budgets
      changed.push(skill);
      saw.set(skill.id, { source: known.source, contentHash: now.contentHash });
    }
  });
  return { changed, fresh, gone, saw };
}
