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
 * @module
 */
import { createMiddleware } from "langchain";
import { SkillInjector, textOf, type ChatTurn, type GavelAdapterOptions, type SkillRouterLike } from "./core.js";

export { skillInstructions, type GavelAdapterOptions, type RoutedSkill, type SkillRouterLike } from "./core.js";

/** LangChain's message types as roles. */
const ROLE: Record<string, string> = { human: "user", ai: "assistant", system: "system", tool: "tool" };

/** A LangChain message as the middleware reads it. */
interface MessageLike {
  content: unknown;
  type?: string;
  getType?: () => string;
}

/** The turns of LangChain messages, as text. */
function turnsOf(messages: readonly MessageLike[]): ChatTurn[] {
  return messages.map((m) => {
    const type = typeof m.getType === "function" ? m.getType() : (m.type ?? "");
    return { role: ROLE[type] ?? type, content: textOf(m.content) };
  });
}

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
  const injector = new SkillInjector(router, options);
  return createMiddleware({
    name: options.name ?? "GavelSkillMiddleware",
    wrapModelCall: async (request, handler) => {
      const routed = await injector.forTurns(turnsOf(request.messages as unknown as MessageLike[]));
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
