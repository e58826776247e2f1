import { existsSync, type Dirent } from "node:fs";
import { readdir, realpath, stat } from "node:fs/promises";
import { basename, dirname, extname, join } from "node:path";
import { GavelError, invalidArgument, clip, clipLocation, clipMessage } from "../errors.js";
import { jsonlLines } from "../util/jsonl.js";
import { errnoCause, PERMISSION_ERRNOS } from "../util/errno.js";
import { inOrder } from "../util/in-order.js";
import { readRegularFile, RegularFileError } from "../gguf/regular-file.js";
import { buildSkill, MAX_FRONT_MATTER_BYTES, parseSkillMarkdown, skillError } from "./parse.js";
import {
  DEFAULT_MAX_BODY_BYTES,
  type LoadSkillsOptions,
  type LoadSkillsResult,
  type Skill,
  type SkillFailure,
  type SkillInput,
} from "./types.js";
import { nameSkeleton } from "./confusables.js";
import { optionsObject, signalOption, throwIfAborted, valueText } from "../util/validate.js";

const SKILL_FILE = "SKILL.md";
/** Folders never searched for skills (nor watched by `serve --watch`): huge, and never hold a host's skills. */
export const SKIP_DIRS: ReadonlySet<string> = new Set([".git", "node_modules"]);
/** Room for front matter on top of the body cap when refusing an oversized file before reading it. */
const FRONT_MATTER_ALLOWANCE = MAX_FRONT_MATTER_BYTES + 16;
/** Files read at once when loading a folder library (bounded so huge libraries do not exhaust fds). */
const READ_CONCURRENCY = 16;

/**
 * Loads a skill library.
 *
 * `source` may be:
 * - a folder that is one skill (holds `SKILL.md`), or a folder searched up to `maxDepth` levels for
 *   `<skill>/SKILL.md` (e.g. `skills/`, `.claude/skills/`, or a project root holding `.claude/skills/`);
 * - a `SKILL.md` (or other `.md`) file;
 * - a JSONL library, one `{id, name, description, body, …}` object a line, optionally gzip-compressed
 *   (detected by its magic bytes, so the extension does not matter), streamed line by line;
 * - an array of {@link SkillInput} (or {@link Skill}) records, re-validated like any other source.
 *
 * Per-skill problems never throw: each becomes a {@link SkillFailure} (`SKILL_INVALID`) and the other
 * skills still load; so does a folder below `source` that cannot be read (at its `SKILL.md`). Duplicates are failures naming the skill kept: folder skills by name (hosts address
 * them by name), where a skill in a folder of its own name (the spec's rule) wins over same-named ones
 * elsewhere and otherwise the first in path order does; JSONL rows and array entries by id, the first
 * kept (real libraries reuse names across collections, so a repeated name there is only a warning).
 *
 * @throws GavelError `FILE_NOT_FOUND` when the path does not exist or cannot be read,
 *   `PERMISSION_DENIED` when this user may not read it (the path, the folder or JSONL file it names), `EMPTY_LIBRARY`
 *   when the source holds no candidate skill at all, `CORRUPT_FILE` when a gzip stream is corrupt,
 *   `INVALID_ARGUMENT` for bad options or for a file read as JSONL whose first non-blank line does
 *   not start with `{` (a text, a PDF: not a library; a bad row after a first good one is a failed
 *   skill, as any), `ABORTED` when `opts.signal` fires (an already-aborted signal before anything else).
 */
export async function loadSkills(
  source: string | readonly (Skill | SkillInput)[],
  opts: LoadSkillsOptions = {},
): Promise<LoadSkillsResult> {
  const o = checkOptions(opts);
  checkAbort(o.signal); // an aborted call stops first: not EMPTY_LIBRARY or FILE_NOT_FOUND
  if (typeof source === "string") return loadPath(source, o);
  if (Array.isArray(source)) return loadArray(source, o);
  throw invalidArgument("loadSkills: source must be a path or an array of skills");
}

interface Opts {
  offset: number;
  limit: number;
  maxBodyBytes: number;
  maxDepth: number;
  signal?: AbortSignal;
}

const LOAD_SKILLS_KEYS: Readonly<Record<keyof LoadSkillsOptions, true>> = { offset: true, limit: true, maxBodyBytes: true, maxDepth: true, signal: true };

