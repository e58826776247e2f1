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
 * @module
 */
import type { ProcessInputArgs, ProcessInputResult, Processor } from "@mastra/core/processors";
import { SkillInjector, textOf, type ChatTurn, type GavelAdapterOptions, type SkillRouterLike } from "./core.js";

export { skillInstructions, type GavelAdapterOptions, type RoutedSkill, type SkillRouterLike } from "./core.js";

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
    this.id = options.id ?? "gavel-skill";
    this.#injector = new SkillInjector(router, options);
  }

  async processInput(args: ProcessInputArgs): Promise<ProcessInputResult> {
    const routed = await this.#injector.forTurns(turnsOf(args.messages as ReadonlyArray<{ role: string; content: unknown }>));
    if (!routed || routed.instructions === null) return args.messages;
    return { messages: args.messages, systemMessages: [...args.systemMessages, { role: "system", content: routed.instructions }] };
  }
}

/** A Mastra input processor that adds the routed skill (see {@link GavelSkillProcessor}). */
export function gavelSkillProcessor(router: SkillRouterLike, options: GavelProcessorOptions = {}): GavelSkillProcessor {
  return new GavelSkillProcessor(router, options);
}
