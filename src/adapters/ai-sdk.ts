/**
 * `gavel-router/ai-sdk`: the Vercel AI SDK (`ai` 5, 6 or 7) adapter.
 *
 * - {@link gavelPrepareStep}: a `prepareStep` that routes the step's latest user message (or the whole
 *   conversation) and adds the chosen skill to the system prompt; when the ruling abstains the step
 *   runs with the call's own system prompt.
 * - {@link gavelLoadSkillTool}: a `loadSkill` tool (`tool()` with a zod input schema) that returns an
 *   installed skill's body, metadata and path by name.
 * - {@link gavelSearchSkillsTool}: a `searchSkills` tool: the model states the work, the router lists
 *   the skills that fit it, best first. For agents whose users talk the way people do, the model's own
 *   statement of the work routes far better than the message as typed (docs/BENCHMARKS.md, "Requests
 *   phrased as people talk"); {@link gavelSkillTools} gives both tools.
 *
 * ```ts
 * import { generateText } from "ai";
 * import { gavelPrepareStep, gavelLoadSkillTool } from "gavel-router/ai-sdk";
 * await generateText({ model, system, prompt, prepareStep: gavelPrepareStep(router, { system }),
 *   tools: { loadSkill: gavelLoadSkillTool(router) } });
 * ```
 *
 * @module
 */
import type { Tool } from "ai";
import { loadPeer, loadPeerSync, need } from "./peer.js";
import { loadedSkill, maxCharsOf, SkillInjector, textOf, type ChatTurn, type GavelAdapterOptions, type LoadedSkill, type SkillRouterLike } from "./core.js";
import { adapterOptions } from "./options.js";
import { optionsObject } from "../util/validate.js";
import { LOAD_SKILL_DESCRIPTION, MAX_SEARCH_K, SEARCH_SKILLS_DESCRIPTION, SEARCH_TASK_DESCRIPTION, searchSkills, searchToolSetup, type SearchResult, type SkillSource } from "./skill-tools.js";
import { clip } from "../errors.js";

export { skillInstructions, type GavelAdapterOptions, type LoadedSkill, type RoutedSkill, type SkillRouterLike } from "./core.js";
export type { SearchHit, SearchResult, SkillSource } from "./skill-tools.js";

declare const __GAVEL_CJS__: boolean | undefined;
const ENTRY = "gavel-router/ai-sdk";
// The framework, loaded apart (./peer.ts): a package that is not installed, or that lacks the export
// named beside it, fails the first call that needs it (the tools: `ai` and `zod`) with
// DEPENDENCY_MISSING, not this import; gavelPrepareStep needs neither. tsup defines __GAVEL_CJS__ in the CommonJS build, which requires them instead.
const [ai, zod] =
  typeof __GAVEL_CJS__ !== "undefined" && __GAVEL_CJS__
    ? ([
        loadPeerSync<typeof import("ai")>(ENTRY, "ai", ["tool"], () => require("ai")),
        loadPeerSync<typeof import("zod")>(ENTRY, "zod", ["z"], () => require("zod")),
      ] as const)
    : await Promise.all([
        loadPeer<typeof import("ai")>(ENTRY, "ai", ["tool"], () => import("ai")),
        loadPeer<typeof import("zod")>(ENTRY, "zod", ["z"], () => import("zod")),
      ]);

/** `tool` and `z`, or DEPENDENCY_MISSING naming what `what` needs. */
function framework(what: string): { tool: (typeof import("ai"))["tool"]; z: (typeof import("zod"))["z"] } {
  return { tool: need(ai, what).tool, z: need(zod, what).z };
}

/** A system message as the AI SDK writes one. */
export interface SystemMessageLike {
  role: "system";
  content: string;
  [key: string]: unknown;
}

/** What {@link gavelPrepareStep}'s function reads of `prepareStep`'s argument (all AI SDK versions have `messages`). */
export interface PrepareStepInput {
  messages: ReadonlyArray<{ role: string; content: unknown }>;
  stepNumber?: number;
  /** AI SDK 7: the call's own instructions (the skill is added to these, never to a previous step's). */
  initialInstructions?: string | SystemMessageLike | SystemMessageLike[];
}

/** What it returns: `instructions` on AI SDK 7, `system` before (where `instructions` does not exist). */
export interface PrepareStepOutput {
  system?: string;
  instructions?: string | SystemMessageLike[];
}

