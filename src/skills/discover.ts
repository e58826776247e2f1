/**
 * Discovery as hosts do it: the skill folders an agent host reads, in that host's order of
 * precedence, and the skills in them with duplicates by name resolved the way the host resolves them.
 *
 * | host | folders, highest precedence first | source |
 * | --- | --- | --- |
 * | `claude-code` | managed `<managed>/.claude/skills`, `~/.claude/skills` (personal), `<project>/.claude/skills`; then plugins' `<installPath>/skills`, namespaced `plugin:skill` | [1], [2], [3] |
 * | `codex` | `<project>/.agents/skills`, `~/.agents/skills`, `~/.codex/skills` (legacy), `/etc/codex/skills` (admin) | [4] |
 * | `copilot` | `<project>/.github/skills`, `.claude/skills`, `.agents/skills`, then `~/.copilot/skills`, `~/.claude/skills`, `~/.agents/skills` | GitHub's docs list the folders; they give no order: project first, as listed |
 * | `all` (default) | project `.claude/skills`, `.agents/skills`, `.github/skills`, then user `~/.claude/skills`, `~/.agents/skills`, `~/.codex/skills`, `~/.copilot/skills`, then Claude Code's managed folder and `/etc/codex/skills`, then Claude Code's plugins | gavel's own choice: the project first |
 *
 * Sources:
 * - [1] Claude Code's skills docs (code.claude.com/docs/en/skills, "Where skills live"): enterprise
 *   (managed settings), personal `~/.claude/skills/<skill>/SKILL.md`, project
 *   `.claude/skills/<skill>/SKILL.md`, plugin `<plugin>/skills/<skill>/SKILL.md`; "when skills share the
 *   same name across levels, higher-priority locations win: enterprise > personal > project. Plugin
 *   skills use a plugin-name:skill-name namespace, so they cannot conflict with other levels."
 * - [2] The managed folder is Claude Code's managed-settings directory (code.claude.com/docs/en/settings:
 *   `/etc/claude-code` on Linux and WSL, `/Library/Application Support/ClaudeCode` on macOS,
 *   `C:\Program Files\ClaudeCode` on Windows) and its skills are read from `.claude/skills` inside it:
 *   Claude Code's own debug log, quoted in anthropics/claude-code#40320, "Loading skills from:
 *   managed=/Library/Application Support/ClaudeCode/.claude/skills, user=…/.claude/skills".
 * - [3] `claude plugin install` copies a plugin into a versioned cache,
 *   `~/.claude/plugins/cache/<marketplace>/<plugin>/<version>/`, recorded in
 *   `~/.claude/plugins/installed_plugins.json`, and Claude Code loads it from there
 *   (ScriptedAlchemy/tracedecay#273). That file's version 2 maps `"name@marketplace"` to a list of
 *   `{ scope, projectPath?, installPath, version }` (a project-scoped install has a `projectPath`);
 *   version 1 held one object. Installing writes `enabledPlugins["name@marketplace"]` into the settings
 *   file of its scope (code.claude.com/docs/en/plugins/cli-reference: `--scope` "names the settings
 *   file the command writes to"). gavel reads a plugin as on unless `enabledPlugins` sets it false in
 *   `~/.claude/settings.json`, `.claude/settings.json` or `.claude/settings.local.json` (the later
 *   file wins, as settings scopes do), and a project-scoped install only in its `projectPath`.
 * - [4] Codex's skills docs (developers.openai.com/codex/skills, "Where to save skills"): REPO
 *   `.agents/skills` (from the working folder up to the repository root), USER `$HOME/.agents/skills`,
 *   ADMIN `/etc/codex/skills`, SYSTEM (bundled), most specific first; `~/.codex/skills` is the
 *   older user folder ($CODEX_HOME/skills).
 *
 * Each folder holds one skill folder per skill (`<folder>/<skill>/SKILL.md`, one level deep). A name
 * found in two folders keeps the one of higher precedence; the other is reported as shadowed, with
 * why. Plugin skills are keyed (and installed) as `plugin:skill`, so they shadow nothing and nothing
 * shadows them, except the same plugin's skill found twice.
 *
 * Not covered: nested `.claude/skills` of sub-folders, Codex's walk from the working folder up to the
 * repository root (the project's root is `projectDir`), a plugin.json that moves its skills elsewhere
 * than `skills/`, and skills Claude Code's server-managed settings deliver (not files on this machine).
 *
 * @module
 */
