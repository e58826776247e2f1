/**
 * `gavel-router/langchain`: LangChain.js v1 agent middleware (`createMiddleware` from `langchain`).
 *
 * {@link gavelSkillMiddleware} wraps each model call of a `createAgent` agent: it routes the latest
 * user message (or the conversation) and adds the chosen skill's `<skill>` block to the system message
 * of that call; nothing when the ruling abstains. The agent's state is not changed, so the skill is not
 * written into the conversation's history.
 *
 * ```ts
 * import { createAgent } from "langchain";
 * import { gavelSkillMiddleware } from "gavel-router/langchain";
 * const agent = createAgent({ model, tools, middleware: [gavelSkillMiddleware(router)] });
 * ```
 *
 * {@link GavelSkillRetriever} is a `BaseRetriever` (`@langchain/core/retrievers`): a query in, the
 * skills that fit it out as `Document`s (the skill's instructions as `pageContent`, its name, path and
 * scores as `metadata`), best first; none when the ruling abstains.
 *
 * ```ts
 * const retriever = new GavelSkillRetriever(router, { k: 3 });
 * const docs = await retriever.invoke("Turn these photos into thumbnails");
 * ```
 *
 * {@link gavelSearchSkillsTool} and {@link gavelLoadSkillTool} are tools (`tool()` from
 * `@langchain/core/tools`, with JSON schemas: no zod needed) for a model that picks its own skill: `search_skills` takes the work as the
 * model states it and lists the skills that fit, best first; `load_skill` reads one. A request as
 * people phrase it routes far worse than the model's own statement of the work (docs/BENCHMARKS.md,
 * "Requests phrased as people talk"), so an agent whose users talk that way does better with these
 * than with the middleware.
 *
 * ```ts
 * const agent = createAgent({ model, tools: [gavelSearchSkillsTool(router), gavelLoadSkillTool(router)] });
 * ```
 *
 * @module
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { BaseRetriever, BaseRetrieverInput } from "@langchain/core/retrievers";
import type { Document } from "@langchain/core/documents";
import { loadPeer, loadPeerSync, need, peerError } from "./peer.js";
import { cutText, DEFAULT_MAX_CHARS, isEmptyLibrary, loadedSkill, maxCharsOf, SkillInjector, textOf, type LoadedSkill, type ChatTurn, type GavelAdapterOptions, type SkillRouterLike } from "./core.js";
import { adapterOptions } from "./options.js";
import type { RouteOptions } from "../route/types.js";
import { shortlistScore } from "../route/ruling.js";
import { MAX_SEARCH_K, LOAD_SKILL_DESCRIPTION, SEARCH_SKILLS_DESCRIPTION, SEARCH_TASK_DESCRIPTION, searchSkills, searchToolSetup, searchText, skillText, type SearchResult, type SkillSource } from "./skill-tools.js";
import { abortedError, boolOption, valueText } from "../util/validate.js";
import { invalidArgument, clip } from "../errors.js";

/** The signal of the retriever run in progress (LangChain does not pass it to _getRelevantDocuments). */
const runSignal = new AsyncLocalStorage<AbortSignal | undefined>();

declare const __GAVEL_CJS__: boolean | undefined;
const ENTRY = "gavel-router/langchain";
type LangchainModule = typeof import("langchain");
type RetrieversModule = typeof import("@langchain/core/retrievers");
type ToolsModule = typeof import("@langchain/core/tools");
type DocumentsModule = typeof import("@langchain/core/documents");
// The framework, loaded apart (./peer.ts): a package that is not installed, or that lacks the export
// named beside it, fails the first call that needs it with DEPENDENCY_MISSING, not this import (the
// middleware needs `langchain`; the retriever and the tools `@langchain/core` alone). tsup defines
// __GAVEL_CJS__ in the CommonJS build, which requires them instead.
const [langchain, retrievers, tools, documents] =
  typeof __GAVEL_CJS__ !== "undefined" && __GAVEL_CJS__
    ? ([
        loadPeerSync<LangchainModule>(ENTRY, "langchain", ["createMiddleware"], () => require("langchain")),
        loadPeerSync<RetrieversModule>(ENTRY, "@langchain/core/retrievers", ["BaseRetriever"], () => require("@langchain/core/retrievers")),
        loadPeerSync<ToolsModule>(ENTRY, "@langchain/core/tools", ["tool"], () => require("@langchain/core/tools")),
        loadPeerSync<DocumentsModule>(ENTRY, "@langchain/core/documents", ["Document"], () => require("@langchain/core/documents")),
      ] as const)
    : await Promise.all([
        loadPeer<LangchainModule>(ENTRY, "langchain", ["createMiddleware"], () => import("langchain")),
        loadPeer<RetrieversModule>(ENTRY, "@langchain/core/retrievers", ["BaseRetriever"], () => import("@langchain/core/retrievers")),
        loadPeer<ToolsModule>(ENTRY, "@langchain/core/tools", ["tool"], () => import("@langchain/core/tools")),
        loadPeer<DocumentsModule>(ENTRY, "@langchain/core/documents", ["Document"], () => import("@langchain/core/documents")),
      ]);

