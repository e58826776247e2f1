/**
 * Where an installed skill came from, found again: the bank records `source` as the install saw it (a
 * SKILL.md path, `library.jsonl:line`, or `input[i]`), which in older banks was relative to the folder
 * the install ran in. This module resolves it to an absolute path (trying the likely install folders
 * for a relative one), says which host folder or library holds it, and reads its front matter back.
 *
 * @module
 */
import { statSync } from "node:fs";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { readRegularFile } from "../gguf/regular-file.js";
import { parseSkillMarkdown } from "../skills/index.js";
import { MAX_FRONT_MATTER_BYTES } from "../skills/parse.js";
import { buildSkill } from "../skills/parse.js";
import { jsonlLines } from "../util/jsonl.js";
import { pathsOf, samePath } from "../util/same-path.js";

/** Which host a skill folder belongs to, read from the folder that holds it. */
export type SkillHost = "claude-code" | "codex" | "agents" | "github-copilot" | null;

/** Where an installed skill came from. */
export type SkillProvenance =
  | {
      kind: "folder";
      /** The folder holding the skill's folder, e.g. `/home/me/project/.claude/skills`. */
      hostFolder: string;
      /** The host that reads skills from `hostFolder`, when its layout says (`.claude/skills`, …). */
      host: SkillHost;
    }
  | {
      kind: "library";
      /** The JSONL (or .jsonl.gz) library file, absolute. */
      library: string;
      /** Its line (1-based). */
      line: number;
    }
  | {
      kind: "input";
      /** The label the records were installed under (`input[3]`, or the `source` they brought). */
      label: string;
    };

/** A recorded `source` resolved on this machine. */
export interface SkillLocation {
  /** The SKILL.md or library file, absolute; null for in-memory records, or when no file is found. */
  path: string | null;
  /** The skill's folder (its scripts/, references/ …), absolute; null unless a folder skill was found. */
  dir: string | null;
  provenance: SkillProvenance;
}

const HOST_FOLDERS: readonly [readonly [string, string], SkillHost][] = [
  [[".claude", "skills"], "claude-code"],
  [[".codex", "skills"], "codex"],
  [[".agents", "skills"], "agents"],
  [[".github", "skills"], "github-copilot"],
];

/**
 * The host whose skills folder `hostFolder` is, by its last two path names, compared as the
 * platform compares paths (`.Claude/Skills` is `.claude/skills` on macOS and Windows).
 */
export function hostOfFolder(hostFolder: string, platform: NodeJS.Platform = process.platform): SkillHost {
  const paths = pathsOf(platform);
  const above = paths.dirname(paths.dirname(hostFolder));
  for (const [tail, host] of HOST_FOLDERS) if (samePath(hostFolder, paths.join(above, ...tail), platform)) return host;
  return null;
}

/** A `path:line` source of a JSONL library (any file but a .md is read as one), split; null for anything else. */
function librarySource(source: string): { file: string; line: number } | null {
  const m = /^(.+):(\d+)$/.exec(source);
  return m && !/\.md$/i.test(m[1]) ? { file: m[1], line: Number(m[2]) } : null;
}

/** Whether a recorded `source` names a folder skill's .md file: not a JSONL row, not an `input[i]` label. */
function folderSource(source: string): boolean {
  return /\.md$/i.test(source) && !librarySource(source);
}

/**
 * Folders a relative `source` may be relative to, most likely first: the current directory, and the
 * project that holds the bank (`<project>/.gavel/bank` → `<project>`, and the bank's parent).
 */
export function installRoots(bankDir: string): string[] {
  const bank = resolve(bankDir);
  const roots = [process.cwd()];
  if (basename(bank) === "bank" && basename(dirname(bank)) === ".gavel") roots.push(dirname(dirname(bank)));
  roots.push(dirname(bank));
  return [...new Set(roots)];
}

/**
 * Whether `path` is a regular file, following links: not a folder, a FIFO or a device such as
 * /dev/zero, which a host told to read the path would block on or read without end.
 */
export function isRegularFile(path: string): boolean {
  try {
    return statSync(path, { throwIfNoEntry: false })?.isFile() ?? false;
  } catch {
    return false; // unreadable on the way (EACCES), a link loop (ELOOP)
  }
}