import { existsSync, statSync } from "node:fs";
import { readRegularFileSync, RegularFileError } from "../util/regular-file.js";
import { homedir } from "node:os";
import { basename, dirname, isAbsolute, join, resolve, sep } from "node:path";
import { GavelError, clip, clipLocation, clipMessage, invalidArgument } from "../errors.js";
import { describeValue, optionsObject, pathOption, signalOption } from "../util/validate.js";
import { expandHome, pathInside, samePath } from "../util/same-path.js";
import { loadSkillRoot } from "./load.js";
import type { Skill, SkillFailure } from "./types.js";

/** The hosts whose folders and precedence {@link skillRoots} knows; `all` is the union. */
export const SKILL_HOSTS = ["claude-code", "codex", "copilot", "all"] as const;
/** One of {@link SKILL_HOSTS}. */
export type DiscoveryHost = (typeof SKILL_HOSTS)[number];

/**
 * Whose folder it is: the organisation's (Claude Code's managed settings, Codex's `/etc/codex`), the
 * user's (under the home directory), the project's, or an installed Claude Code plugin's.
 */
export type SkillScope = "managed" | "user" | "project" | "plugin";

/** One folder a host reads skills from. */
export interface SkillRoot {
  /** The folder, absolute (e.g. `/home/me/project/.claude/skills`). */
  dir: string;
  scope: SkillScope;
  /** How the docs name it: `.claude/skills`, `~/.codex/skills`, `managed .claude/skills`, `plugin review@acme`, … */
  label: string;
  /** A plugin's folder: the plugin's id, `name@marketplace`; its skills are keyed `name:skill`. */
  plugin?: string;
  /**
   * A plugin whose install path is one of its version folders (`<plugin>/<version>`: the path's last
   * name is the registry's `version`, or the path is in Claude Code's cache `~/.claude/plugins/cache`):
   * the folder holding its versions, `<plugin>`. Absent for any other install path (a plugin's own
   * working folder, say), whose siblings are not its versions.
   */
  pluginVersions?: string;
}

/** Where {@link skillRoots} and {@link discoverSkills} look. */
export interface DiscoverOptions {
  /** Whose folders and precedence (default `all`). */
  host?: DiscoveryHost;
  /** The project's root, a non-empty path (default: the current directory). */
  projectDir?: string;
  /** The user's home, a non-empty path (default: `os.homedir()`, which follows `$HOME`). */
  home?: string;
  /** Claude Code's managed-settings folder, a non-empty path (default: {@link claudeManagedDir} of this platform). */
  managedDir?: string;
  /** Codex's admin folder, whose `skills/` it reads, a non-empty path (default `/etc/codex`). */
  codexAdminDir?: string;
  /** Cancels `discoverSkills` (ABORTED); `skillRoots` reads nothing and does not take it. */
  signal?: AbortSignal;
}

const DISCOVER_KEYS: Readonly<Record<keyof DiscoverOptions, true>> = { host: true, projectDir: true, home: true, managedDir: true, codexAdminDir: true, signal: true };

/** `value` as {@link DiscoverOptions}, checked by key and value (INVALID_ARGUMENT naming the option) before anything is read. */
function discoverOptions(value: unknown, what: string): DiscoverOptions {
  const o = optionsObject(value, what, DISCOVER_KEYS);
  discoveryHost(o.host);
  for (const k of ["projectDir", "home", "managedDir", "codexAdminDir"] as const) pathOption(o[k], k);
  signalOption(o.signal);
  return o as DiscoverOptions;
}

/**
 * Claude Code's managed-settings folder on `platform` (code.claude.com/docs/en/settings): its skills
 * are in `.claude/skills` inside it (see the module's sources [1] and [2]).
 */
export function claudeManagedDir(platform: NodeJS.Platform = process.platform): string {
  if (platform === "darwin") return "/Library/Application Support/ClaudeCode";
  if (platform === "win32") return "C:\\Program Files\\ClaudeCode";
  return "/etc/claude-code"; // Linux and WSL
}

