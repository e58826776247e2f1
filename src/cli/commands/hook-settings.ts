// The Claude Code settings file `gavel hook install claude-code` edits (.claude/settings.json): read
// (a regular file of at most 16 MiB), its shape and its numbers checked before anything is written,
// the gavel hook merged in, and written back beside the real file (through a symbolic link) with the
// old file's mode. A file the installer cannot edit without losing something is refused, untouched.
import { lstat, mkdir, realpath, stat, type FileHandle } from "node:fs/promises";
import { GavelError, clip, clipMessage } from "../../errors.js";
import { DirSyncError, writeFileDurable } from "../../util/durable-file.js";
import { errnoError, errnoOf } from "../../util/errno.js";
import { readRegularFile, RegularFileError } from "../../util/regular-file.js";
import { INSTALLED_HOOK_TIMEOUT_S } from "./hook-run.js";

/** The largest settings file the installer reads. */
export const MAX_SETTINGS_BYTES = 16 * 1024 * 1024;

const AGAIN = "then install the hook again";

/** A file-system failure of `doing` ("write /x/settings.json") as a GavelError: its errno's code and words (util/errno.ts, errnoError), else INTERNAL. */
export function fsError(err: unknown, doing: string): GavelError {
  return errnoError(err, `cannot ${doing}`, { fallback: "internal" });
}

/** `--dir`'s folder, which must exist (the installer creates `.claude` in it, nothing above). */
export async function existingFolder(dir: string, flag: string): Promise<void> {
  const st = await stat(dir).catch((err: unknown) => {
    throw fsError(err, `use ${flag} ${clip(dir)}`);
  });
  if (!st.isDirectory()) throw new GavelError(`${flag} ${clip(dir)} is not a folder`, "INVALID_ARGUMENT");
}

/** Creates the `.claude` folder `dir` when it is missing (one level, the umask's mode); anything else in its place is refused. */
export async function ensureFolder(dir: string): Promise<void> {
  try {
    await mkdir(dir);
    return;
  } catch (err) {
    if (errnoOf(err) !== "EEXIST") throw fsError(err, `create ${clip(dir)}`);
  }
  const st = await stat(dir).catch((err: unknown) => {
    if (errnoOf(err) === "ENOENT") throw new GavelError(`${clip(dir)} is a symbolic link to a missing folder; create it (or remove the link), ${AGAIN}`, "FILE_NOT_FOUND", { cause: err });
    throw fsError(err, `use ${clip(dir)}`);
  });
  if (!st.isDirectory()) throw new GavelError(`${clip(dir)} is not a folder; move it away, ${AGAIN}`, "INVALID_ARGUMENT");
}

/**
 * The file to write for `file`: itself, or, for a symbolic link, the file it leads to (so a link a
 * dotfile manager keeps stays a link). A link to nothing is refused: it is not created through.
 */
export async function settingsTarget(file: string): Promise<string> {
  const st = await lstat(file).catch((err: unknown) => {
    // missing (or under a `.claude` that is not a folder, which ensureFolder refuses): written as `file`
    if (errnoOf(err) === "ENOENT" || errnoOf(err) === "ENOTDIR") return null;
    throw fsError(err, `read ${clip(file)}`);
  });
  if (st === null || !st.isSymbolicLink()) return file;
  return realpath(file).catch((err: unknown) => {
    if (errnoOf(err) === "ENOENT") throw new GavelError(`${clip(file)} is a symbolic link to a missing file; create the file it names (or remove the link), ${AGAIN}`, "FILE_NOT_FOUND", { cause: err });
    throw fsError(err, `follow the symbolic link ${clip(file)}`);
  });
}

/**
 * The settings file's object; a missing or empty file is `{}`. Refused (INVALID_ARGUMENT, naming the
 * file and the place in it), before anything is written: anything but a regular file of at most
 * 16 MiB, text that is not a JSON object, a `hooks` setting of another shape than Claude Code's, and a
 * number that writing the file back would change.
 */