/** Options of {@link gavelPrepareStep}. */
export interface GavelPrepareStepOptions extends GavelAdapterOptions {
  /**
   * The call's system prompt, to which the skill is appended. AI SDK 5 and 6 do not pass it to
   * `prepareStep` (and a returned `system` replaces it), so give the same text as `generateText`'s
   * `system` there; AI SDK 7 passes it as `initialInstructions`, which wins.
   */
  system?: string;
}

/** The turns of AI SDK model messages, as text. */
function turnsOf(messages: PrepareStepInput["messages"]): ChatTurn[] {
  return messages.map((m) => ({ role: m.role, content: textOf(m.content) }));
}

/** The base instructions with the skill's text added. */
function withSkill(base: PrepareStepInput["initialInstructions"], text: string): string | SystemMessageLike[] {
  if (base === undefined || base === "") return text;
  if (typeof base === "string") return `${base}\n\n${text}`;
  return [...(Array.isArray(base) ? base : [base]), { role: "system", content: text }];
}

/** The call's own instructions as a step returns them (none: no system message). */
function asInstructions(base: PrepareStepInput["initialInstructions"]): string | SystemMessageLike[] {
  if (base === undefined) return [];
  return typeof base === "string" || Array.isArray(base) ? base : [base];
}

/**
 * A `prepareStep` for `generateText` / `streamText` / `ToolLoopAgent`: routes the step's latest user
 * message (once per distinct message: the tool-call steps that follow reuse the route) and adds the
 * chosen skill's `<skill>` block to the system prompt. When the ruling abstains the step runs as it
 * would have: on AI SDK 5 and 6 it returns nothing; on AI SDK 7, which carries a step's instructions
 * over to the next, it returns the call's own instructions, so a skill an earlier step added is gone.
 */
export function gavelPrepareStep(router: SkillRouterLike, options: GavelPrepareStepOptions = {}): (step: PrepareStepInput) => Promise<PrepareStepOutput | undefined> {
  const injector = new SkillInjector(router, options, ["system"]);
  return async (step) => {
    const routed = await injector.forTurns(turnsOf(step.messages));
    const skill = routed && routed.instructions !== null ? routed.instructions : null;
    if ("initialInstructions" in step) {
      // AI SDK 7 carries a step's instructions over to the next step that returns none: a step with
      // nothing to add returns the call's own (no system message at all for none), so an earlier
      // step's skill never stays in the prompt
      const base = step.initialInstructions ?? options.system;
      return { instructions: skill === null ? asInstructions(base) : withSkill(base, skill) };
    }
    if (skill === null) return undefined;
    const system = withSkill(options.system, skill);
    return { system: typeof system === "string" ? system : system.map((m) => m.content).join("\n\n") };
  };
}

/** Options of {@link gavelLoadSkillTool}. */
export interface GavelLoadSkillOptions {
  /** Most characters of the body returned, a non-negative integer or Infinity (default: all of it). */
  maxChars?: number;
  /** The tool's description, as the model reads it. */
  description?: string;
}

/** The keys of {@link GavelLoadSkillOptions}. */
const LOAD_KEYS: Record<keyof GavelLoadSkillOptions, true> = { maxChars: true, description: true };

/** What the `loadSkill` tool returns: the skill, or an error the model can read. */
export type LoadSkillResult = LoadedSkill | { error: string };

/**
 * A `loadSkill` tool: `{ name }` → the installed skill (body, front matter, allowed-tools, path and
 * folder), or `{ error }` when no installed skill has that name or several share it (naming their ids).
 */
export function gavelLoadSkillTool(router: SkillRouterLike, options: GavelLoadSkillOptions = {}): Tool<{ name: string }, LoadSkillResult> {
  const { tool, z } = framework("gavelLoadSkillTool");
  const injector = new SkillInjector(router);
  const o = adapterOptions(options, "gavelLoadSkillTool options", LOAD_KEYS) as GavelLoadSkillOptions;
  const maxChars = maxCharsOf(o.maxChars, Infinity);
  return tool({
    description: o.description ?? LOAD_SKILL_DESCRIPTION,
    inputSchema: z.object({ name: z.string().min(1).describe("the skill's name (or id)") }),
    execute: async ({ name }): Promise<LoadSkillResult> => {
      const skill = await injector.lookup(name);
      if (skill && "error" in skill) return skill;
      return skill ? loadedSkill(skill, maxChars) : { error: `no installed skill named "${clip(name)}"` };
    },
  });
}

