/**
 * Discovery as hosts do it (issue 16): the skill folders an agent host reads, in that host's order of
 * precedence, and the skills in them with duplicates by name resolved the way the host resolves them.
 *
 * | host | folders, highest precedence first | source |
 * | --- | --- | --- |
 * | `claude-code` | `~/.claude/skills` (personal), `<project>/.claude/skills` | Claude Code's skills docs: "enterprise > personal > project" |
 * | `codex` | `<project>/.agents/skills`, `~/.agents/skills`, `~/.codex/skills` (legacy) | Codex's skills docs: repository, then user scope |
 * | `copilot` | `<project>/.github/skills`, `.claude/skills`, `.agents/skills`, then `~/.copilot/skills`, `~/.claude/skills`, `~/.agents/skills` | GitHub's docs list the folders; they give no order: project first, as listed |
 * | `all` (default) | project `.claude/skills`, `.agents/skills`, `.github/skills`, then user `~/.claude/skills`, `~/.agents/skills`, `~/.codex/skills`, `~/.copilot/skills` | gavel's own choice: the project first |
 *
 * Each folder holds one skill folder per skill (`<folder>/<skill>/SKILL.md`, one level deep). A name
 * found in two folders keeps the one of higher precedence; the other is reported as shadowed.
 *
 * @module
 */
import { existsSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { GavelError, invalidArgument } from "../errors.js";
import { loadSkills } from "./load.js";
import type { Skill, SkillFailure } from "./types.js";

/** The hosts whose folders and precedence {@link skillRoots} knows; `all` is the union. */
export const SKILL_HOSTS = ["claude-code", "codex", "copilot", "all"] as const;
/** One of {@link SKILL_HOSTS}. */
export type DiscoveryHost = (typeof SKILL_HOSTS)[number];

/** One folder a host reads skills from. */
export interface SkillRoot {
  /** The folder, absolute (e.g. `/home/me/project/.claude/skills`). */
  dir: string;
  /** A project folder, or one of the user's (under the home directory). */
  scope: "project" | "user";
  /** How the docs name it: `.claude/skills`, `~/.codex/skills`, … */
  label: string;
}

/** Where {@link skillRoots} and {@link discoverSkills} look. */
export interface DiscoverOptions {
  /** Whose folders and precedence (default `all`). */
  host?: DiscoveryHost;
  /** The project's root (default: the current directory). */
  projectDir?: string;
  /** The user's home (default: `os.homedir()`, which follows `$HOME`). */
  home?: string;
  signal?: AbortSignal;
}

type RootSpec = readonly [scope: "project" | "user", path: string];

/** Each host's folders, highest precedence first (see the module's table). */
const HOST_ROOTS: Record<DiscoveryHost, readonly RootSpec[]> = {
  "claude-code": [
    ["user", ".claude/skills"],
    ["project", ".claude/skills"],
  ],
  codex: [
    ["project", ".agents/skills"],
    ["user", ".agents/skills"],
    ["user", ".codex/skills"],
  ],
  copilot: [
    ["project", ".github/skills"],
    ["project", ".claude/skills"],
    ["project", ".agents/skills"],
    ["user", ".copilot/skills"],
    ["user", ".claude/skills"],
    ["user", ".agents/skills"],
  ],
  all: [
    ["project", ".claude/skills"],
    ["project", ".agents/skills"],
    ["project", ".github/skills"],
    ["user", ".claude/skills"],
    ["user", ".agents/skills"],
    ["user", ".codex/skills"],
    ["user", ".copilot/skills"],
  ],
};

/** `host` checked: one of {@link SKILL_HOSTS}. */
export function discoveryHost(host: unknown): DiscoveryHost {
  if (host === undefined) return "all";
  if (typeof host === "string" && (SKILL_HOSTS as readonly string[]).includes(host)) return host as DiscoveryHost;
  throw invalidArgument(`host must be one of ${SKILL_HOSTS.join(", ")}, got ${JSON.stringify(host)}`);
}

/** The folders `host` reads skills from, highest precedence first (whether they exist or not). */
export function skillRoots(options: DiscoverOptions = {}): SkillRoot[] {
  const host = discoveryHost(options.host);
  const project = resolve(options.projectDir ?? process.cwd());
  const home = resolve(options.home ?? homedir());
  const roots: SkillRoot[] = [];
  for (const [scope, rel] of HOST_ROOTS[host]) {
    const dir = join(scope === "project" ? project : home, rel);
    // a project inside the home folder could name one folder twice (project = home): keep the first
    if (roots.some((r) => r.dir === dir)) continue;
    roots.push({ dir, scope, label: scope === "user" ? `~/${rel}` : rel });
  }
  return roots;
}

/** A skill that a folder of higher precedence hides. */
export interface ShadowedSkill {
  name: string;
  /** The SKILL.md that wins. */
  winner: string;
  /** The SKILL.md that is hidden. */
  shadowed: string;
}

/** What {@link discoverSkills} found. */
export interface DiscoverResult {
  host: DiscoveryHost;
  /** Every folder looked at, highest precedence first, and whether it exists. */
  roots: (SkillRoot & { exists: boolean; skills: number })[];
  /** The skills the host would see, one per name, highest precedence first; each `source` is absolute. */
  skills: Skill[];
  /** Which folder each winning skill came from, by skill id. */
  rootOf: Map<string, SkillRoot>;
  /** Skills hidden by a same-named one of higher precedence. */
  shadowed: ShadowedSkill[];
  /** SKILL.md files that could not be read (the others still load). */
  failed: SkillFailure[];
  /** One line per shadowed skill, naming both, and the spec warnings of the winners. */
  warnings: string[];
}

/** The skills of one host folder; none when it is missing or empty. */
async function loadRoot(root: SkillRoot, signal: AbortSignal | undefined): Promise<{ skills: Skill[]; failed: SkillFailure[] }> {
  try {
    return await loadSkills(root.dir, { maxDepth: 1, signal });
  } catch (err) {
    if (err instanceof GavelError && (err.code === "EMPTY_LIBRARY" || err.code === "FILE_NOT_FOUND")) return { skills: [], failed: [] };
    throw err;
  }
}

/**
 * The skills `host` would load from this project and this user's home: every folder of
 * {@link skillRoots}, a name kept from the folder of highest precedence, the others reported in
 * `shadowed` (with a warning naming both). Folder skills are keyed by name, as hosts address them.
 */
export async function discoverSkills(options: DiscoverOptions = {}): Promise<DiscoverResult> {
  const host = discoveryHost(options.host);
  const roots = skillRoots(options);
  const result: DiscoverResult = { host, roots: [], skills: [], rootOf: new Map(), shadowed: [], failed: [], warnings: [] };
  const byName = new Map<string, Skill>();
  for (const root of roots) {
    const exists = existsSync(root.dir) && statSync(root.dir).isDirectory();
    const loaded = exists ? await loadRoot(root, options.signal) : { skills: [], failed: [] };
    result.roots.push({ ...root, exists, skills: loaded.skills.length });
    result.failed.push(...loaded.failed);
    for (const skill of loaded.skills) {
      const first = byName.get(skill.name);
      if (first) {
        result.shadowed.push({ name: skill.name, winner: first.source, shadowed: skill.source });
        result.warnings.push(`skill "${skill.name}" at ${skill.source} is shadowed by ${first.source} (${host} precedence)`);
        continue;
      }
      byName.set(skill.name, skill);
      result.skills.push(skill);
      result.rootOf.set(skill.id, root);
      result.warnings.push(...skill.warnings);
    }
  }
  return result;
}
