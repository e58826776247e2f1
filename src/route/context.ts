/**
 * The routing context as the stages read it: a task or a chat becomes the glance's queries (the task
 * tokens' states at ℓ*, projected with W_q and normalised, with their vote weights) and the verdict's
 * task text.
 *
 * @module
 */
import { invalidArgument } from "../errors.js";
import { renderChat, type ChatMessage } from "../render/index.js";
import type { EncodedTask } from "../render/encode.js";
import { decayWeights, projectNormalize } from "../kernels/kernels.js";
import type { RouterParts } from "./parts.js";
import type { RouteContext } from "./types.js";

/** A context's queries for the glance, and its text for the verdict. */
export interface Queries {
  /** n × dim unit queries, one per task token. */
  queries: Float32Array;
  /** Vote weight of each query: 1, or 2^(−a_i/64) for a live rollout. */
  weights: Float32Array;
  /** Query token ids (for explanations). */
  tokens: Int32Array;
  /** The task as the verdict reads it. */
  taskText: string;
}

/** A chat as the verdict's task text: one "role: content" line per message. */
export function chatAsTask(messages: ChatMessage[]): string {
  return messages.map((m) => `${m.role}: ${m.content}`).join("\n");
}

/** The task text the verdict reads for a context. */
export function taskTextOf(context: RouteContext): string {
  return typeof context === "string" ? context : chatAsTask(context);
}

/**
 * The context's task tokens: a string is a written task (live only when asked); chat messages are a
 * live rollout by default, rendered with the model's chat template (or, when not live, read as
 * "role: content" lines).
 */
function encodeContext({ model, encoder, taskBudget }: RouterParts, context: RouteContext, live: boolean | undefined) {
  let enc: EncodedTask;
  let taskText: string;
  let isLive: boolean;
  if (typeof context === "string") {
    isLive = live ?? false;
    taskText = context;
    enc = isLive ? encoder.encodeLive(context, taskBudget) : encoder.encodeTask(context, taskBudget);
  } else if (Array.isArray(context)) {
    isLive = live ?? true;
    for (const [i, m] of context.entries()) {
      if (!m || typeof m.role !== "string" || typeof m.content !== "string") throw invalidArgument(`context[${i}] must be a chat message { role, content }`);
    }
    if (context.length === 0) throw invalidArgument("context holds no message");
    taskText = chatAsTask(context);
    enc = isLive ? encoder.encodeLive(renderChat(model.info.chatTemplate ?? null, context), taskBudget) : encoder.encodeTask(taskText, taskBudget);
  } else throw invalidArgument("context must be a task string or an array of chat messages");
  if (enc.taskEnd <= enc.taskStart) throw invalidArgument("the task has no tokens");
  return { enc, taskText, isLive };
}

/** The glance's queries: one forward pass over the task to ℓ*, then normalize(W_q h) per task token. */
export async function encodeQueries(parts: RouterParts, context: RouteContext, live: boolean | undefined, signal?: AbortSignal): Promise<Queries> {
  const { enc, taskText, isLive } = encodeContext(parts, context, live);
  const { layer, dim, wq } = parts.projections;
  const { nEmbd } = parts.model.info;
  const states = await parts.model.hiddenStates(enc.tokens, layer, { signal });
  const rows = states.subarray(enc.taskStart * nEmbd, enc.taskEnd * nEmbd);
  const queries = await projectNormalize(rows, nEmbd, wq, dim);
  const n = enc.taskEnd - enc.taskStart;
  const weights = isLive ? decayWeights(n) : new Float32Array(n).fill(1);
  return { queries, weights, tokens: enc.tokens.subarray(enc.taskStart, enc.taskEnd), taskText };
}
