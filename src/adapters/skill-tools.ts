/**
 * What the skill tools answer, as plain functions over a {@link SkillSource} (no MCP SDK or framework
 * here), shared by `gavel mcp` and the framework adapters' tools: `search_skills` (the router's ruled
 * shortlist with scores and one-line reasons, padded with the glance's next best) and `load_skill` (the
 * skill itself, see {@link SkillRecord}), and the words that ask the calling model for a task the
 * router can match.
 *
 * @module
 */
import type { Candidate, GlanceHit, RouteResult, Vote } from "../route/types.js";
import type { SkillRecord } from "../route/skill-record.js";
import { shortlistScore } from "../route/ruling.js";
import { invalidArgument } from "../errors.js";
import { boolOption, optionsObject, signalOption, valueText } from "../util/validate.js";
import { adapterOptions } from "./options.js";

/**
 * The search tool's description, as the calling model reads it. The router matches the task's words
 * against the skills' text, so it asks for the work stated concretely: requests as people phrase them
 * ("the pictures people upload are huge") route far worse than the same work stated
 * (docs/BENCHMARKS.md, "Requests phrased as people talk").
 */
export const SEARCH_SKILLS_DESCRIPTION =
  "Find the installed skills (SKILL.md) that fit a task, best first, with scores and a one-line reason each. " +
  "The router matches the task's words against the skills' text, so state the work concretely in one or two sentences: " +
  "what to do, to what, and the tools, languages, file types or services involved, as the conversation implies them. " +
  "Do not pass chat that no skill could serve.";

/** The search tool's `task` field, as the calling model reads it. */
export const SEARCH_TASK_DESCRIPTION = "the work, stated concretely: what to do, to what, and the tools, languages, file types or services involved";

/** The load tool's description, as the calling model reads it. */
export const LOAD_SKILL_DESCRIPTION =
  "Read an installed skill by id or name: its instructions (the SKILL.md body), front matter, allowed-tools, " +
  "the absolute path of its SKILL.md and folder, and where it was installed from.";

/**
 * What the tools read: a {@link Router} of this process (it fits as it is), or the bank's resident
 * router (`gavel serve`, see src/cli/mcp/source.ts). `list` may answer at once or later.
 */
export interface SkillSource {
  route(task: string, options: { explain: boolean; libraryCut?: boolean; signal?: AbortSignal }): Promise<RouteResult>;
  glance(task: string, options: { topK: number; signal?: AbortSignal }): Promise<GlanceHit[]>;
  list(): readonly SkillSummary[] | Promise<readonly SkillSummary[]>;
  get(idOrName: string): Promise<SkillRecord>;
}

/** An installed skill as the tools list it. */
export interface SkillSummary {
  id: string;
  name: string;
  description: string;
}

/** How `search_skills` routes (`gavel mcp`'s flags). */
export interface SearchOptions {
  /** As `RouteOptions.libraryCut` (absent: the router's default); it decides `abstained`, not the skills listed. */
  libraryCut?: boolean;
}

/** Most skills `search_skills` lists. */
export const MAX_SEARCH_K = 50;
/** Skills `search_skills` lists by default. */
export const DEFAULT_SEARCH_K = 5;

/**
 * What every framework's search tool checks when it is built: that `router` can be searched, and its
 * options by key (`known`: the keys of the tool's options type) and value; `name` is the building
 * function's, for the error. Returns the default `k` and the route's options.
 *
 * @throws GavelError `INVALID_ARGUMENT` for no router, an unknown key (naming the nearest known one) or a wrong value
 */
export function searchToolSetup(router: SkillSource, options: unknown, name: string, known: Readonly<Record<string, true>>): { k: number; search: SearchOptions } {
  if (!router || typeof router.route !== "function" || typeof router.glance !== "function" || typeof router.list !== "function") throw invalidArgument(`${name} needs a Router (or an object with route(), glance(), list() and get())`);
  const o = adapterOptions(options, `${name} options`, known);
  const k = searchK(o.k);
  const libraryCut = o.libraryCut === undefined ? undefined : boolOption(o.libraryCut, "libraryCut", true);
  return { k, search: libraryCut === undefined ? {} : { libraryCut } };
}

