/**
 * `gavel-router/mastra`: a Mastra input processor (`Processor` with `processInput`).
 *
 * {@link gavelSkillProcessor} routes the latest user message of an agent call (or the conversation)
 * and adds the chosen skill's `<skill>` block as a system message for that call; nothing when the
 * ruling abstains. Mastra runs `processInput` once per `generate()` / `stream()`.
 *
 * ```ts
 * import { Agent } from "@mastra/core/agent";
 * import { gavelSkillProcessor } from "gavel-router/mastra";
 * const agent = new Agent({ name, instructions, model, inputProcessors: [gavelSkillProcessor(router)] });
 * ```
 *
 * {@link gavelSkillTools} gives two tools (`createTool` from `@mastra/core/tools`) for a model that
 * picks its own skill: `search_skills` takes the work as the model states it and lists the skills that
 * fit, best first; `load_skill` reads one. A request as people phrase it routes far worse than the
 * model's own statement of the work (docs/BENCHMARKS.md, "Requests phrased as people talk").
 *
 * ```ts
 * const agent = new Agent({ name, instructions, model, tools: gavelSkillTools(router) });
 * ```
 *
 * @module
 */
import type { ProcessInputArgs, ProcessInputResult, Processor } from "@mastra/core/processors";
import { loadPeer, loadPeerSync, need } from "./peer.js";
import { loadedSkill, maxCharsOf, SkillInjector, textOf, type LoadedSkill, type ChatTurn, type GavelAdapterOptions, type SkillRouterLike } from "./core.js";
import { LOAD_SKILL_DESCRIPTION, MAX_SEARCH_K, SEARCH_SKILLS_DESCRIPTION, SEARCH_TASK_DESCRIPTION, searchSkills, searchToolSetup, type SkillSource } from "./skill-tools.js";
import { clip } from "../errors.js";

export { skillInstructions, type GavelAdapterOptions, type LoadedSkill, type RoutedSkill, type SkillRouterLike } from "./core.js";
export type { SearchHit, SearchResult, SkillSource } from "./skill-tools.js";

declare const __GAVEL_CJS__: boolean | undefined;
const ENTRY = "gavel-router/mastra";
// The framework, loaded apart (./peer.ts): a package that is not installed, or that lacks the export
// named beside it, fails the first call that needs it (gavelSkillTools: `@mastra/core` and `zod`)
// with DEPENDENCY_MISSING, not this import; the processor needs neither. tsup defines __GAVEL_CJS__ in the CommonJS build, which requires them instead.
const [mastraTools, zod] =
  typeof __GAVEL_CJS__ !== "undefined" && __GAVEL_CJS__
    ? ([
        loadPeerSync<typeof import("@mastra/core/tools")>(ENTRY, "@mastra/core/tools", ["createTool"], () => require("@mastra/core/tools")),
        loadPeerSync<typeof import("zod")>(ENTRY, "zod", ["z"], () => require("zod")),
      ] as const)
    : await Promise.all([
        loadPeer<typeof import("@mastra/core/tools")>(ENTRY, "@mastra/core/tools", ["createTool"], () => import("@mastra/core/tools")),
        loadPeer<typeof import("zod")>(ENTRY, "zod", ["z"], () => import("zod")),
      ]);

/** The text of a Mastra message's content: a string, `{ parts }` (format 2) or `{ content }`. */
function mastraText(content: unknown): string {
  if (typeof content === "string" || Array.isArray(content)) return textOf(content);
  if (content && typeof content === "object") {
    const c = content as { parts?: unknown; content?: unknown };
    const fromParts = Array.isArray(c.parts) ? textOf(c.parts) : "";
    return fromParts !== "" ? fromParts : typeof c.content === "string" ? c.content : "";
  }
  return "";
}

/** The turns of Mastra messages, as text. */
function turnsOf(messages: ReadonlyArray<{ role: string; content: unknown }>): ChatTurn[] {
  return messages.map((m) => ({ role: m.role, content: mastraText(m.content) }));
}

/** Options of {@link gavelSkillProcessor}. */
export interface GavelProcessorOptions extends GavelAdapterOptions {
  /** The processor's id (default `gavel-skill`). */
  id?: string;
}