function checkOptions(value: unknown): Opts {
  const opts = optionsObject(value, "loadSkills options", LOAD_SKILLS_KEYS) as LoadSkillsOptions;
  const count = (v: number | undefined, name: string, dflt: number) => {
    if (v === undefined) return dflt;
    if (typeof v !== "number" || !(v >= 0) || (!Number.isInteger(v) && v !== Infinity)) {
      throw invalidArgument(`loadSkills: ${name} must be a non-negative integer, got ${valueText(v)}`);
    }
    return v;
  };
  return {
    offset: count(opts.offset, "offset", 0),
    limit: count(opts.limit, "limit", Infinity),
    maxBodyBytes: count(opts.maxBodyBytes, "maxBodyBytes", DEFAULT_MAX_BODY_BYTES),
    maxDepth: count(opts.maxDepth, "maxDepth", 3),
    signal: signalOption(opts.signal),
  };
}

function checkAbort(signal: AbortSignal | undefined): void {
  throwIfAborted(signal, "loadSkills");
}

/** Collects skills and failures, turning duplicates into failures of the later entry. */
class Collector {
  readonly skills: Skill[] = [];
  readonly failed: SkillFailure[] = [];
  private readonly byKey = new Map<string, string>();
  private readonly byName = new Map<string, string>();
  /** The first skill of each name skeleton (confusables.ts): a later, different name alike is warned on. */
  private readonly bySkeleton = new Map<string, { name: string; source: string }>();
  constructor(private readonly key: "name" | "id") {}

  add(skill: Skill): void {
    const k = this.key === "name" ? skill.name : skill.id;
    const first = this.byKey.get(k);
    if (first !== undefined) {
      this.fail(skill.source, skillError(skill.source, `duplicate skill ${this.key} "${clip(k)}" (first defined at ${clipLocation(first)})`));
      return;
    }
    this.byKey.set(k, skill.source);
    if (this.key === "id") {
      const sameName = this.byName.get(skill.name);
      if (sameName !== undefined) skill.warnings.push(`${clipLocation(skill.source)}: name "${clip(skill.name)}" is also used by ${clipLocation(sameName)}`);
      else this.byName.set(skill.name, skill.source);
    }
    const sk = nameSkeleton(skill.name);
    const alike = this.bySkeleton.get(sk);
    if (alike === undefined) this.bySkeleton.set(sk, { name: skill.name, source: skill.source });
    else if (alike.name !== skill.name) {
      skill.warnings.push(
        `${clipLocation(skill.source)}: name ${JSON.stringify(clip(skill.name))} looks like ${JSON.stringify(clip(alike.name))} (${clipLocation(alike.source)}); a look-alike name can pass for another skill`,
      );
    }
    this.skills.push(skill);
  }

  fail(where: string, error: unknown): void {
    const e =
      error instanceof GavelError && error.code === "SKILL_INVALID"
        ? error
        : skillError(where, error instanceof GavelError ? error.message : clipMessage(error), error);
    this.failed.push({ where, error: e });
  }

  result(): LoadSkillsResult {
    return { skills: this.skills, failed: this.failed };
  }
}

async function loadPath(path: string, o: Opts): Promise<LoadSkillsResult> {
  let st;
  try {
    st = await stat(path);
  } catch (cause) {
    throw permissionDenied(cause, `cannot read the skill library ${clip(path)}`) ?? new GavelError(`skill library not found: ${clip(path)}`, "FILE_NOT_FOUND", { cause });
  }
  if (st.isDirectory()) {
    const { skills, failed } = await loadFolder(path, o);
    return { skills, failed };
  }
  if (!st.isFile()) throw new GavelError(`not a file or folder: ${clip(path)}`, "FILE_NOT_FOUND");
  if (extname(path).toLowerCase() === ".md") {
    const c = new Collector("name");
    await readSkillFile(path, o, c);
    return c.result();
  }
  return loadJsonl(path, o);
}

/**
 * The skills of one host skill folder (`.claude/skills`, a plugin's `skills/`): `<root>/<skill>/SKILL.md`,
 * one level down. The root itself is never a skill, as no host reads it as one: a stray `SKILL.md` at
 * its top is a warning and its sub-folders are still read (taking the root for one skill would hide
 * every real one, and `gavel sync` would uninstall them as deleted). Throws as {@link loadSkills}.
 */
export async function loadSkillRoot(dir: string, signal?: AbortSignal): Promise<LoadSkillsResult & { warnings: string[] }> {
  const o = checkOptions({ maxDepth: 1, signal });
  checkAbort(o.signal);
  return loadFolder(dir, o, true);
}

