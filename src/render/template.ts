import { Template } from "@huggingface/jinja";
import { GavelError, invalidArgument } from "../errors.js";
import { boolOption, optionsObject, stringOption } from "../util/validate.js";

/** One chat message as chat templates read it; extra fields (tool_calls, reasoning_content, …) pass through. */
export interface ChatMessage {
  role: string;
  content: string;
  [key: string]: unknown;
}

/** Options of {@link ChatTemplate.render} and {@link renderChat}. */
export interface RenderChatOptions {
  /**
   * Append the assistant turn's opening (`add_generation_prompt`). Default false, as in Hugging Face's
   * `apply_chat_template`: a live context rendered for reading ends where the harness left it.
   */
  addGenerationPrompt?: boolean;
  /**
   * `enable_thinking` for templates with a reasoning switch (Qwen3). Left undefined it is not passed at
   * all, which such templates read as thinking mode; the GAVEL renders always pass false.
   */
  enableThinking?: boolean;
  /** Tool definitions for templates that render them (`tools`), an array. */
  tools?: unknown[];
  /** Any further template variables, an object (they do not override messages, bos_token, eos_token). */
  extra?: Record<string, unknown>;
}

/** Where the template and special-token strings come from. */
export interface ChatTemplateOptions {
  /**
   * The model's `tokenizer.chat_template` (GGUF metadata or tokenizer_config.json). Null/undefined/empty:
   * `CHATML_FALLBACK_TEMPLATE` (plain ChatML).
   */
  template?: string | null;
  /** Text of the BOS token, for templates that print `bos_token` (e.g. Llama 3). Default "". */
  bosToken?: string;
  /** Text of the EOS token, for templates that print `eos_token`. Default "". */
  eosToken?: string;
}

const RENDER_KEYS: Readonly<Record<keyof RenderChatOptions, true>> = { addGenerationPrompt: true, enableThinking: true, tools: true, extra: true };
const TEMPLATE_KEYS: Readonly<Record<keyof ChatTemplateOptions, true>> = { template: true, bosToken: true, eosToken: true };

/** {@link RenderChatOptions} (and, with `known`, more keys) checked by key and value: INVALID_ARGUMENT naming the option. */
export function renderOptions(value: unknown, what: string, known: Readonly<Record<string, true>> = RENDER_KEYS): RenderChatOptions {
  const o = optionsObject(value, what, known);
  boolOption(o.addGenerationPrompt, "addGenerationPrompt", false);
  boolOption(o.enableThinking, "enableThinking", false);
  if (o.tools !== undefined && !Array.isArray(o.tools)) throw invalidArgument("tools must be an array");
  if (o.extra !== undefined) optionsObject(o.extra, "extra");
  return o;
}

/**
 * Used when the model has no chat template (e.g. the TinyStories test model): plain ChatML,
 * `<|im_start|>{role}\n{content}<|im_end|>\n` per message and `<|im_start|>assistant\n` as the generation
 * prompt. It prints no `<think>` block: a model without a template has no thinking mode to switch off,
 * so `enable_thinking` is ignored. For such a model these markers are ordinary text, which is fine:
 * the renders only need a fixed, deterministic scaffolding around the content.
 */
export const CHATML_FALLBACK_TEMPLATE =
  "{%- for message in messages %}" +
  "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}" +
  "{%- endfor %}" +
  "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

/**
 * A model's chat template, parsed once. Rendering is pure text: tokenization (and whether the tokenizer
 * adds a BOS of its own, which must then not be printed by the template too) is the caller's concern.
 */
export class ChatTemplate {
  /** The Jinja source actually used (the fallback where the model has none). */
  readonly source: string;
  /** True when the model had no template and `CHATML_FALLBACK_TEMPLATE` (plain ChatML) is used. */
  readonly isFallback: boolean;
  readonly bosToken: string;
  readonly eosToken: string;
  private readonly compiled: Template;