/** The input processor {@link gavelSkillProcessor} returns. */
export class GavelSkillProcessor implements Processor<string> {
  readonly id: string;
  readonly name = "gavel-router skill";
  readonly description = "Adds the SKILL.md that gavel-router routes the user's message to as a system message.";
  readonly #injector: SkillInjector;

  constructor(router: SkillRouterLike, options: GavelProcessorOptions = {}) {
    this.#injector = new SkillInjector(router, options, ["id"]);
    this.id = options.id ?? "gavel-skill";
  }

  async processInput(args: ProcessInputArgs): Promise<ProcessInputResult> {
    // the agent call's abortSignal (Mastra passes it to processors) stops the route: ABORTED
    const routed = await this.#injector.forTurns(turnsOf(args.messages as ReadonlyArray<{ role: string; content: unknown }>), args.abortSignal);
    if (!routed || routed.instructions === null) return args.messages;
    return { messages: args.messages, systemMessages: [...args.systemMessages, { role: "system", content: routed.instructions }] };
  }
}

/** A Mastra input processor that adds the routed skill (see {@link GavelSkillProcessor}). */
export function gavelSkillProcessor(router: SkillRouterLike, options: GavelProcessorOptions = {}): GavelSkillProcessor {
  return new GavelSkillProcessor(router, options);
}

/** Options of {@link gavelSkillTools}. */
export interface GavelSkillToolsOptions {
  /** Skills `search_skills` lists when the model does not say (default 5); the model may ask for 1-50. */
  k?: number;
  /** As `RouteOptions.libraryCut`: it decides `abstained`, not the skills listed (default: the router's). */
  libraryCut?: boolean;
  /** Most characters of a skill's body `load_skill` returns, a non-negative integer or Infinity (default: all of it). */
  maxChars?: number;
}

/** The keys of {@link GavelSkillToolsOptions}. */
const SKILL_TOOLS_KEYS: Record<keyof GavelSkillToolsOptions, true> = { k: true, libraryCut: true, maxChars: true };

/**
 * Two tools for an agent's `tools`: `search_skills` (`{ task, k? }` → the installed skills that fit
 * the task, best first, with scores, one-line reasons and the router's choice; as `gavel mcp`'s) and
 * `load_skill` (`{ skill }` → the skill's body, front matter and path, or `{ error }` when no installed
 * skill has that id or name, or several share the name: the error lists their ids). The router needs `route`, `glance`, `list` and `get`: a `Router` has
 * them. The call's `abortSignal` stops a search.
 */
export function gavelSkillTools(router: SkillSource, options: GavelSkillToolsOptions = {}) {
  const { createTool } = need(mastraTools, "gavelSkillTools");
  const { z } = need(zod, "gavelSkillTools");
  const { k, search } = searchToolSetup(router, options, "gavelSkillTools", SKILL_TOOLS_KEYS);
  const maxChars = maxCharsOf(options.maxChars, Infinity);
  const injector = new SkillInjector(router);
  const search_skills = createTool({
    id: "search_skills",
    description: SEARCH_SKILLS_DESCRIPTION,
    inputSchema: z.object({
      task: z.string().min(1).describe(SEARCH_TASK_DESCRIPTION),
      k: z.number().int().min(1).max(MAX_SEARCH_K).optional().describe(`how many skills to list (default ${k})`),
    }),
    execute: (input, context) => searchSkills(router, input.task, input.k ?? k, context?.abortSignal, search),
  });
  const load_skill = createTool({
    id: "load_skill",
    description: LOAD_SKILL_DESCRIPTION,
    inputSchema: z.object({ skill: z.string().min(1).describe("the skill's id or name, as search_skills lists it") }),
    execute: async (input): Promise<LoadedSkill | { error: string }> => {
      const record = await injector.lookup(input.skill);
      if (record && "error" in record) return record;
      return record ? loadedSkill(record, maxChars) : { error: `no installed skill has the id or name "${clip(input.skill)}"` };
    },
  });
  return { search_skills, load_skill };
}