/** The absolute file behind a recorded path: itself when absolute, else the first root under which it is a regular file. */
function resolveRecorded(file: string, bankDir: string): string | null {
  if (isAbsolute(file)) return isRegularFile(file) ? file : null;
  for (const root of installRoots(bankDir)) {
    const p = join(root, file);
    if (isRegularFile(p)) return p;
  }
  return null;
}

/**
 * Resolves a recorded `source` (absolute, or relative to the folder the install ran in) on this
 * machine. Synchronous and cheap (a few `stat`s), so a route result can carry it.
 */
export function locateSkill(source: string, bankDir: string): SkillLocation {
  const lib = librarySource(source);
  if (lib) {
    const path = resolveRecorded(lib.file, bankDir);
    return { path, dir: null, provenance: { kind: "library", library: path ?? resolve(lib.file), line: lib.line } };
  }
  if (!folderSource(source)) return { path: null, dir: null, provenance: { kind: "input", label: source } };
  const path = resolveRecorded(source, bankDir);
  const dir = dirname(path ?? resolve(source));
  const hostFolder = dirname(dir);
  return { path, dir: path ? dir : null, provenance: { kind: "folder", hostFolder, host: hostOfFolder(hostFolder) } };
}

/**
 * The SKILL.md (or other .md) file a folder skill's recorded `source` names, as {@link locateSkill}
 * finds it (else the source resolved against the current folder), without its `stat`s for an absolute
 * source: what a caller that only wants the file's place reads for every installed skill (the
 * watcher of `gavel serve --watch`). Null for a JSONL library's row and a skill given in memory.
 */
export function skillFileOf(source: string, bankDir: string): string | null {
  if (!folderSource(source)) return null;
  return isAbsolute(source) ? resolve(source) : (resolveRecorded(source, bankDir) ?? resolve(source));
}

/** What the source file says today: its front matter and the hash of its texts. */
export interface SourceReading {
  /** Every front-matter key (or JSONL field) but name, description and body. */
  meta: Record<string, unknown>;
  contentHash: string;
}

/**
 * Largest SKILL.md read back after install (16 MiB: sixteen times the loader's default body cap, plus
 * its front matter). A larger file is not what was installed under the default cap and reads as gone.
 */
export const MAX_SOURCE_BYTES = 16 * 1024 * 1024 + MAX_FRONT_MATTER_BYTES;

/**
 * Reads the skill at `loc` again (SKILL.md or its JSONL row); null when it is gone, no longer parses,
 * or is no longer a regular file within {@link MAX_SOURCE_BYTES} (a FIFO, a device such as /dev/zero,
 * a link to one, a huge file: refused before a byte is read, so a swapped file never blocks or floods
 * a server; see gguf/regular-file.ts and util/jsonl.ts's `jsonlLines`).
 */
export async function readSource(loc: SkillLocation): Promise<SourceReading | null> {
  if (loc.path === null) return null;
  try {
    if (loc.provenance.kind === "library") return await readLibraryRow(loc.path, loc.provenance.line);
    const bytes = await readRegularFile(loc.path, MAX_SOURCE_BYTES);
    const skill = parseSkillMarkdown(bytes, loc.path, { folderName: basename(dirname(loc.path)), maxBodyBytes: MAX_SOURCE_BYTES });
    return { meta: skill.meta, contentHash: skill.contentHash };
  } catch {
    return null;
  }
}

/** Row `line` of a JSONL library, read as the loader reads it (unknown fields and `meta` into meta). */
async function readLibraryRow(file: string, line: number): Promise<SourceReading | null> {
  for await (const row of jsonlLines(file)) {
    if (row.line < line) continue;
    if (row.line > line) return null;
    const rec = JSON.parse(row.text) as Record<string, unknown>;
    const { id, name, description, body, meta, disableModelInvocation, contentHash: _h, source: src, warnings: _w, ...rest } = rec;
    const merged: Record<string, unknown> = { ...rest };
    if (src !== undefined) merged["source"] = src;
    if (meta && typeof meta === "object" && !Array.isArray(meta)) Object.assign(merged, meta);
    const skill = buildSkill({ id, name, description, body, meta: merged, source: `${file}:${line}`, disableModelInvocation, lenientText: true });
    return { meta: skill.meta, contentHash: skill.contentHash };
  }
  return null;
}