/**
 * `BaseRetriever`, or without `@langchain/core` (or one without it) a stand-in whose constructor throws
 * DEPENDENCY_MISSING, so that constructing a {@link GavelSkillRetriever} says what to install.
 */
const RetrieverBase: RetrieversModule["BaseRetriever"] =
  retrievers.module?.BaseRetriever ??
  (class {
    constructor() {
      throw peerError(retrievers, "GavelSkillRetriever");
    }
  } as unknown as RetrieversModule["BaseRetriever"]);

export { skillInstructions, type GavelAdapterOptions, type LoadedSkill, type RoutedSkill, type SkillRouterLike } from "./core.js";
export type { SearchHit, SearchResult, SkillSource } from "./skill-tools.js";

/** LangChain's message types as roles. */
const ROLE: Record<string, string> = { human: "user", ai: "assistant", system: "system", tool: "tool" };

/** A LangChain message as the middleware reads it (`role`: a ChatMessage's own). */
interface MessageLike {
  content: unknown;
  type?: string;
  getType?: () => string;
  role?: unknown;
}

/** The turns of LangChain messages, as text; a ChatMessage ("generic") has the role it names. */
function turnsOf(messages: readonly MessageLike[]): ChatTurn[] {
  return messages.map((m) => {
    const type = typeof m.getType === "function" ? m.getType() : (m.type ?? "");
    const role = type === "generic" && typeof m.role === "string" ? m.role : type;
    return { role: ROLE[role] ?? GENERIC_ROLE[role] ?? role, content: textOf(m.content) };
  });
}

/** A ChatMessage's role names as the adapters read roles. */
const GENERIC_ROLE: Record<string, string> = { user: "user", assistant: "assistant" };

/** Options of {@link gavelSkillMiddleware}. */
export interface GavelMiddlewareOptions extends GavelAdapterOptions {
  /** The middleware's name (default `GavelSkillMiddleware`); two in one agent need different names. */
  name?: string;
}

/**
 * Agent middleware that adds the routed skill to each model call's system message (`wrapModelCall`).
 * The steps of one turn (model → tools → model) share one route.
 */
export function gavelSkillMiddleware(router: SkillRouterLike, options: GavelMiddlewareOptions = {}) {
  const { createMiddleware } = need(langchain, "gavelSkillMiddleware");
  const injector = new SkillInjector(router, options, ["name"]);
  return createMiddleware({
    name: options.name ?? "GavelSkillMiddleware",
    wrapModelCall: async (request, handler) => {
      // the agent run's signal (its config's `signal`, as the runtime carries it) stops the route: ABORTED
      const routed = await injector.forTurns(turnsOf(request.messages as unknown as MessageLike[]), request.runtime?.signal);
      if (!routed || routed.instructions === null) return handler(request);
      const text = routed.instructions;
      // langchain ≥ 1.1 carries a SystemMessage (concat keeps its content blocks); 1.0 only the string
      if (request.systemMessage && typeof request.systemMessage.concat === "function") {
        const sep = request.systemMessage.text ? "\n\n" : ""; // blocks are read as one text: keep the skill apart
        return handler({ ...request, systemMessage: request.systemMessage.concat(sep + text) });
      }
      const base = request.systemPrompt ?? "";
      return handler({ ...request, systemPrompt: base ? `${base}\n\n${text}` : text });
    },
  });
}

/** Options of {@link GavelSkillRetriever}. */
export interface GavelRetrieverOptions extends BaseRetrieverInput {
  /** Most skills returned (default 3): the router's shortlist, best first. */
  k?: number;
  /** Abstention on (true) or off (false); default: the router's. When the ruling abstains, no documents. */
  abstain?: boolean;
  /** Run the verdict (default true); false ranks on the glance (and B) alone, faster. */
  verdict?: boolean;
  /** Most characters of a skill's body in `pageContent`, a non-negative integer or Infinity (default 20,000); `metadata.cut` says when it was cut. */
  maxChars?: number;
}

