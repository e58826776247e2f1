/**
 * What every framework adapter shares: route a conversation with a `Router` (or anything with `route()`
 * and `get()`), read the winner whole, and write it as a block of system text; or nothing when the
 * ruling abstains. Types only from the rest of the package, so an adapter's bundle stays a few
 * kilobytes and loads nothing of the router itself.
 *
 * @module
 */
import type { RouteContext, RouteOptions, RouteResult } from "../route/types.js";
import type { SkillRecord } from "../route/skill-record.js";
import { abortedError, boolOption, describeValue, signalOption, untilAborted, valueText } from "../util/validate.js";
import { linkSignals } from "../util/linked-signal.js";
import { invalidArgument } from "../errors.js";
import { isAmbiguousName } from "../bank/entries.js";
import { adapterOptions } from "./options.js";

/** The keys of {@link GavelAdapterOptions}. */
const ADAPTER_KEYS = ["abstain", "libraryCut", "verdict", "maxChars", "context", "format", "onRoute", "signal"] as const;

/** What an adapter needs of a router: `Router` has both. */
export interface SkillRouterLike {
  route(context: RouteContext, options?: RouteOptions): Promise<RouteResult>;
  get(idOrName: string): Promise<SkillRecord>;
}

/** Options every adapter takes. */
export interface GavelAdapterOptions {
  /** Abstention on (true) or off (false); default: the router's (on when the projections carry a model). */
  abstain?: boolean;
  /**
   * With abstention, also abstain at a small library's own cut (default: the router's, on unless
   * `GAVEL_LIBRARY_CUT=off`); false declines by the calibrated model alone (`RouteOptions.libraryCut`).
   */
  libraryCut?: boolean;
  /** Run the verdict (default true); false routes on the glance (and B) alone, faster. */
  verdict?: boolean;
  /** Most characters of the skill's body written into the system prompt, a non-negative integer or Infinity (default 20,000); the rest is named by its path. */
  maxChars?: number;
  /**
   * What is routed: the latest user message (`"last-user"`, default) or the whole conversation
   * (`"conversation"`: user and assistant turns, read live with decaying weights).
   */
  context?: "last-user" | "conversation";
  /** Writes the system text for a chosen skill (default {@link skillInstructions}). */
  format?: (skill: SkillRecord, result: RouteResult) => string;
  /** Called after each route, with the skill when one was chosen (for logs and tests). */
  onRoute?: (event: { result: RouteResult; skill: SkillRecord | null }) => void;
  /**
   * Stops every route of this adapter once aborted (ABORTED). The framework's own signal of a call,
   * where it gives the adapter one, stops that call's route as well (see docs/INTEGRATIONS.md).
   */
  signal?: AbortSignal;
}

/** Whether `err` is the router's `EMPTY_LIBRARY`: no skill installed, or none routable. */
export function isEmptyLibrary(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === "EMPTY_LIBRARY";
}

/** A route and, when it chose one, the skill whole and its system text. */
export interface RoutedSkill {
  result: RouteResult;
  skill: SkillRecord | null;
  /** The system text to add; null when the ruling abstained or chose nothing. */
  instructions: string | null;
}

/** A chat turn as the adapters read it: a role and text. */
export interface ChatTurn {
  role: string;
  content: string;
}

export const DEFAULT_MAX_CHARS = 20_000;

/** A `maxChars` option checked: a non-negative integer or `Infinity` (no cut), `fallback` when undefined; else INVALID_ARGUMENT. */
export function maxCharsOf(maxChars: unknown, fallback: number = DEFAULT_MAX_CHARS): number {
  if (maxChars === undefined) return fallback;
  if (typeof maxChars !== "number" || !(maxChars >= 0) || !(Number.isInteger(maxChars) || maxChars === Infinity)) {
    throw invalidArgument(`maxChars must be a non-negative integer or Infinity, got ${describeValue(maxChars)}`);
  }
  return maxChars;
}

/** `text` cut to `max` characters (at a line end when one is near), and whether it was cut. */
export function cutText(text: string, max: number): { text: string; cut: boolean } {
  if (text.length <= max) return { text, cut: false };
  let end = max;
  const nl = text.lastIndexOf("\n", max);
  if (nl >= max * 0.8) end = nl;
  return { text: text.slice(0, end).trimEnd(), cut: true };
}

/** Quotes an attribute value for the `<skill …>` tag. */
function attr(value: string): string {
  return JSON.stringify(value.replace(/[<>]/g, ""));
}

/**
 * The default system text for a chosen skill: a `<skill>` block with its name, description, where it
 * lives (relative paths in the body are relative to its folder) and its body, cut at `maxChars`.
 */