/** Where a folder sits: under the project, the home, Claude Code's managed folder, Codex's admin folder. */
type Base = "project" | "home" | "managed" | "codex-admin";
/** A folder (`[base, path below it]`), or every enabled Claude Code plugin's `skills/`. */
type RootSpec = readonly [base: Base, path: string] | "claude-plugins";

/** Each host's folders, highest precedence first (see the module's table and sources). */
const HOST_ROOTS: Record<DiscoveryHost, readonly RootSpec[]> = {
  // [1] enterprise > personal > project; plugins are namespaced, so their place cannot matter
  "claude-code": [["managed", ".claude/skills"], ["home", ".claude/skills"], ["project", ".claude/skills"], "claude-plugins"],
  // [4] REPO, USER (the newer folder, then the older one), ADMIN
  codex: [["project", ".agents/skills"], ["home", ".agents/skills"], ["home", ".codex/skills"], ["codex-admin", "skills"]],
  copilot: [
    ["project", ".github/skills"],
    ["project", ".claude/skills"],
    ["project", ".agents/skills"],
    ["home", ".copilot/skills"],
    ["home", ".claude/skills"],
    ["home", ".agents/skills"],
  ],
  all: [
    ["project", ".claude/skills"],
    ["project", ".agents/skills"],
    ["project", ".github/skills"],
    ["home", ".claude/skills"],
    ["home", ".agents/skills"],
    ["home", ".codex/skills"],
    ["home", ".copilot/skills"],
    ["managed", ".claude/skills"],
    ["codex-admin", "skills"],
    "claude-plugins",
  ],
};

/** `host` checked: one of {@link SKILL_HOSTS}, or `github-copilot` (the source selectors' name) for `copilot`. */
export function discoveryHost(host: unknown): DiscoveryHost {
  if (host === undefined) return "all";
  if (host === "github-copilot") return "copilot";
  if (typeof host === "string" && (SKILL_HOSTS as readonly string[]).includes(host)) return host as DiscoveryHost;
  throw invalidArgument(`host must be one of ${SKILL_HOSTS.join(", ")}, got ${describeValue(host)}`);
}

/** Largest settings or plugin-registry JSON read (a host writes a few KB). */
const MAX_SETTINGS_BYTES = 16 * 1024 * 1024;

/**
 * A JSON file's value; undefined when it is missing; a note (and undefined) when it does not parse, or
 * is not a regular file within {@link MAX_SETTINGS_BYTES} (a FIFO or a device is never read).
 */
