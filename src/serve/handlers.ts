/**
 * What each operation of the resident router does with the Router (docs/serve-protocol.md): parameters
 * checked, the Router verb called with the request's AbortSignal, the result shaped for the wire.
 *
 * @module
 */
import { basename, isAbsolute, resolve } from "node:path";
import { GavelError, invalidArgument, type OptionNames } from "../errors.js";
import type { GlanceHit, InstalledSkill, Router, RouteOptions, SkillHandle, SkillRecord } from "../route/index.js";
import { isRegularFile, locateSkill, readSource } from "../route/skill-source.js";
import { PROTOCOL_VERSION, type Op } from "./protocol.js";
import { routeSettings } from "./settings.js";
import { config } from "../config.js";
import { installOp, syncOp, type ProgressSink } from "./writes.js";
import { requestCancelled } from "./batch-queue.js";
import { boolOption, untilAborted } from "../util/validate.js";

/** How a host loads a skill: where its SKILL.md is, and what it says it is for. */
export interface SkillRef {
  id: string;
  name: string;
  description: string;
  /** As the install recorded it. */
  source: string;
  /** The SKILL.md's absolute path, when the source is a SKILL.md that exists on this machine. */
  path: string | null;
}

/**
 * A skill whole, as `get-skill` answers: `Router.get`'s record (body, front matter, allowed-tools,
 * absolute path and folder, content hash, provenance) plus its key count and render length.
 */
export interface SkillDocument extends SkillRecord {
  keys: number;
  renderTokens: number;
}

/** One skill of the `list` op: {@link SkillRef} and the rest of what `Router.list` says of it. */
export type ListedSkill = SkillRef & InstalledSkill;

/** The route's winner on the wire: {@link SkillRef} and the route's `load` (folder, content hash; path resolved as `Router.get` does). */
export interface Winner extends SkillRef {
  dir: string | null;
  contentHash: string;
}

/** What the server knows about itself, for `status`. */
export interface ServerFacts {
  pid: number;
  bank: string;
  model: string;
  listen: string;
  startedAt: number;
  inFlight(): number;
  /** Most tokens of task one request may carry (the per-request budget); 0: no budget. */
  maxTaskTokens: number;
}

/**
 * The text of a route's task as the router tokenizes it: the string, or the chat's "role: content"
 * lines (src/route/context.ts, `chatAsTask`), roles included, so a long role counts as a long content.
 */
function taskText(task: string | readonly { role?: unknown; content?: unknown }[]): string {
  const part = (v: unknown) => (typeof v === "string" ? v : "");
  return typeof task === "string" ? task : task.map((m) => `${part(m?.role)}: ${part(m?.content)}`).join("\n");
}

/** Most hits a `glance-top` answers. */
export const MAX_GLANCE_TOP = 200;

/** The route options a request may carry (anything else is ignored). */
const ROUTE_FLAGS = ["abstain", "libraryCut", "verdict", "explain", "lexical", "live"] as const;

function str(params: Record<string, unknown>, key: string): string {
  const v = params[key];
  if (typeof v !== "string" || v === "") throw invalidArgument(`${key} must be a non-empty string`);
  return v;
}

/** The Router verbs behind the ops, with the caches a resident process can keep between requests. */
export class Handlers {
  readonly #router: Router;
  readonly #facts: ServerFacts;
  /** How a write's failures name the router's options (ServeOptions.optionNames). */
  readonly #names: OptionNames | undefined;
  constructor(router: Router, facts: ServerFacts, names?: OptionNames) {
    this.#router = router;
    this.#facts = facts;
    this.#names = names;
  }

  /** Where a skill's SKILL.md is, absolute, when its source names one that is a regular file. */
  ref(s: InstalledSkill): SkillRef {
    const abs = isAbsolute(s.source) ? s.source : resolve(s.source);
    const path = basename(abs) === "SKILL.md" && isRegularFile(abs) ? abs : null;
    return { id: s.id, name: s.name, description: s.description, source: s.source, path };
  }

  /** The skill whole, as `Router.get` reads it (SKILL_NOT_FOUND when absent), with its keys and render length. */
  async getSkill(idOrName: string): Promise<SkillDocument> {
    const record = await this.#router.get(idOrName);
    const s = this.#router.installed(record.id);
    return { ...record, keys: s?.keys ?? 0, renderTokens: s?.renderTokens ?? 0 };
  }

  /** The winner as a host loads it: the route's `load` (its path resolved as `Router.get` resolves it), else the bank's record. */
  winner(s: InstalledSkill, load: SkillHandle | null): Winner {
    const ref = this.ref(s);
    return load ? { ...ref, path: load.path ?? ref.path, dir: load.dir, contentHash: load.contentHash } : { ...ref, dir: null, contentHash: "" };
  }