/** What a {@link GavelSkillRetriever} document's `metadata` holds. */
export interface GavelSkillMetadata {
  /** The skill's id in the bank. */
  id: string;
  name: string;
  description: string;
  /** The SKILL.md (or JSONL library), absolute; null when not found on this machine. */
  path: string | null;
  /** The skill's folder (its relative paths start there); null unless a folder skill was found. */
  dir: string | null;
  source: string;
  allowedTools: string[] | null;
  /** 1 for the best. */
  rank: number;
  /** True for the router's choice (rank 1 when it chose). */
  chosen: boolean;
  /** The route's score: the re-ranker's R where it ranked the shortlist (the embedded default's projections), else the ruling's S; and the glance's g (higher is better). */
  score: number;
  g: number;
  /** The verdict's log-odds, when it ran; else null. */
  V: number | null;
  /** True when `pageContent` was cut at `maxChars`. */
  cut: boolean;
}

/** The keys of {@link GavelRetrieverOptions}: the retriever's own and `BaseRetrieverInput`'s. */
const RETRIEVER_KEYS: Record<keyof GavelRetrieverOptions, true> = { k: true, abstain: true, verdict: true, maxChars: true, callbacks: true, tags: true, metadata: true, verbose: true };

/** The retriever's router and options checked, before `BaseRetriever` reads them: INVALID_ARGUMENT otherwise. */
function retrieverOptions(router: SkillRouterLike, options: unknown): GavelRetrieverOptions {
  if (!router || typeof router.route !== "function" || typeof router.get !== "function") throw invalidArgument("GavelSkillRetriever needs a Router (or an object with route() and get())");
  const o = adapterOptions(options, "GavelSkillRetriever options", RETRIEVER_KEYS);
  if (o.k !== undefined && !(Number.isInteger(o.k) && (o.k as number) >= 1)) throw invalidArgument(`k must be a positive integer, got ${valueText(o.k)}`);
  for (const key of ["abstain", "verdict"] as const) if (o[key] !== undefined) boolOption(o[key], key, false);
  maxCharsOf(o.maxChars);
  return o as GavelRetrieverOptions;
}

/**
 * A LangChain retriever over the installed skills: `invoke(query)` routes the query and returns the
 * ruled shortlist's best `k` skills as Documents (body as `pageContent`, {@link GavelSkillMetadata}
 * as `metadata`); an empty list when the ruling abstains (no skill fits confidently).
 */
export class GavelSkillRetriever extends RetrieverBase<GavelSkillMetadata> {
  lc_namespace = ["gavel_router", "retrievers"];
  static lc_name(): string {
    return "GavelSkillRetriever";
  }
  readonly #router: SkillRouterLike;
  readonly #k: number;
  readonly #maxChars: number;
  readonly #route: RouteOptions;

  constructor(router: SkillRouterLike, options: GavelRetrieverOptions = {}) {
    const { k = 3, abstain, verdict, maxChars = DEFAULT_MAX_CHARS, ...fields } = retrieverOptions(router, options);
    super(fields);
    this.#router = router;
    this.#k = k;
    this.#maxChars = maxChars;
    this.#route = { ...(abstain !== undefined ? { abstain } : {}), ...(verdict !== undefined ? { verdict } : {}) };
  }

  /** As BaseRetriever's, with the run's `signal` (config.signal) passed on to the route. */
  override invoke(input: string, options?: Parameters<BaseRetriever["invoke"]>[1]): Promise<Document<GavelSkillMetadata>[]> {
    const signal = options && typeof options === "object" ? options.signal : undefined;
    return runSignal.run(signal, () => super.invoke(input, options) as Promise<Document<GavelSkillMetadata>[]>);
  }