/** `k` checked: an integer from 1 to {@link MAX_SEARCH_K}. */
export function searchK(k: unknown): number {
  if (k === undefined) return DEFAULT_SEARCH_K;
  if (!(typeof k === "number" && Number.isInteger(k) && k >= 1 && k <= MAX_SEARCH_K)) throw invalidArgument(`k must be an integer from 1 to ${MAX_SEARCH_K}, got ${valueText(k)}`);
  return k;
}

/** One skill of a search, best first. */
export interface SearchHit {
  rank: number;
  id: string;
  name: string;
  description: string;
  /**
   * `ruled`: on the route's shortlist, scored by the re-ranker's R where it ranked them (the embedded
   * default's projections), else by S; `glance`: below the shortlist, scored by g alone.
   */
  stage: "ruled" | "glance";
  /** R (or S) for ruled skills, g for glance-only ones (higher is better; comparable within a stage). */
  score: number;
  /** The glance's vote. */
  g: number;
  /** The verdict's log-odds that the skill provides what the task needs (ruled skills, when the verdict ran). */
  V?: number;
  /** Mean log-likelihood of the task with the skill as prefix (ruled skills, when the verdict ran). */
  L?: number;
  /** One line: why it is here. */
  reason: string;
}

/** What `search_skills` returns. */
export interface SearchResult {
  task: string;
  /** The router's choice, or null (it abstained, or nothing is installed). */
  chosen: string | null;
  abstained: boolean;
  /**
   * Why it abstained or not, when the route decided on abstention: `score` is the abstention model's
   * score, null when none was computed (no calibrated model, or a task without a letter or digit).
   */
  abstention?: { reason: string; score: number | null };
  skills: SearchHit[];
  /** Milliseconds the search took. */
  ms: number;
}

/** A number for a reason line: 3 significant digits, a sign where it means yes/no. */
function num(x: number, signed = false): string {
  const s = Math.abs(x) >= 100 ? x.toFixed(0) : x.toPrecision(3);
  return signed && x >= 0 ? `+${s}` : s;
}

/** The strongest task tokens that voted for the winner, as `"pdf"→"pdf"`. */
function votesText(votes: readonly Vote[] | undefined): string {
  if (!votes?.length) return "";
  const shown = votes.slice(0, 3).map((v) => `"${v.token.trim()}"→"${v.matched.trim()}"`);
  return `; task tokens matching it: ${shown.join(", ")}`;
}

/** The reason line of a ruled candidate. */
function ruledReason(c: Candidate, i: number, r: RouteResult): string {
  const parts = [`glance g=${num(c.g)}`];
  if (Number.isFinite(c.V)) parts.push(`verdict V=${num(c.V, true)} (${c.V >= 0 ? "yes" : "no"} on "does it provide what the task needs?")`);
  if (Number.isFinite(c.L)) parts.push(`L=${num(c.L)}`);
  if (c.B !== undefined && Number.isFinite(c.B)) parts.push(`BM25 B=${num(c.B)}`);
  const head = i === 0 ? (r.abstained ? "best match, but the router abstained" : "chosen by the router") : `shortlisted #${i + 1}`;
  const score = c.R !== undefined && Number.isFinite(c.R) ? `re-ranker R=${num(c.R)}, S=${num(c.S)}` : `S=${num(c.S)}`;
  return `${head}: ${score} from ${parts.join(", ")}${i === 0 ? votesText(r.explanation) : ""}`;
}

/**
 * `search_skills`: routes the task (glance, shortlist, verdict, ruling) and lists the ruled shortlist,
 * then — when it holds fewer than `k` — the glance's next best, up to `k` skills in all. An empty task,
 * or `k` outside 1-{@link MAX_SEARCH_K}, is an `INVALID_ARGUMENT` error. A bank with no routable skill
 * (none installed, or every one has disable-model-invocation) answers no skill: `chosen` null,
 * `skills` empty.
 */