export function skillInstructions(skill: SkillRecord, maxChars = DEFAULT_MAX_CHARS): string {
  const { text, cut } = cutText(skill.body, maxChars);
  const where = skill.path ? ` path=${attr(skill.path)}` : "";
  const lines = [
    `<skill name=${attr(skill.name)}${where}>`,
    `The skill "${skill.name}" was chosen for this request: ${skill.description}`,
    skill.dir ? `Follow its instructions where they apply; paths in it are relative to ${skill.dir}.` : "Follow its instructions where they apply.",
    "",
    text,
  ];
  if (cut) lines.push("", `[cut at ${text.length} of ${skill.body.length} characters${skill.path ? `; the whole skill is in ${skill.path}` : ""}]`);
  lines.push("</skill>");
  return lines.join("\n");
}

/** The text of a message's content: a string, or the text parts of a list of parts. */
export function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((p) => (typeof p === "string" ? p : p && typeof p === "object" && (p as { type?: unknown }).type === "text" ? String((p as { text?: unknown }).text ?? "") : ""))
      .filter((t) => t !== "")
      .join("\n");
  }
  return "";
}

/** The routing context of a conversation: its last user turn, or its user and assistant turns. */
export function contextOf(turns: readonly ChatTurn[], mode: GavelAdapterOptions["context"]): RouteContext | null {
  if (mode === "conversation") {
    const chat = turns.filter((t) => (t.role === "user" || t.role === "assistant") && t.content.trim() !== "");
    return chat.length > 0 ? chat.map((t) => ({ role: t.role, content: t.content })) : null;
  }
  // the turn being answered is the last user turn: one without text (an image alone) routes nothing,
  // rather than an older turn's request again
  for (let i = turns.length - 1; i >= 0; i--) if (turns[i].role === "user") return turns[i].content.trim() !== "" ? turns[i].content : null;
  return null;
}

/**
 * A router bound to adapter options: `route(context)` rules once per distinct context (the steps of
 * one agent loop share the route of its user message) and reads the winner whole.
 */
export class SkillInjector {
  readonly #router: SkillRouterLike;
  readonly #options: GavelAdapterOptions;
  readonly #maxChars: number;
  #lastKey: string | null = null;
  #last: Promise<RoutedSkill> | null = null;

  /**
   * `options` are checked here, when the adapter is built: an unknown key (beside the adapter's own
   * `extraKeys`) or a value of the wrong kind is INVALID_ARGUMENT, not an error at every agent step.
   */
  constructor(router: SkillRouterLike, options: GavelAdapterOptions = {}, extraKeys: readonly string[] = []) {
    if (!router || typeof router.route !== "function" || typeof router.get !== "function") {
      throw invalidArgument("a gavel adapter needs a Router (or an object with route() and get())");
    }
    const known = Object.fromEntries([...ADAPTER_KEYS, ...extraKeys].map((k) => [k, true] as const));
    const o = adapterOptions(options, "gavel adapter options", known);
    for (const k of ["abstain", "libraryCut", "verdict"] as const) if (o[k] !== undefined) boolOption(o[k], k, false);
    signalOption(o.signal);
    if (o.context !== undefined && o.context !== "last-user" && o.context !== "conversation") throw invalidArgument(`context must be "last-user" or "conversation", got ${valueText(o.context)}`);
    for (const k of ["format", "onRoute"] as const) if (o[k] !== undefined && typeof o[k] !== "function") throw invalidArgument(`${k} must be a function, got ${valueText(o[k])}`);
    this.#router = router;
    this.#options = options;
    this.#maxChars = maxCharsOf(options.maxChars);
  }

  get options(): GavelAdapterOptions {
    return this.#options;
  }