async function loadFolder(dir: string, o: Opts, hostRoot = false): Promise<LoadSkillsResult & { warnings: string[] }> {
  const { files, rootSkillFile } = await findSkillFiles(dir, o.maxDepth, o.signal, hostRoot);
  const warnings: string[] = [];
  if (rootSkillFile !== undefined) {
    warnings.push(
      `${clipLocation(rootSkillFile)}: a ${SKILL_FILE} at the top of a skill folder is no skill (hosts read <folder>/<skill>/${SKILL_FILE}); ignored, the skills in its sub-folders are read`,
    );
    if (files.length === 0) return { skills: [], failed: [], warnings };
  }
  if (files.length === 0) {
    throw new GavelError(`no skills in ${clip(dir)} (no ${SKILL_FILE} within ${o.maxDepth} folder levels)`, "EMPTY_LIBRARY");
  }
  const slice = files.slice(o.offset, o.offset + o.limit);
  // Parse in parallel, then add in path order so duplicates are decided the same way every run.
  const parsed: (Skill | { where: string; error: unknown })[] = [];
  await inOrder(
    slice,
    { width: READ_CONCURRENCY, beforeEach: () => checkAbort(o.signal) },
    // a folder that could not be read is its own failure
    async (entry) => (typeof entry === "string" ? parseSkillFile(entry, o) : entry),
    (entry, out) => void parsed.push(out.ok ? out.value : { where: entry as string, error: out.error }),
  );
  checkAbort(o.signal);
  // Duplicate names, by a documented precedence rather than by whichever path sorts first: the spec
  // says a skill's name equals its folder's, so a skill in a folder of its own name wins over
  // same-named skills elsewhere (a folder "aaa-pdf" declaring `name: pdf` cannot shadow "pdf/"); among
  // equals, the first in path order. Every loser is a failure naming the winner.
  const winner = new Map<string, Skill>();
  for (const p of parsed) {
    if ("error" in p) continue;
    const w = winner.get(p.name);
    if (w === undefined || (!inOwnFolder(w) && inOwnFolder(p))) winner.set(p.name, p);
  }
  // A folder named as a skill whose SKILL.md failed still holds the name: a same-named skill from
  // another folder must not take it (and replace the installed one) because the rightful file broke.
  const brokenOwner = new Map<string, string>();
  for (const p of parsed) if ("error" in p) brokenOwner.set(basename(dirname(p.where)).normalize("NFC"), p.where);
  const c = new Collector("name");
  for (const p of parsed) {
    if ("error" in p) c.fail(p.where, p.error);
    else if (!inOwnFolder(p) && brokenOwner.has(p.name)) {
      const owner = brokenOwner.get(p.name)!;
      c.fail(p.source, skillError(p.source, `skill name "${clip(p.name)}" belongs to ${clipLocation(owner)}, whose folder carries the name but which could not be read (see its error); this skill does not take its place`));
    } else if (winner.get(p.name) !== p) {
      const w = winner.get(p.name)!;
      const why = inOwnFolder(w) && !inOwnFolder(p) ? "its folder carries the name" : "it comes first in path order";
      c.fail(p.source, skillError(p.source, `duplicate skill name "${clip(p.name)}": ${clipLocation(w.source)} is installed instead (${why})`));
    } else c.add(p);
  }
  return { ...c.result(), warnings };
}

/** Whether a folder skill sits in a folder named as the skill (the spec's rule; names are NFC). */
function inOwnFolder(skill: Skill): boolean {
  return basename(dirname(skill.source)).normalize("NFC") === skill.name;
}

async function readSkillFile(file: string, o: Opts, c: Collector): Promise<void> {
  try {
    c.add(await parseSkillFile(file, o));
  } catch (error) {
    c.fail(file, error);
  }
}

async function parseSkillFile(file: string, o: Opts): Promise<Skill> {
  let bytes: Buffer;
  try {
    // Only a regular file (after following symlinks), refused above the cap before it is read: a
    // link to /dev/zero or a FIFO must never hang the load or exhaust memory (gguf/regular-file.ts
    // states the symlink policy).
    bytes = await readRegularFile(file, o.maxBodyBytes + FRONT_MATTER_ALLOWANCE);
  } catch (error) {
    if (error instanceof RegularFileError && error.reason === "too-large") {
      throw skillError(file, `file is above the body cap of ${o.maxBodyBytes} bytes (${error.message})`, error);
    }
    throw skillError(file, `cannot be read: ${clipMessage(error)}`, error);
  }
  return parseSkillMarkdown(bytes, file, { folderName: basename(dirname(file)), maxBodyBytes: o.maxBodyBytes });
}