export async function readSettings(file: string): Promise<Record<string, unknown>> {
  // a regular file of at most 16 MiB: a FIFO or a device in its place never blocks the installer
  const text = await readRegularFile(file, MAX_SETTINGS_BYTES).then((b) => b.toString("utf8"), (err: unknown) => {
    if (!(err instanceof RegularFileError)) throw fsError(err, `read ${clip(file)}`);
    if (err.reason === "missing") return null;
    if (err.reason === "unreadable") throw fsError(err.cause, `read ${clip(file)}`);
    // "<file> is a directory, not a regular file …", "<file> is N bytes, above the cap of 16777216"
    throw new GavelError(`${clipMessage(err)}: not a settings file the installer edits (a regular file of at most 16 MiB), so it is left as it is`, "INVALID_ARGUMENT", { cause: err });
  });
  if (text === null || !text.trim()) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new GavelError(`${clip(file)} is not valid JSON (${(err as Error).message.split("\n")[0]}); fix it, ${AGAIN}`, "INVALID_ARGUMENT");
  }
  if (!isObject(parsed)) throw new GavelError(`${clip(file)} is not a JSON object; fix it, ${AGAIN}`, "INVALID_ARGUMENT");
  const problem = hooksShapeProblem(parsed);
  if (problem) throw new GavelError(`${clip(file)}: ${problem}; fix it, ${AGAIN}`, "INVALID_ARGUMENT");
  const lossy = lossyNumber(text);
  if (lossy) {
    const { token, at, written } = lossy;
    throw new GavelError(`${clip(file)}: the value of ${at} (${clip(token, 40)}) would be written back as ${written} (a JSON number is a double), so the file is left as it is; change it, or add the hook by hand`, "INVALID_ARGUMENT");
  }
  return parsed;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A JSON value's kind, in words. */
function kindOf(v: unknown): string {
  if (v === undefined) return "missing";
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}

/** A place in the settings, as a JavaScript path (`hooks.UserPromptSubmit[0].hooks`). */
function placeOf(path: readonly (string | number)[]): string {
  return path.map((k, i) => (typeof k === "number" ? `[${k}]` : /^[A-Za-z_$][\w$]*$/.test(k) ? (i ? "." : "") + k : `[${clip(JSON.stringify(k), 40)}]`)).join("");
}

/**
 * What is wrong with the `hooks` setting's shape, and where, or undefined. Claude Code's: an object of
 * events, each an array of matcher groups (objects), each group's `hooks` an array of hooks (objects).
 */
export function hooksShapeProblem(settings: Record<string, unknown>): string | undefined {
  const hooks = settings.hooks;
  if (hooks === undefined) return undefined;
  if (!isObject(hooks)) return `hooks is ${kindOf(hooks)}, not an object of hook events`;
  for (const [event, groups] of Object.entries(hooks)) {
    const at = (...rest: (string | number)[]) => placeOf(["hooks", event, ...rest]);
    if (!Array.isArray(groups)) return `${at()} is ${kindOf(groups)}, not an array of matcher groups`;
    for (const [i, group] of groups.entries()) {
      if (!isObject(group)) return `${at(i)} is ${kindOf(group)}, not a matcher group (an object)`;
      if (!Array.isArray(group.hooks)) return `${at(i, "hooks")} is ${kindOf(group.hooks)}, not an array of hooks`;
      const bad = group.hooks.findIndex((h) => !isObject(h));
      if (bad >= 0) return `${at(i, "hooks", bad)} is ${kindOf(group.hooks[bad])}, not a hook (an object)`;
    }
  }
  return undefined;
}

/** A JSON number's value as sign, significant digits and exponent (`-12e3`): equal for equal values. */
function decimalOf(token: string): string {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(token);
  if (!m) return token;
  const all = (m[2] + (m[3] ?? "")).replace(/^0+/, "");
  if (!all) return "0";
  const digits = all.replace(/0+$/, "");
  return `${m[1]}${digits}e${Number(m[4] ?? 0) - (m[3] ?? "").length + (all.length - digits.length)}`;
}

const NUMBER = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/**
 * The first number of the JSON text `text` (valid JSON) whose value JSON.parse then JSON.stringify
 * would change (past 2^53, past a double's range, more digits than a double holds), with its place.
 */