  /**
   * Routes the conversation (see {@link contextOf}); null when it holds no text to route, or when the
   * library has no skill to route to (none installed, or every one has disable-model-invocation:
   * `EMPTY_LIBRARY`, which would otherwise fail every model call of the agent; the call runs as it
   * would have, as on an abstention). `signal` (the framework's, for this call) stops it as the
   * `signal` option does.
   */
  async forTurns(turns: readonly ChatTurn[], signal?: AbortSignal): Promise<RoutedSkill | null> {
    const context = contextOf(turns, this.#options.context);
    if (context === null) return null;
    try {
      return await this.route(context, signal);
    } catch (err) {
      if (isEmptyLibrary(err)) return null;
      throw err;
    }
  }

  /**
   * Routes `context` (once per distinct context in a row) and reads the winner. A route reused for
   * the same context is checked against the library first: when its skill was uninstalled since, the
   * context is routed again; when the skill changed, its text is read again. `signal` (this call's)
   * and the `signal` option stop it: ABORTED, at once when either is already aborted. A call that
   * joins another's route in flight stops waiting when its own signal aborts, and routes again when
   * the other's signal stopped the shared route.
   */
  async route(context: RouteContext, signal?: AbortSignal): Promise<RoutedSkill> {
    // one signal for the option's (often long-lived) and the call's, unlinked when the call settles
    // (linked-signal.ts: AbortSignal.any would leave a record on the option's signal per call)
    const linked = linkSignals([this.#options.signal, signal]);
    try {
      return await this.#routeWith(context, linked.signal);
    } finally {
      linked.dispose();
    }
  }

  #routeWith(context: RouteContext, signal: AbortSignal | undefined): Promise<RoutedSkill> {
    if (signal?.aborted) return Promise.reject(abortedError("route", signal));
    const key = JSON.stringify(context);
    if (this.#last && this.#lastKey === key) return this.#current(this.#last, context, key, signal);
    return this.#fresh(context, key, signal);
  }

  #fresh(context: RouteContext, key: string, signal: AbortSignal | undefined): Promise<RoutedSkill> {
    this.#lastKey = key;
    this.#last = this.#route(context, signal);
    this.#last.catch(() => {
      if (this.#lastKey === key) this.#last = this.#lastKey = null; // a failure is not remembered
    });
    return this.#last;
  }

  async #current(last: Promise<RoutedSkill>, context: RouteContext, key: string, signal: AbortSignal | undefined): Promise<RoutedSkill> {
    let routed: RoutedSkill;
    try {
      routed = await untilAborted(last, "route", signal);
    } catch (err) {
      // the route this call joined was stopped by another call's signal, not this one's: route again
      if ((err as { code?: unknown }).code === "ABORTED" && !signal?.aborted && this.#last !== last) return this.#routeWith(context, signal);
      throw err;
    }
    if (routed.skill === null) return routed;
    const now = await this.load(routed.skill.id);
    if (now === null) return this.#lastKey === key ? this.#fresh(context, key, signal) : this.#routeWith(context, signal);
    if (now.contentHash === routed.skill.contentHash) return routed;
    return { ...routed, skill: now, instructions: this.#instructions(now, routed.result) };
  }

  #instructions(skill: SkillRecord, result: RouteResult): string {
    if (!this.#options.format) return skillInstructions(skill, this.#maxChars);
    const text = this.#options.format(skill, result);
    if (typeof text !== "string") throw invalidArgument(`format must return a string, got ${valueText(text)}`);
    return text;
  }

  async #route(context: RouteContext, signal: AbortSignal | undefined): Promise<RoutedSkill> {
    const { abstain, libraryCut, verdict } = this.#options;
    const options: RouteOptions = {};
    if (abstain !== undefined) options.abstain = abstain;
    if (libraryCut !== undefined) options.libraryCut = libraryCut;
    if (verdict !== undefined) options.verdict = verdict;
    if (signal !== undefined) options.signal = signal;
    const result = await this.#router.route(context, options);
    const id = result.abstained ? null : result.skill;
    const skill = id === null ? null : await this.#router.get(id);
    const instructions = skill === null ? null : this.#instructions(skill, result);
    this.#options.onRoute?.({ result, skill });
    return { result, skill, instructions };
  }

  /** An installed skill by name or id, for a load-skill tool: null when there is none. */
  async load(name: string): Promise<SkillRecord | null> {
    try {
      return await this.#router.get(name);
    } catch (err) {
      if ((err as { code?: unknown }).code === "SKILL_NOT_FOUND") return null;
      throw err;
    }
  }

  /**
   * {@link load} for a load-skill tool's answer: a name several installed skills share is not thrown
   * but answered as `{ error }`, which says the name is ambiguous and lists the ids to use instead.
   */
  async lookup(name: string): Promise<SkillRecord | { error: string } | null> {
    try {
      return await this.load(name);
    } catch (err) {
      if (isAmbiguousName(err)) return { error: `ambiguous name: ${(err as Error).message}` };
      throw err;
    }
  }
}

/** A skill as a load-skill tool returns it (body cut at `maxChars`). */
export interface LoadedSkill {
  name: string;
  description: string;
  body: string;
  metadata: Record<string, unknown>;
  allowedTools: string[] | null;
  path: string | null;
  dir: string | null;
  /** True when the body was cut at `maxChars`. */
  cut: boolean;
}

/** {@link LoadedSkill} of a record. */
export function loadedSkill(skill: SkillRecord, maxChars = Infinity): LoadedSkill {
  const { text, cut } = cutText(skill.body, maxChars);
  return { name: skill.name, description: skill.description, body: text, metadata: skill.metadata, allowedTools: skill.allowedTools, path: skill.path, dir: skill.dir, cut };
}
