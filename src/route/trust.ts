/**
 * Trust per source and flagged skills at route time: which skills a route may rank
 * (`excludeFlagged`, `excludeSources`), which one wins a near-tie (`trust`), and the flags a chosen
 * skill carries into the route's result.
 *
 * A source is named by a **selector**: a source kind (`folder`, `library`, `input`), a scope
 * (`project`: a skill folder outside the user's home folder tree of host folders, `user`: under
 * `~/.claude/skills`, `~/.codex/skills`, `~/.agents/skills` …), a host (`claude-code`, `codex`,
 * `agents`, `github-copilot`, also spelt `copilot`), or an absolute path prefix (a host folder or a
 * library file). Any other word is refused, so a misspelt selector cannot switch an exclusion off.
 *
 * @module
 */
import { homedir } from "node:os";
import { sep } from "node:path";
import { invalidArgument, clip } from "../errors.js";
import { nearest } from "../util/validate.js";
import { isInside, pathInside, samePath } from "../util/same-path.js";
import type { BankEntry } from "../bank/types.js";
import { locateSkill } from "./skill-source.js";
import { echoRun } from "./probes.js";
import type { Library } from "../bank/library.js";
import { glanceLibrary, type Glanced } from "./glance.js";
import type { Queries } from "./context.js";
import type { RouterParts } from "./parts.js";

/** A flag a skill can carry: a hub (breadth probes), an echo of the task, a steering phrase. */
export type SkillFlag = "hub" | "echo" | "injection";

const FLAGS: readonly SkillFlag[] = ["hub", "echo", "injection"];

/** The flags kept in a skill's warnings (hub, injection); echo depends on the task and is not stored. */
export function storedFlags(warnings: readonly string[] | undefined): SkillFlag[] {
  const out: SkillFlag[] = [];
  if (!warnings) return out;
  if (warnings.some((w) => w.startsWith("hub:"))) out.push("hub");
  if (warnings.some((w) => w.includes("may try to steer routing"))) out.push("injection");
  return out;
}

/** The `excludeFlagged` option: a list of {@link SkillFlag}s. */
export function flagsOption(value: unknown): SkillFlag[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every((v) => FLAGS.includes(v as SkillFlag))) {
    throw invalidArgument(`excludeFlagged must be an array of ${FLAGS.map((f) => JSON.stringify(f)).join(", ")}`);
  }
  return [...new Set(value as SkillFlag[])];
}

/** The selectors that describe one installed skill's source. */
export interface SourceClass {
  kind: "folder" | "library" | "input";
  scope: "project" | "user" | "library" | "input";
  host: string | null;
  /** The host folder or library file, absolute (null for in-memory records). */
  path: string | null;
}

const classCache = new WeakMap<BankEntry, SourceClass>();

/** The source selectors of a bank entry (cached per entry). */
export function sourceClass(entry: BankEntry, bankDir: string): SourceClass {
  let c = classCache.get(entry);
  if (c) return c;
  const { provenance: p } = locateSkill(entry.source, bankDir);
  if (p.kind === "folder") {
    // `~/.claude/skills` and its kin (directly under the home folder): the user's own skills
    const home = homedir();
    const rel = home === "" || p.host === null ? null : pathInside(home, p.hostFolder);
    const user = rel !== null && rel.split(sep).length === 2;
    c = { kind: "folder", scope: user ? "user" : "project", host: p.host, path: p.hostFolder };
  } else if (p.kind === "library") c = { kind: "library", scope: "library", host: null, path: p.library };
  else c = { kind: "input", scope: "input", host: null, path: null };
  classCache.set(entry, c);
  return c;
}

/** The selectors that are words: source kinds, scopes and hosts (`copilot` is `github-copilot`). */
export const SELECTOR_WORDS = ["folder", "library", "input", "project", "user", "claude-code", "codex", "agents", "github-copilot", "copilot"] as const;

const isPathSelector = (selector: string) => selector.startsWith("/") || /^[A-Za-z]:[\\/]/.test(selector);

/** Whether `selector` names this source. */
export function matchesSource(c: SourceClass, selector: string): boolean {
  const word = selector === "copilot" ? "github-copilot" : selector;
  if (word === c.kind || word === c.scope || (c.host !== null && word === c.host)) return true;
  if (c.path === null || !isPathSelector(selector)) return false;
  return samePath(c.path, selector) || isInside(selector, c.path);
}

/** A selector checked: one of {@link SELECTOR_WORDS} or an absolute path. */
function checkSelector(selector: string, name: string): void {
  if (isPathSelector(selector) || (SELECTOR_WORDS as readonly string[]).includes(selector)) return;
  const near = nearest(selector, SELECTOR_WORDS);
  throw invalidArgument(`${name}: unknown source selector ${JSON.stringify(clip(selector))}${near ? ` (did you mean ${near}?)` : ""}; a selector is one of ${SELECTOR_WORDS.join(", ")} or an absolute path`);
}

/** Selector lists and priority maps, checked. */
export function selectorsOption(value: unknown, name: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every((v) => typeof v === "string" && v !== "")) throw invalidArgument(`${name} must be an array of source selectors (non-empty strings)`);
  for (const v of value as string[]) checkSelector(v, name);
  return value as string[];
}

/** The `trust` option: source selector → priority (finite numbers; higher wins a near-tie). */
export function trustOption(value: unknown): Map<string, number> {
  const out = new Map<string, number>();
  if (value === undefined) return out;
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw invalidArgument("trust must be an object mapping source selectors to priorities");
  for (const [k, v] of Object.entries(value)) {
    if (k === "" || typeof v !== "number" || !Number.isFinite(v)) throw invalidArgument(`trust[${JSON.stringify(clip(k))}] must be a finite number`);
    checkSelector(k, "trust");
    out.set(k, v);
  }
  return out;
}