export function lossyNumber(text: string): { token: string; at: string; written: string } | undefined {
  const path: (string | number)[] = [];
  const inArray: boolean[] = [];
  let keyNext = false;
  for (let i = 0; i < text.length; ) {
    const c = text[i];
    if (c === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === "\\" ? 2 : 1;
      if (keyNext) path[path.length - 1] = JSON.parse(text.slice(i, end + 1)) as string;
      keyNext = false;
      i = end + 1;
    } else if (c === "-" || (c >= "0" && c <= "9")) {
      NUMBER.lastIndex = i;
      const token = NUMBER.exec(text)![0];
      const written = JSON.stringify(Number(token));
      if (decimalOf(written) !== decimalOf(token)) return { token, at: path.length ? placeOf(path) : "the top", written };
      i += token.length;
    } else {
      if (c === "{" || c === "[") {
        inArray.push(c === "[");
        path.push(c === "[" ? 0 : "");
        keyNext = c === "{";
      } else if (c === "}" || c === "]") {
        inArray.pop();
        path.pop();
      } else if (c === ",") {
        if (inArray.at(-1)) (path[path.length - 1] as number)++;
        else keyNext = true;
      }
      i++;
    }
  }
  return undefined;
}

/** Whether a hook command is one of ours (so that a second install replaces it). */
function isGavelHook(command: unknown): boolean {
  return typeof command === "string" && /\bhook claude-code\b/.test(command) && /gavel/.test(command);
}

interface HookEntry {
  type: string;
  command?: string;
  timeout?: number;
}
interface MatcherGroup {
  matcher?: string;
  hooks: HookEntry[];
}

/**
 * Merges the gavel hook into a settings object of the shape {@link readSettings} checks: other
 * settings and other hooks are kept; the first earlier gavel hook is replaced in place (idempotent),
 * any other one removed (with a group it leaves empty), so the result holds exactly one.
 * `timeoutS`: the `timeout` Claude Code kills it after.
 */
export function mergeHook(settings: Record<string, unknown>, command: string, timeoutS = INSTALLED_HOOK_TIMEOUT_S): Record<string, unknown> {
  const hooks = (settings.hooks ?? {}) as Record<string, MatcherGroup[]>;
  const entry: HookEntry = { type: "command", command, timeout: timeoutS };
  let found = false;
  const next: MatcherGroup[] = [];
  for (const group of hooks.UserPromptSubmit ?? []) {
    if (!group.hooks.some((h) => isGavelHook(h.command))) {
      next.push(group);
      continue;
    }
    const kept = group.hooks.flatMap((h) => (!isGavelHook(h.command) ? [h] : found ? [] : ((found = true), [entry])));
    if (kept.length) next.push({ ...group, hooks: kept });
  }
  if (!found) next.push({ hooks: [entry] });
  return { ...settings, hooks: { ...hooks, UserPromptSubmit: next } };
}

/**
 * Writes `text` to `target` (a real file, not a link: {@link settingsTarget}) as every durable file is
 * written (util/durable-file.ts): a temporary file of a fresh random name beside it, fsynced, renamed
 * into place, the folder fsynced; the temporary file is removed when the write fails. The old file's
 * mode is kept (the temporary file never has more than it); a new file gets the umask's default (as
 * Claude Code creates its own).
 */
export async function writeSettings(target: string, text: string): Promise<void> {
  const mode = await stat(target).then((st) => st.mode & 0o7777, (err: unknown) => {
    if (errnoOf(err) === "ENOENT") return undefined;
    throw fsError(err, `read ${clip(target)}`);
  });
  const content = async (fh: FileHandle) => {
    await fh.writeFile(text);
    if (mode !== undefined) await fh.chmod(mode);
  };
  await writeFileDurable(target, content, { mode: mode ?? 0o666 }).catch((err: unknown) => {
    // the file is in place and every reader sees it; only its folder's fsync failed (some network and
    // FUSE file systems refuse one): the install stands, as an editor's save would
    if (err instanceof DirSyncError) return;
    throw fsError(err, `write ${clip(target)}`);
  });
}