/** A folder below the searched one that exists but could not be read: a failure at its `SKILL.md`. */
type Unreadable = { where: string; error: GavelError };

/** Whether a file-system error says the path is gone (deleted while searched): nothing to report. */
function isGone(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
}

function unreadable(dir: string, cause: unknown): Unreadable {
  const where = join(dir, SKILL_FILE);
  return { where, error: skillError(where, `its folder cannot be read: ${clipMessage(cause)}`, cause) };
}

/** PERMISSION_DENIED, `doing` and the errno, when `cause` is the file system refusing this user (EACCES, EPERM); else undefined. */
function permissionDenied(cause: unknown, doing: string): GavelError | undefined {
  const denied = errnoCause(cause, PERMISSION_ERRNOS);
  return denied && new GavelError(`${doing}: permission denied (${denied.code})`, "PERMISSION_DENIED", { cause });
}

/**
 * Finds `SKILL.md` files: the folder itself if it is a skill, else breadth-first down to `maxDepth`
 * levels, not descending into a skill folder (its sub-folders are its resources) nor into `.git` or
 * `node_modules`. Hidden folders are searched: hosts keep skills in `.claude/skills`, `.agents/skills`,
 * `.github/skills`. Symlinked folders are followed once (by real path) so a link cycle ends. A folder
 * below the root that cannot be read (EACCES, EIO) is a failure at its `SKILL.md`, never skipped: it
 * may be an installed skill's, and a silent skip would read as the skill deleted. With `hostRoot`, the
 * root is never a skill: its own `SKILL.md` is returned apart and its sub-folders are searched.
 */
async function findSkillFiles(
  root: string,
  maxDepth: number,
  signal: AbortSignal | undefined,
  hostRoot: boolean,
): Promise<{ files: (string | Unreadable)[]; rootSkillFile?: string }> {
  const found: (string | Unreadable)[] = [];
  let rootSkillFile: string | undefined;
  const seen = new Set<string>();
  let level: string[] = [root];
  for (let depth = 0; depth <= maxDepth && level.length > 0; depth++) {
    const nextLevel: string[] = [];
    for (const dir of level) {
      checkAbort(signal);
      let real: string;
      let entries: Dirent[];
      try {
        real = await realpath(dir);
        if (seen.has(real)) continue;
        seen.add(real);
        entries = await readdir(dir, { withFileTypes: true });
      } catch (cause) {
        if (depth === 0) throw permissionDenied(cause, `cannot read folder ${clip(dir)}`) ?? new GavelError(`cannot read folder ${clip(dir)}`, "FILE_NOT_FOUND", { cause });
        if (!isGone(cause)) found.push(unreadable(dir, cause));
        continue;
      }
      // Whatever SKILL.md is (a file, a link, a FIFO, a directory), the folder is a skill: reading it
      // refuses what is not a regular file as that skill's SKILL_INVALID, never silently skips it.
      if (entries.some((e) => e.name === SKILL_FILE)) {
        if (!(hostRoot && depth === 0)) {
          found.push(join(dir, SKILL_FILE));
          continue;
        }
        rootSkillFile = join(dir, SKILL_FILE);
      }
      for (const e of entries) {
        if (SKIP_DIRS.has(e.name)) continue;
        const p = join(dir, e.name);
        if (e.isDirectory()) nextLevel.push(p);
        else if (e.isSymbolicLink()) {
          try {
            if ((await stat(p)).isDirectory()) nextLevel.push(p);
          } catch (cause) {
            // a dangling link (or a loop) has nothing to search; one whose target cannot be reached is unreadable
            const code = (cause as { code?: unknown } | null)?.code;
            if (!isGone(cause) && code !== "ELOOP" && depth < maxDepth) found.push(unreadable(p, cause));
          }
        }
      }
    }
    level = nextLevel;
  }
  const path = (f: string | Unreadable) => (typeof f === "string" ? f : f.where);
  found.sort((x, y) => (path(x) < path(y) ? -1 : path(x) > path(y) ? 1 : 0));
  return { files: found, rootSkillFile };
}