/** Both at once: `{ prepareStep, tools: { loadSkill } }`, to spread into a `generateText` call. */
export function gavelSkills(
  router: SkillRouterLike,
  options: GavelPrepareStepOptions & { loadSkill?: GavelLoadSkillOptions } = {},
): { prepareStep: ReturnType<typeof gavelPrepareStep>; tools: { loadSkill: Tool<{ name: string }, LoadSkillResult> } } {
  const { loadSkill, ...step } = optionsObject(options, "gavelSkills options") as GavelPrepareStepOptions & { loadSkill?: GavelLoadSkillOptions };
  optionsObject(loadSkill, "loadSkill (gavelLoadSkillTool options)");
  return { prepareStep: gavelPrepareStep(router, step), tools: { loadSkill: gavelLoadSkillTool(router, loadSkill) } };
}

/** Options of {@link gavelSearchSkillsTool}. */
export interface GavelSearchSkillsOptions {
  /** Skills listed when the model does not say (default 5); the model may ask for 1-50. */
  k?: number;
  /** The tool's description, as the model reads it (default: it asks for the work stated concretely). */
  description?: string;
  /** As `RouteOptions.libraryCut`: it decides `abstained`, not the skills listed (default: the router's). */
  libraryCut?: boolean;
}

/** The keys of {@link GavelSearchSkillsOptions}. */
const SEARCH_KEYS: Record<keyof GavelSearchSkillsOptions, true> = { k: true, description: true, libraryCut: true };

/**
 * A `searchSkills` tool: `{ task, k? }` → the installed skills that fit the task, best first, with
 * scores and a one-line reason each, and the router's choice (`chosen`, null when it abstained); as
 * `gavel mcp`'s `search_skills`. The task is the model's own statement of the work, which routes far
 * better than a request as people phrase it. The router needs `route`, `glance`, `list` and `get`: a
 * `Router` has them. The call's `abortSignal` stops the route; a failed search throws, and the AI SDK
 * hands the model the error.
 */
export function gavelSearchSkillsTool(router: SkillSource, options: GavelSearchSkillsOptions = {}): Tool<{ task: string; k?: number }, SearchResult> {
  const { tool, z } = framework("gavelSearchSkillsTool");
  const { k, search } = searchToolSetup(router, options, "gavelSearchSkillsTool", SEARCH_KEYS);
  return tool({
    description: options.description ?? SEARCH_SKILLS_DESCRIPTION,
    inputSchema: z.object({
      task: z.string().min(1).describe(SEARCH_TASK_DESCRIPTION),
      k: z.number().int().min(1).max(MAX_SEARCH_K).optional().describe(`how many skills to list (default ${k})`),
    }),
    execute: ({ task, k: asked }, { abortSignal }): Promise<SearchResult> => searchSkills(router, task, asked ?? k, abortSignal, search),
  });
}

/** Options of {@link gavelSkillTools}: each tool's own. */
export interface GavelSkillToolsOptions {
  /** The `searchSkills` tool's options. */
  search?: GavelSearchSkillsOptions;
  /** The `loadSkill` tool's options. */
  loadSkill?: GavelLoadSkillOptions;
}

/** The keys of {@link GavelSkillToolsOptions}. */
const SKILL_TOOLS_KEYS: Record<keyof GavelSkillToolsOptions, true> = { search: true, loadSkill: true };

/**
 * The two tools for a model that picks its own skills: `{ searchSkills, loadSkill }`, to spread into a
 * `generateText` call's `tools` (no `prepareStep`: nothing is routed unless the model asks).
 */
export function gavelSkillTools(
  router: SkillSource,
  options: GavelSkillToolsOptions = {},
): { searchSkills: Tool<{ task: string; k?: number }, SearchResult>; loadSkill: Tool<{ name: string }, LoadSkillResult> } {
  const o = adapterOptions(options, "gavelSkillTools options", SKILL_TOOLS_KEYS, { search: SEARCH_KEYS, loadSkill: LOAD_KEYS }) as GavelSkillToolsOptions;
  optionsObject(o.search, "search (gavelSearchSkillsTool options)");
  optionsObject(o.loadSkill, "loadSkill (gavelLoadSkillTool options)");
  return { searchSkills: gavelSearchSkillsTool(router, o.search), loadSkill: gavelLoadSkillTool(router, o.loadSkill) };
}