  async _getRelevantDocuments(query: string): Promise<Document<GavelSkillMetadata>[]> {
    if (typeof query !== "string") throw invalidArgument(`the retriever's query must be a string, got ${valueText(query)}`);
    const signal = runSignal.getStore();
    if (signal?.aborted) throw abortedError("GavelRetriever", signal);
    if (!query.trim()) return [];
    let result: Awaited<ReturnType<SkillRouterLike["route"]>>;
    try {
      result = await this.#router.route(query, signal ? { ...this.#route, signal } : this.#route);
    } catch (err) {
      if (isEmptyLibrary(err)) return []; // no skill installed (or none routable): none fits
      throw err;
    }
    if (result.abstained) return [];
    const picked = result.shortlist.slice(0, this.#k);
    return Promise.all(
      picked.map(async (c, i) => {
        const skill = await this.#router.get(c.skill);
        const { text, cut } = cutText(skill.body, this.#maxChars);
        const metadata: GavelSkillMetadata = {
          id: skill.id,
          name: skill.name,
          description: skill.description,
          path: skill.path,
          dir: skill.dir,
          source: skill.source,
          allowedTools: skill.allowedTools,
          rank: i + 1,
          chosen: result.skill === c.skill,
          score: shortlistScore(c),
          g: c.g,
          V: Number.isFinite(c.V) ? c.V : null,
          cut,
        };
        return new (need(documents, "GavelSkillRetriever").Document)<GavelSkillMetadata>({ pageContent: text, metadata, id: skill.id });
      }),
    );
  }
}

/** Options of {@link gavelSearchSkillsTool}. */
export interface GavelSearchSkillsOptions {
  /** The tool's name (default `search_skills`). */
  name?: string;
  /** Skills listed when the model does not say (default 5); the model may ask for 1-50. */
  k?: number;
  /** The tool's description, as the model reads it (default: it asks for the work stated concretely). */
  description?: string;
  /** As `RouteOptions.libraryCut`: it decides `abstained`, not the skills listed (default: the router's). */
  libraryCut?: boolean;
}

/** The keys of {@link GavelSearchSkillsOptions}. */
const SEARCH_KEYS: Record<keyof GavelSearchSkillsOptions, true> = { name: true, k: true, description: true, libraryCut: true };

/**
 * A `search_skills` tool: `{ task, k? }` → the installed skills that fit the task, best first, one line
 * each with its id, score and a reason, as `gavel mcp`'s `search_skills` answers; the
 * {@link SearchResult} is the tool message's `artifact`. The router needs `route`, `glance`, `list`
 * and `get`: a `Router` has them. The run's `signal` stops the route.
 */
export function gavelSearchSkillsTool(router: SkillSource, options: GavelSearchSkillsOptions = {}) {
  const { tool } = need(tools, "gavelSearchSkillsTool");
  const { k, search } = searchToolSetup(router, options, "gavelSearchSkillsTool", SEARCH_KEYS);
  return tool(
    async (input: unknown, config): Promise<[string, SearchResult]> => {
      const { task, k: asked } = input as { task: string; k?: number }; // checked by the schema
      const result = await searchSkills(router, task, asked ?? k, config?.signal, search);
      return [searchText(result), result];
    },
    {
      name: options.name ?? "search_skills",
      description: options.description ?? SEARCH_SKILLS_DESCRIPTION,
      schema: {
        type: "object",
        properties: {
          task: { type: "string", minLength: 1, description: SEARCH_TASK_DESCRIPTION },
          k: { type: "integer", minimum: 1, maximum: MAX_SEARCH_K, description: `how many skills to list (default ${k})` },
        },
        required: ["task"],
        additionalProperties: false,
      },
      responseFormat: "content_and_artifact",
    },
  );
}

/** Options of {@link gavelLoadSkillTool}. */
export interface GavelLoadSkillOptions {
  /** The tool's name (default `load_skill`). */
  name?: string;
  /** Most characters of the body returned, a non-negative integer or Infinity (default: all of it). */
  maxChars?: number;
  /** The tool's description, as the model reads it. */
  description?: string;
}

/** The keys of {@link GavelLoadSkillOptions}. */
const LOAD_KEYS: Record<keyof GavelLoadSkillOptions, true> = { name: true, maxChars: true, description: true };

/**
 * A `load_skill` tool: `{ skill }` (an id or name) → the installed skill as text (where it lives, its
 * allowed tools, its instructions), with the {@link LoadedSkill} as the tool message's `artifact`; a
 * line saying so when no installed skill has that name, or when several share it (naming their ids).
 */
export function gavelLoadSkillTool(router: SkillRouterLike, options: GavelLoadSkillOptions = {}) {
  const { tool } = need(tools, "gavelLoadSkillTool");
  const injector = new SkillInjector(router);
  adapterOptions(options, "gavelLoadSkillTool options", LOAD_KEYS);
  const maxChars = maxCharsOf(options.maxChars, Infinity);
  return tool(
    async (input: unknown): Promise<[string, LoadedSkill | null]> => {
      const { skill } = input as { skill: string }; // checked by the schema
      const record = await injector.lookup(skill);
      if (record && "error" in record) return [`${record.error}.`, null];
      if (!record) return [`No installed skill has the id or name "${clip(skill)}"; search_skills lists them.`, null];
      const loaded = loadedSkill(record, maxChars);
      const text = skillText({ ...record, body: loaded.body });
      return [loaded.cut ? `${text}\n\n[cut at ${loaded.body.length} of ${record.body.length} characters${record.path ? `; the whole skill is in ${record.path}` : ""}]` : text, loaded];
    },
    {
      name: options.name ?? "load_skill",
      description: options.description ?? LOAD_SKILL_DESCRIPTION,
      schema: {
        type: "object",
        properties: { skill: { type: "string", minLength: 1, description: "the skill's id or name, as search_skills lists it" } },
        required: ["skill"],
        additionalProperties: false,
      },
      responseFormat: "content_and_artifact",
    },
  );
}