function readJson(file: string, notes: string[]): unknown {
  let text: string;
  try {
    text = readRegularFileSync(file, MAX_SETTINGS_BYTES).toString("utf8");
  } catch (err) {
    if (err instanceof RegularFileError && err.reason !== "missing") notes.push(`${err.message}: its plugins are not read`);
    return undefined;
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    notes.push(`${clip(file)} is not valid JSON (${clipMessage(err)}): its plugins are not read`);
    return undefined;
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Every Claude Code plugin installed for this user or this project and not turned off, as the folder
 * of its skills (source [3]), in the order of their ids.
 */
function claudePluginRoots(home: string, project: string, notes: string[]): SkillRoot[] {
  const registry = readJson(join(home, ".claude", "plugins", "installed_plugins.json"), notes);
  if (!isRecord(registry) || !isRecord(registry.plugins)) return [];
  const enabled = new Map<string, boolean>();
  for (const file of [join(home, ".claude", "settings.json"), join(project, ".claude", "settings.json"), join(project, ".claude", "settings.local.json")]) {
    const settings = readJson(file, notes);
    if (!isRecord(settings) || !isRecord(settings.enabledPlugins)) continue;
    for (const [id, on] of Object.entries(settings.enabledPlugins)) if (typeof on === "boolean") enabled.set(id, on);
  }
  const roots: SkillRoot[] = [];
  for (const id of Object.keys(registry.plugins).sort()) {
    if (enabled.get(id) === false) continue;
    const entry = registry.plugins[id];
    const installs = (Array.isArray(entry) ? entry : [entry]).filter(isRecord);
    const install = installs.find((i) => {
      const scope = i.scope ?? "user";
      if (scope === "user" || scope === "managed") return true;
      return typeof i.projectPath === "string" && samePath(i.projectPath, project);
    });
    if (!install || typeof install.installPath !== "string") continue;
    const given = expandHome(install.installPath, home);
    if (!isAbsolute(given)) continue;
    const dir = resolve(given);
    // a version folder: named for the entry's version, or the cache's <marketplace>/<plugin>/<version>
    const inCache = pathInside(join(home, ".claude", "plugins", "cache"), dir);
    const versioned = (typeof install.version === "string" && basename(dir) === install.version) || (inCache !== null && inCache.split(sep).length === 3);
    roots.push({ dir: join(dir, "skills"), scope: "plugin", label: `plugin ${id}`, plugin: id, ...(versioned ? { pluginVersions: dirname(dir) } : {}) });
  }
  return roots;
}

/** {@link skillRoots}, plus notes on files that could not be read. */
function rootsOf(options: DiscoverOptions, notes: string[]): SkillRoot[] {
  const host = discoveryHost(options.host);
  const project = resolve(options.projectDir ?? process.cwd());
  const home = resolve(options.home ?? homedir());
  const bases: Record<Base, string> = {
    project,
    home,
    managed: resolve(options.managedDir ?? claudeManagedDir()),
    "codex-admin": resolve(options.codexAdminDir ?? "/etc/codex"),
  };
  const roots: SkillRoot[] = [];
  const add = (root: SkillRoot) => {
    // a project inside the home folder could name one folder twice (project = home): keep the first
    if (!roots.some((r) => r.dir === root.dir)) roots.push(root);
  };
  for (const spec of HOST_ROOTS[host]) {
    if (spec === "claude-plugins") {
      for (const root of claudePluginRoots(home, project, notes)) add(root);
      continue;
    }
    const [base, rel] = spec;
    const dir = join(bases[base], rel);
    const scope: SkillScope = base === "project" ? "project" : base === "home" ? "user" : "managed";
    const label = base === "project" ? rel : base === "home" ? `~/${rel}` : base === "managed" ? `managed ${rel}` : dir;
    add({ dir, scope, label });
  }
  return roots;
}

/** The folders `host` reads skills from, highest precedence first (whether they exist or not). */
export function skillRoots(options: DiscoverOptions = {}): SkillRoot[] {
  return rootsOf(discoverOptions(options, "skillRoots options"), []);
}

/** The id of a skill named `name` found in `root`: `plugin:name` in a plugin's folder, else the name. */
function skillKey(root: SkillRoot, name: string): string {
  return root.plugin !== undefined ? `${root.plugin.split("@")[0]}:${name}` : name;
}

/**
 * The id {@link discoverSkills} gives the skill named `name` in the skill folder `skillDir`: `plugin:name`
 * when the folder holding it is an installed Claude Code plugin's `skills/` among `roots` (what
 * {@link skillRoots} gives: read once for many folders), else the name. Reads nothing.
 */
export function discoveredSkillId(skillDir: string, name: string, roots: readonly SkillRoot[]): string {
  const root = roots.find((r) => r.plugin !== undefined && samePath(r.dir, dirname(skillDir)));
  return root ? skillKey(root, name) : name;
}

/** A skill that a folder of higher precedence hides. */
export interface ShadowedSkill {
  name: string;
  /** The SKILL.md that wins. */
  winner: string;
  /** The SKILL.md that is hidden. */
  shadowed: string;
  /** Why the winner wins: its folder, the loser's, and the rule of the host. */
  why: string;
}

/** What {@link discoverSkills} found. */
export interface DiscoverResult {
  host: DiscoveryHost;
  /** Every folder looked at, highest precedence first, and whether it exists. */
  roots: (SkillRoot & { exists: boolean; skills: number })[];
  /**
   * The skills the host would see, one per name, highest precedence first; each `source` is
   * absolute. A plugin's skill has the id `plugin:skill`, as Claude Code names it.
   */
  skills: Skill[];
  /** Which folder each winning skill came from, by skill id. */
  rootOf: Map<string, SkillRoot>;
  /** Skills hidden by a same-named one of higher precedence. */
  shadowed: ShadowedSkill[];
  /** SKILL.md files, or whole host folders (`where` the folder), that could not be read (the others still load). */
  failed: SkillFailure[];
  /**
   * One line per shadowed skill, naming both and why; the spec warnings of the winners; unreadable
   * plugin files; a stray `SKILL.md` at the top of a skill folder (never read as a skill).
   */
  warnings: string[];
}

/**
 * The skills of one host folder; none when it is missing or empty. A folder that exists but cannot be
 * read (EACCES, EIO) is one failure at the folder itself, never empty: `gavel sync` keeps the skills
 * installed from it rather than reading them as deleted.
 */
async function loadRoot(root: SkillRoot, signal: AbortSignal | undefined): Promise<{ skills: Skill[]; failed: SkillFailure[]; warnings: string[] }> {
  try {
    return await loadSkillRoot(root.dir, signal);
  } catch (err) {
    if (!(err instanceof GavelError)) throw err;
    const code = (err.cause as { code?: unknown } | null | undefined)?.code;
    if (err.code === "EMPTY_LIBRARY" || (err.code === "FILE_NOT_FOUND" && (code === "ENOENT" || code === "ENOTDIR"))) return { skills: [], failed: [], warnings: [] };
    if (err.code !== "FILE_NOT_FOUND" && err.code !== "PERMISSION_DENIED") throw err;
    const error = new GavelError(`skill folder ${clip(root.dir)} cannot be read: ${clipMessage(err.cause)}`, "SKILL_INVALID", { cause: err.cause });
    return { skills: [], failed: [{ where: root.dir, error }], warnings: [] };
  }
}

/** The rule that ranks `winner`'s folder above `loser`'s, in words, with its source. */
function whyWins(host: DiscoveryHost, winner: SkillRoot, loser: SkillRoot): string {
  const order = `${clip(winner.label)} (${winner.scope}) comes before ${clip(loser.label)} (${loser.scope})`;
  if (winner.plugin !== undefined) return `${order}: both are ${clip(winner.plugin.split("@")[0])}'s, from two marketplaces; the first id in order wins`;
  if (host === "claude-code") return `${order}: Claude Code's order is enterprise > personal > project`;
  if (host === "codex") return `${order}: Codex's order is repository, then user, then admin`;
  if (host === "copilot") return `${order}: GitHub's docs give no order; gavel takes the project's folders first`;
  return `${order}: gavel's order for all hosts puts the project first, then the user, then managed folders`;
}

/**
 * The skills `host` would load from this project and this user's home: every folder of
 * {@link skillRoots}, a name kept from the folder of highest precedence, the others reported in
 * `shadowed` (with a warning naming both, and why). Folder skills are keyed by name, as hosts address
 * them; a plugin's by `plugin:name`, so they never meet the others.
 */
export async function discoverSkills(options: DiscoverOptions = {}): Promise<DiscoverResult> {
  options = discoverOptions(options, "discoverSkills options");
  const host = discoveryHost(options.host);
  const notes: string[] = [];
  const roots = rootsOf(options, notes);
  const result: DiscoverResult = { host, roots: [], skills: [], rootOf: new Map(), shadowed: [], failed: [], warnings: [...notes] };
  const byKey = new Map<string, { skill: Skill; root: SkillRoot }>();
  for (const root of roots) {
    const exists = existsSync(root.dir) && statSync(root.dir).isDirectory();
    const loaded = exists ? await loadRoot(root, options.signal) : { skills: [], failed: [], warnings: [] };
    result.roots.push({ ...root, exists, skills: loaded.skills.length });
    result.failed.push(...loaded.failed);
    result.warnings.push(...loaded.warnings);
    for (const found of loaded.skills) {
      const key = skillKey(root, found.name);
      const skill = root.plugin !== undefined ? { ...found, id: key } : found;
      const first = byKey.get(key);
      if (first) {
        const why = whyWins(host, first.root, root);
        result.shadowed.push({ name: key, winner: first.skill.source, shadowed: skill.source, why });
        result.warnings.push(`skill "${clip(key)}" at ${clipLocation(skill.source)} is shadowed by ${clipLocation(first.skill.source)} (${host} precedence): ${why}`);
        continue;
      }
      byKey.set(key, { skill, root });
      result.skills.push(skill);
      result.rootOf.set(skill.id, root);
      result.warnings.push(...skill.warnings);
    }
  }
  return result;
}