  /** @throws GavelError `INVALID_ARGUMENT` when the template does not parse as Jinja. */
  constructor(opts: ChatTemplateOptions = {}) {
    optionsObject(opts, "ChatTemplate options", TEMPLATE_KEYS);
    stringOption(opts.bosToken, "bosToken");
    stringOption(opts.eosToken, "eosToken");
    const t = opts.template;
    if (t !== undefined && t !== null && typeof t !== "string") throw invalidArgument("chat template must be a string");
    this.isFallback = t === undefined || t === null || t.trim() === "";
    this.source = this.isFallback ? CHATML_FALLBACK_TEMPLATE : (t as string);
    this.bosToken = opts.bosToken ?? "";
    this.eosToken = opts.eosToken ?? "";
    try {
      this.compiled = new Template(this.source);
    } catch (cause) {
      throw new GavelError(`chat template does not parse: ${(cause as Error).message}`, "INVALID_ARGUMENT", { cause });
    }
  }

  /**
   * Reads `chat_template`, `bos_token`, `eos_token` from a Hugging Face tokenizer_config.json object.
   * Token entries may be strings or AddedToken objects (`{content}`); a list of named templates picks
   * "default".
   */
  static fromTokenizerConfig(config: Record<string, unknown>): ChatTemplate {
    if (typeof config !== "object" || config === null || Array.isArray(config)) throw invalidArgument("tokenizer config must be an object");
    let template = config["chat_template"];
    if (Array.isArray(template)) {
      // entries that are no {name, template} object are passed over
      const named = (template as unknown[]).filter((x): x is { name?: unknown; template?: unknown } => typeof x === "object" && x !== null);
      template = (named.find((x) => x.name === "default") ?? named[0])?.template;
    }
    const tokenText = (v: unknown) =>
      typeof v === "string" ? v : typeof v === "object" && v !== null && typeof (v as { content?: unknown }).content === "string" ? ((v as { content: string }).content) : undefined;
    return new ChatTemplate({
      template: typeof template === "string" ? template : null,
      bosToken: tokenText(config["bos_token"]),
      eosToken: tokenText(config["eos_token"]),
    });
  }

  /**
   * Renders messages to text.
   * @throws GavelError `INVALID_ARGUMENT` for malformed messages or when the template raises
   *   (e.g. `raise_exception('Conversation roles must alternate')`).
   */
  render(messages: readonly ChatMessage[], opts: RenderChatOptions = {}): string {
    renderOptions(opts, "render options");
    if (!Array.isArray(messages) || messages.length === 0) throw invalidArgument("renderChat: messages must be a non-empty array");
    for (const [i, m] of messages.entries()) {
      if (typeof m !== "object" || m === null || typeof m.role !== "string" || typeof m.content !== "string") {
        throw invalidArgument(`renderChat: messages[${i}] must have string role and content`);
      }
    }
    const ctx: Record<string, unknown> = {
      ...opts.extra,
      messages,
      bos_token: this.bosToken,
      eos_token: this.eosToken,
      add_generation_prompt: opts.addGenerationPrompt ?? false,
    };
    // Only pass enable_thinking when asked: Qwen3 tests `enable_thinking is defined and … is false`.
    if (opts.enableThinking !== undefined) ctx["enable_thinking"] = opts.enableThinking;
    if (opts.tools !== undefined) ctx["tools"] = opts.tools;
    try {
      return this.compiled.render(ctx);
    } catch (cause) {
      throw new GavelError(`chat template failed: ${(cause as Error).message}`, "INVALID_ARGUMENT", { cause });
    }
  }
}

/** Small cache so repeated {@link renderChat} calls with the same template do not re-parse it. */
const cache = new Map<string, ChatTemplate>();
const CACHE_MAX = 8;

/**
 * Renders chat messages with a model's chat template (or the ChatML fallback where `template` is
 * null/undefined): the live-context form the glance reads mid-rollout.
 */
export function renderChat(
  template: string | null | undefined,
  messages: readonly ChatMessage[],
  opts: RenderChatOptions & { bosToken?: string; eosToken?: string } = {},
): string {
  renderOptions(opts, "renderChat options", { ...RENDER_KEYS, bosToken: true, eosToken: true });
  const key = JSON.stringify([template ?? null, opts.bosToken ?? "", opts.eosToken ?? ""]);
  let t = cache.get(key);
  if (!t) {
    t = new ChatTemplate({ template, bosToken: opts.bosToken, eosToken: opts.eosToken });
    if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value as string);
    cache.set(key, t);
  }
  const { bosToken: _b, eosToken: _e, ...render } = opts;
  return t.render(messages, render);
}
