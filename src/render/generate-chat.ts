/**
 * Chat messages through the model's chat template into {@link Model.generate}: the template (or the
 * ChatML fallback for a model without one) renders the messages with the assistant turn's opening,
 * the rendered scaffolding's control tokens are parsed as such, and BOS is added as the vocabulary
 * asks.
 *
 * @module
 */
import { invalidArgument } from "../errors.js";
import type { Model } from "../model/Model.js";
import type { GenerateChunk, GenerateOptions, GenerateResult } from "../model/generate.js";
import { optionsObject } from "../util/validate.js";
import { renderChat, renderOptions, type ChatMessage, type RenderChatOptions } from "./template.js";

/** Options of {@link generateChat}: generation options plus the template's (enable_thinking, tools, …). */
export interface GenerateChatOptions extends Omit<GenerateOptions, "special"> {
  /** The template's variables, an object: {@link RenderChatOptions} without `addGenerationPrompt` (always true here). */
  template?: Omit<RenderChatOptions, "addGenerationPrompt">;
}

/**
 * Streams the assistant's reply to `messages` (see {@link Model.generate} for the chunks and result).
 * Message content is rendered into the template as text; like the router's live renders, the whole
 * render is tokenized with control tokens parsed, so keep untrusted text free of the template's markers.
 *
 * @throws GavelError INVALID_ARGUMENT for messages that are not `{ role, content }` strings, and every
 *   error of {@link Model.generate}
 */
export function generateChat(model: Model, messages: readonly ChatMessage[], options: GenerateChatOptions = {}): AsyncGenerator<GenerateChunk, GenerateResult, undefined> {
  if (!Array.isArray(messages) || messages.length === 0) throw invalidArgument("messages must be a non-empty array");
  messages.forEach((m, i) => {
    if (typeof m !== "object" || m === null || typeof m.role !== "string" || typeof m.content !== "string") {
      throw invalidArgument(`messages[${i}] must be { role: string, content: string }`);
    }
  });
  const { template: t, ...gen } = optionsObject(options, "generateChat options"); // the rest are Model.generate's, checked there
  const template = renderOptions(t, "template", { enableThinking: true, tools: true, extra: true });
  const text = renderChat(model.info.chatTemplate ?? null, messages, { ...template, addGenerationPrompt: true });
  const tokens = model.tokenize(text, { special: true, addBos: model.info.addBos });
  return model.generate(tokens, gen);
}