  /** route (the verdict as asked) or glance (the first stage's decision, no verdict). */
  async route(params: Record<string, unknown>, glanceOnly: boolean, signal: AbortSignal) {
    const task = params.task;
    if (!(typeof task === "string" || Array.isArray(task))) throw invalidArgument("task must be a string or an array of chat messages");
    await this.#withinBudget(task as string | { role?: unknown; content?: unknown }[], signal);
    const options: RouteOptions = { signal };
    for (const f of ROUTE_FLAGS) if (params[f] !== undefined) (options as Record<string, unknown>)[f] = params[f];
    if (glanceOnly) options.verdict = false;
    const res = await this.#router.route(task as string, options);
    // looked up now, not from a list taken earlier: a write under way commits skill by skill, and a route
    // may choose one it committed a moment ago
    const chosen = res.skill === null ? undefined : this.#router.installed(res.skill);
    const winner = chosen ? this.winner(chosen, res.load) : null;
    // a host is told to read the winner's path only while it still reads as a skill (a file swapped for
    // a FIFO, a device, an oversized or unparsable file is withheld; one edited into another valid skill
    // is not: its content hash, beside the path, tells a host that compares it)
    if (winner?.path && !(await readSource(locateSkill(chosen!.source, this.#router.bankDir)))) {
      return { ...res, load: res.load && { ...res.load, path: null, dir: null }, winner: { ...winner, path: null, dir: null } };
    }
    return { ...res, winner };
  }

  /** glance-top: the glance's ranking alone (`Router.glance`), its best `k` (default 20, at most 200). */
  async glanceTop(params: Record<string, unknown>, signal: AbortSignal): Promise<GlanceHit[]> {
    const task = params.task;
    if (!(typeof task === "string" || Array.isArray(task))) throw invalidArgument("task must be a string or an array of chat messages");
    const k = params.k ?? 20;
    if (!(typeof k === "number" && Number.isInteger(k) && k >= 1 && k <= MAX_GLANCE_TOP)) throw invalidArgument(`k must be an integer from 1 to ${MAX_GLANCE_TOP}`);
    if (params.live !== undefined && typeof params.live !== "boolean") throw invalidArgument("live must be a boolean");
    await this.#withinBudget(task as string | { role?: unknown; content?: unknown }[], signal);
    return this.#router.glance(task as string, { topK: k, signal, ...(params.live === undefined ? {} : { live: params.live }) });
  }

  /**
   * The per-request budget: a task over `maxTaskTokens` tokens is refused (CONTEXT_OVERFLOW) before
   * the router reads it, so one long task cannot hold the server (the router tokenizes on the
   * JavaScript thread: a 3.9 MB task held every other request for minutes). Counting is bounded and
   * runs off the JavaScript thread (Model.tokenizeAsync), so control requests and other routes go on
   * meanwhile: a task of fewer UTF-8 bytes than the budget is within it (a token is at least one
   * byte); a longer one has its first 8 × budget characters counted, and is refused when they
   * alone hold more than the budget (plus a margin for the cut); else the whole is counted.
   */
  async #withinBudget(task: string | readonly { role?: unknown; content?: unknown }[], signal: AbortSignal): Promise<void> {
    const max = this.#facts.maxTaskTokens;
    if (max <= 0) return;
    const text = taskText(task);
    if (Buffer.byteLength(text) < max) return;
    const model = this.#router.model;
    // a count cannot be stopped once started: the request answers ABORTED at once without waiting for
    // it, in the server's own words; the race's listener leaves the signal when the count settles
    const count = async (t: string) => {
      if (signal.aborted) throw requestCancelled();
      try {
        return (await untilAborted(model.tokenizeAsync(t, { special: false, addBos: false }), "the task's count", signal)).length;
      } catch (err) {
        throw err instanceof GavelError && err.code === "ABORTED" && signal.aborted ? requestCancelled() : err;
      }
    };
    const over = (what: string) => new GavelError(`the task is ${what} tokens, over this server's budget of ${max} tokens a request (gavel serve --max-task-tokens); send the part that matters`, "CONTEXT_OVERFLOW");
    const window = max * 8;
    if (text.length > window) {
      const head = await count(text.slice(0, window));
      if (head > max + 64) throw over(`more than ${head - 64}`); // a cut moves a token count by a few at most
    }
    const n = await count(text);
    if (n > max) throw over(String(n));
  }

  /** Runs one op (not cancel: the server handles it); a write reports its progress to `progress` when given. */
  async run(op: Exclude<Op, "cancel">, params: Record<string, unknown>, signal: AbortSignal, progress?: ProgressSink): Promise<unknown> {
    boolOption(params.progress, "progress", false); // a "true" that is not true never passes for one
    switch (op) {
      case "ping":
        return { pong: true, v: PROTOCOL_VERSION };
      case "status":
        return this.#status();
      case "route":
      case "glance":
        return this.route(params, op === "glance", signal);
      case "glance-top":
        return this.glanceTop(params, signal);
      case "get-skill":
        return this.getSkill(str(params, "skill"));
      case "list":
        // the ref a host loads by, and what `gavel list` prints (Router.list's fields)
        return this.#router.list().map((s): ListedSkill => ({ ...s, ...this.ref(s) }));
      case "install":
      case "sync":
        return (op === "install" ? installOp : syncOp)(this.#router, params, signal, progress, this.#names);
      case "uninstall":
        return { removed: await this.#router.uninstall(str(params, "skill"), { signal }) };
    }
  }

  #status() {
    const f = this.#facts;
    const stats = this.#router.stats();
    return {
      v: PROTOCOL_VERSION,
      pid: f.pid,
      bank: f.bank,
      model: f.model,
      listen: f.listen,
      skills: stats.skills,
      uptimeS: (Date.now() - f.startedAt) / 1000,
      inFlight: f.inFlight(),
      maxTaskTokens: f.maxTaskTokens,
      settings: routeSettings(config()),
    };
  }
}