export async function searchSkills(router: SkillSource, task: string, k: number = DEFAULT_SEARCH_K, signal?: AbortSignal, options: SearchOptions = {}): Promise<SearchResult> {
  if (typeof task !== "string" || task.trim() === "") throw invalidArgument("the task must be a non-empty string: the work, stated concretely");
  searchK(k); // the default already applied: k itself must be 1-MAX_SEARCH_K
  const o = optionsObject(options, "searchSkills options", { libraryCut: true });
  if (o.libraryCut !== undefined) boolOption(o.libraryCut, "libraryCut", true);
  signalOption(signal);
  const t0 = performance.now();
  let r: RouteResult;
  try {
    r = await router.route(task, { explain: true, signal, ...(o.libraryCut === undefined ? {} : { libraryCut: o.libraryCut as boolean }) });
  } catch (err) {
    if ((err as { code?: unknown } | null)?.code !== "EMPTY_LIBRARY") throw err;
    return { task, chosen: null, abstained: false, skills: [], ms: Math.round(performance.now() - t0) };
  }
  const described = new Map((await router.list()).map((s) => [s.id, s.description]));
  const skills: SearchHit[] = r.shortlist.slice(0, k).map((c, i) => ({
    rank: i + 1,
    id: c.skill,
    name: c.name,
    description: described.get(c.skill) ?? "",
    stage: "ruled",
    score: shortlistScore(c),
    g: c.g,
    ...(Number.isFinite(c.V) ? { V: c.V } : {}),
    ...(Number.isFinite(c.L) ? { L: c.L } : {}),
    reason: ruledReason(c, i, r),
  }));
  if (skills.length < k) {
    const seen = new Set(skills.map((s) => s.id));
    const glanced = await router.glance(task, { topK: k + skills.length, signal });
    glanced.forEach((h, i) => {
      if (skills.length >= k || seen.has(h.skill)) return;
      skills.push({
        rank: skills.length + 1,
        id: h.skill,
        name: h.name,
        description: described.get(h.skill) ?? "",
        stage: "glance",
        score: h.g,
        g: h.g,
        reason: `glance only: g=${num(h.g)}, #${i + 1} by the glance, outside the shortlist the verdict judged`,
      });
    });
  }
  return {
    task,
    chosen: r.skill,
    abstained: r.abstained,
    // a score not computed is NaN in the route (null through `gavel serve`): null here, as JSON keeps it
    ...(r.abstention ? { abstention: { ...r.abstention, score: Number.isFinite(r.abstention.score) ? r.abstention.score : null } } : {}),
    skills,
    ms: Math.round(performance.now() - t0),
  };
}

/** `search_skills`' answer as text for the model: one line a skill, and how to load one. */
export function searchText(s: SearchResult): string {
  const lines: string[] = [];
  if (s.skills.length === 0) return "No skill is installed in this bank (gavel install <folder> installs some).";
  if (s.abstained) lines.push(`No skill fits this task confidently (${s.abstention?.reason ?? "abstained"}); the closest ones:`);
  else lines.push(`Best skill: ${s.chosen}. Shortlist, best first:`);
  for (const h of s.skills) lines.push(`${h.rank}. ${h.name} (id ${h.id}, score ${num(h.score)}): ${h.description}\n   why: ${h.reason}`);
  lines.push("", "Call load_skill with a skill's id or name to read its instructions.");
  return lines.join("\n");
}

/** `load_skill`: the installed skill by id or name (SKILL_NOT_FOUND for an unknown one). */
export function loadSkill(router: SkillSource, skill: string): Promise<SkillRecord> {
  return router.get(skill);
}

/** `load_skill`'s answer as text for the model: where it lives, its allowed tools, then its instructions. */
export function skillText(s: SkillRecord): string {
  const lines = [`# Skill: ${s.name}`, ""];
  if (s.path) lines.push(`Source: ${s.path}`);
  if (s.dir) lines.push(`Folder (its scripts and references are relative to it): ${s.dir}`);
  if (s.allowedTools?.length) lines.push(`Allowed tools: ${s.allowedTools.join(", ")}`);
  if (s.sourceStatus === "changed") lines.push("Note: the SKILL.md changed since it was installed; these are the installed instructions.");
  if (s.sourceStatus === "missing") lines.push("Note: the skill's source file is no longer where it was installed from.");
  lines.push(`Description: ${s.description}`, "", s.body);
  return lines.join("\n");
}