/** Reads a JSONL (or gzip JSONL) library row by row; `where` of a row is `path:line`. */
async function loadJsonl(path: string, o: Opts): Promise<LoadSkillsResult> {
  const c = new Collector("id");
  let candidates = 0;
  for await (const { text, line } of jsonlLines(path)) {
    if (candidates === 0 && !text.trimStart().startsWith("{")) throw notJsonl(path, text);
    const index = candidates++;
    if (index < o.offset) continue;
    if (index >= o.offset + o.limit) break;
    if ((index & 255) === 0) checkAbort(o.signal);
    const where = `${path}:${line}`;
    try {
      c.add(jsonlSkill(text, where, o));
    } catch (error) {
      c.fail(where, error);
    }
  }
  if (candidates === 0) throw new GavelError(`no skills in ${clip(path)} (no rows)`, "EMPTY_LIBRARY");
  return c.result();
}

/**
 * The refusal of a file read as a JSONL library whose first non-blank line is no JSON object (a text,
 * a PDF): one error, not a failed skill per line.
 */
function notJsonl(path: string, first: string): GavelError {
  // the line's start, quoted, with anything outside printable ASCII escaped (the file may be binary)
  const start = JSON.stringify(first.trimStart().slice(0, 16)).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  const folder = dirname(path);
  const hint = existsSync(join(folder, SKILL_FILE)) ? `; its folder is a skill (it holds ${SKILL_FILE}): install ${clip(folder)}` : "";
  return invalidArgument(
    `${clip(path)} is not a JSONL skill library: its first line begins ${start}, not "{" (a library holds one JSON object a line). ` +
      `A skill source is a folder of skill folders, a skill folder, a SKILL.md file or a .jsonl[.gz] library${hint}`,
  );
}

function jsonlSkill(line: string, where: string, o: Opts): Skill {
  let row: unknown;
  try {
    row = JSON.parse(line);
  } catch (cause) {
    throw skillError(where, `not valid JSON: ${clipMessage(cause)}`, cause);
  }
  if (typeof row !== "object" || row === null || Array.isArray(row)) throw skillError(where, "row is not a JSON object");
  return fromRecord(row as Record<string, unknown>, where, o);
}

/** A JSONL row or an array entry: known fields, everything else into meta (a nested `meta` map is merged). */
function fromRecord(rec: Record<string, unknown>, where: string, o: Opts): Skill {
  const { id, name, description, body, meta, disableModelInvocation, contentHash: _h, source: src, warnings: _w, ...rest } =
    rec;
  const merged: Record<string, unknown> = { ...rest };
  // A JSONL `source` field (e.g. the GitHub collection) is data, not our provenance: keep it in meta.
  if (src !== undefined) merged["source"] = src;
  if (meta !== undefined) {
    if (typeof meta !== "object" || meta === null || Array.isArray(meta)) throw skillError(where, "meta must be a map");
    // own properties defined, not assigned: a JSON `"__proto__"` key is a key, never the map's prototype
    for (const [k, v] of Object.entries(meta)) Object.defineProperty(merged, k, { value: v, enumerable: true, writable: true, configurable: true });
  }
  return buildSkill({ id, name, description, body, meta: merged, source: where, disableModelInvocation, maxBodyBytes: o.maxBodyBytes, lenientText: true });
}

async function loadArray(items: readonly (Skill | SkillInput)[], o: Opts): Promise<LoadSkillsResult> {
  if (items.length === 0) throw new GavelError("no skills given (empty array)", "EMPTY_LIBRARY");
  const c = new Collector("id");
  const end = Math.min(items.length, o.offset + o.limit);
  for (let i = o.offset; i < end; i++) {
    if ((i & 255) === 0) checkAbort(o.signal);
    const item = items[i] as unknown;
    const fallback = `input[${i}]`;
    if (typeof item !== "object" || item === null || Array.isArray(item)) {
      c.fail(fallback, skillError(fallback, "not a skill object"));
      continue;
    }
    const rec = item as Record<string, unknown>;
    // An array entry keeps the provenance it brings (e.g. a Skill loaded earlier from a file).
    const where = typeof rec["source"] === "string" && rec["source"] !== "" ? (rec["source"] as string) : fallback;
    try {
      const { source: _s, ...rest } = rec;
      c.add(fromRecord(rest, where, o));
    } catch (error) {
      c.fail(where, error);
    }
  }
  return c.result();
}