/** A skill's priority under `trust`: the highest priority among the selectors that match it; 0 when none does. */
export function priorityOf(c: SourceClass, trust: ReadonlyMap<string, number>): number {
  let p = -Infinity;
  for (const [sel, v] of trust) if (matchesSource(c, sel) && v > p) p = v;
  return p === -Infinity ? 0 : p;
}

/** What a route filters and breaks ties with. */
export interface TrustSettings {
  excludeFlagged: SkillFlag[];
  excludeSources: string[];
  trust: Map<string, number>;
  /** Near-tie margin in the glance's g: skills within it of the best are ranked by source priority first. */
  tieMargin: number;
}

/** Whether a route needs to look at sources or flags at all. */
export function trustActive(t: TrustSettings): boolean {
  return t.excludeFlagged.length > 0 || t.excludeSources.length > 0 || t.trust.size > 0;
}

/**
 * The skills a route may rank, as a predicate over skill ids: not from an excluded source, not
 * carrying an excluded stored flag (hub, injection). Echo depends on the task: see {@link echoIds}.
 */
export function rankFilter(library: Library, t: TrustSettings): ((id: string) => boolean) | undefined {
  const flagged: SkillFlag[] = t.excludeFlagged.filter((f) => f !== "echo");
  if (flagged.length === 0 && t.excludeSources.length === 0) return undefined;
  return (id) => {
    const e = library.entry(id);
    if (flagged.length > 0 && storedFlags(e.warnings).some((f) => flagged.includes(f))) return false;
    if (t.excludeSources.length > 0) {
      const c = sourceClass(e, library.dir);
      if (t.excludeSources.some((s) => matchesSource(c, s))) return false;
    }
    return true;
  };
}

/**
 * The skill ids among `ids` whose text echoes the task (a verbatim run of its words, see
 * {@link echoRun}), with the run's length.
 */
export async function echoIds(library: Library, taskText: string, ids: readonly string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const id of ids) {
    const text = await library.text(library.entry(id));
    const run = echoRun(taskText, `${text.name}\n${text.description}\n${text.body}`);
    if (run > 0) out.set(id, run);
  }
  return out;
}

/**
 * Near-ties broken by trust at the first stage: among the ranked skills whose glance vote g is within
 * `margin` of the best, only those from the highest-priority source stay ranked; the others lose the
 * tie. Skills further from the best are untouched. (With the default pair the Δ-shortlist is nearly
 * always one skill, so a tie must be broken before it, on g.)
 */
export function preferTrusted<T extends { skill: string; g: number }>(ranked: readonly T[], priority: (id: string) => number, margin: number): T[] {
  let best = -Infinity;
  for (const r of ranked) if (r.g > best) best = r.g;
  let top = -Infinity;
  for (const r of ranked) if (r.g >= best - margin) top = Math.max(top, priority(r.skill));
  return ranked.filter((r) => r.g < best - margin || priority(r.skill) === top);
}



/** How many of the glance's best are checked for echoes when `excludeFlagged` holds `"echo"`. */
export const ECHO_CHECK_TOP = 32;

/** The trust options of a route or glance, checked; `tieMargin` defaults to `defaultMargin`. */
export function trustSettings(o: Record<string, unknown>, defaultMargin: number): TrustSettings {
  const tieMargin = o.tieMargin === undefined ? defaultMargin : o.tieMargin;
  if (typeof tieMargin !== "number" || !Number.isFinite(tieMargin) || tieMargin < 0) throw invalidArgument("tieMargin must be a finite number ≥ 0");
  return { excludeFlagged: flagsOption(o.excludeFlagged), excludeSources: selectorsOption(o.excludeSources, "excludeSources"), trust: trustOption(o.trust), tieMargin };
}

/**
 * The glance with the exclusions applied inside its ranking: excluded sources and stored flags
 * filter its columns; with `"echo"` excluded, the best {@link ECHO_CHECK_TOP} are checked for echoes
 * of the task and, when any echoes, the glance runs again without them (the task's queries are
 * encoded once). An echo ranked below the top 32 is not looked for: it cannot reach the shortlist
 * unless the skills above it are excluded too.
 */
export async function glanceTrusted(
  parts: RouterParts,
  queriesOf: () => Promise<Queries>,
  t: TrustSettings,
  signal?: AbortSignal,
  tokenScores = false,
): Promise<Glanced> {
  let q: Promise<Queries> | undefined;
  const once = () => (q ??= queriesOf());
  const keep = rankFilter(parts.library, t);
  const glanced = await glanceLibrary(parts, once, signal, keep, tokenScores);
  if (!t.excludeFlagged.includes("echo")) return glanced;
  // the task text as the lexical readers take it (the context was checked by the glance's encoding)
  const echoes = await echoIds(parts.library, glanced.q.bm25Query.text, glanced.ranked.slice(0, ECHO_CHECK_TOP).map((r) => r.skill));
  if (echoes.size === 0) return glanced;
  return glanceLibrary(parts, once, signal, (id) => !echoes.has(id) && (keep?.(id) ?? true), tokenScores);
}

/** The flags of a route's winner: its stored ones (hub, injection) and echo, when its text echoes the task. */
export async function winnerFlags(library: Library, taskText: string, id: string): Promise<SkillFlag[]> {
  const flags = storedFlags(library.entry(id).warnings);
  if ((await echoIds(library, taskText, [id])).size > 0) flags.push("echo");
  return flags;
}
