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
import { insidePair, type TaskKeep } from "../render/encode.js";
import { config } from "../config.js";
import { decayWeights } from "../kernels/kernels.js";
import { hiddenQueries } from "../model/hidden-queries.js";
import { loadBinding } from "../native/binding.js";
import type { GlanceRowWeights } from "../projections/meta.js";
import type { RouterParts } from "./parts.js";
import { pasteWeight, taskPaste, type PasteSplit } from "../lexical/paste.js";
import { bm25Query, type Bm25Query } from "../lexical/postings.js";
import type { Model } from "../model/Model.js";
import type { RouteContext, TaskTruncation } from "./types.js";

/** A context's queries for the glance, and its text for the verdict. */
export interface Queries {
  /** n × dim unit queries, one per task token. */
  queries: Float32Array;
  /** Vote weight of each query: idf or 1 for a written task, 2^(−a_i/64) for a live rollout, 0 for a live chat's system prompt rows. */
  weights: Float32Array;
  /** Query token ids (for explanations). */
  tokens: Int32Array;
  /** The task as the verdict reads it. */
  taskText: string;
  /** How the task was cut to the glance's or the verdict's budget; undefined when both read it whole. */
  truncation?: TaskTruncation;
  /** A live rollout (decay weights and the paper's vote size); written tasks leave it unset. */
  live?: boolean;
  /** The weight the glance read the task's pasted rows at, when a paste outweighed the request (src/lexical/paste.ts). */
  pasteWeight?: number;
  /** The written task's paste split ({@link taskPaste}), made once and read by the glance, BM25 and the result; unset without a paste. */
  pasteSplit?: PasteSplit;
  /**
   * The task as BM25 reads it: its text and its paste reading (with a written task's split), read at
   * the first BM25 read and kept here for the route's other reads (B, the ceiling, the re-ranker,
   * the result); a live rollout's splits its own text, as any text BM25 is given.
   */
  bm25Query: Bm25Query;
  /**
   * The text the verdict reads where BM25 reads another: chat messages, whose "role: content" lines
   * the verdict reads and whose contents alone BM25 reads (as abstention's domain score does:
   * {@link domainTextOf}), both without the system prompt. Unset: `bm25Query.text`.
   */
  verdictText?: string;
}

/** The fewest characters of a task its lexical readers take ({@link lexicalRead}). */
export const LEXICAL_MIN_CHARS = 65_536;

/**
 * The part of a context's text its lexical readers take: BM25's query and its paste split, the
 * re-ranker's name features, abstention's word and domain scores, the echo flag. They run on the
 * JavaScript thread, linear in the text, so a task of megabytes would hold the event loop for all of
 * it. The whole text up to max(65,536, 16 × `glanceBudget`) characters; past that, as many from the
 * side the glance keeps (`keep`), cut at white space within 64 characters and never inside a
 * surrogate pair. What is cut lies far past anything the glance and the verdict read.
 */
export function lexicalRead(text: string, keep: TaskKeep, glanceBudget: number): string {
  const max = Math.max(LEXICAL_MIN_CHARS, 16 * glanceBudget);
  if (text.length <= max) return text;
  if (keep === "end") return text.slice(tailStart(text, text.length - max));
  const ws = text.slice(max - 64, max + 1).search(/\s\S*$/);
  const end = ws >= 0 ? max - 64 + ws : max;
  return text.slice(0, insidePair(text, end) ? end - 1 : end);
}

/** Where a tail cut near `at` starts: at the next white space within 64 characters, never inside a surrogate pair. */
export function tailStart(text: string, at: number): number {
  const ws = text.slice(at, at + 64).search(/\s/);
  const i = ws >= 0 ? at + ws : at;
  return insidePair(text, i) ? i + 1 : i;
}

/** {@link lexicalRead} of a context's domain text ({@link domainTextOf}): a live rollout's end, a written task's kept side. */
export function lexicalDomainText(parts: Pick<RouterParts, "keep" | "glanceBudget">, context: RouteContext, live: boolean | undefined): string {
  return lexicalRead(domainTextOf(context), live ? "end" : parts.keep, parts.glanceBudget);
}

/** A chat as the verdict's task text: one "role: content" line per message. */
export function chatAsTask(messages: ChatMessage[]): string {
  return messages.map((m) => `${m.role}: ${m.content}`).join("\n");
}

/**
 * The text abstention's domain score reads for a context: a string as it is; of chat messages, the
 * contents of all but the system prompt, without the role labels (an agent's system prompt, and the
 * words "user" and "assistant", would read as an agent's work whatever the user asked).
 */
export function domainTextOf(context: RouteContext): string {
  if (typeof context === "string") return context;
  return context.filter((m) => m && m.role !== "system" && typeof m.content === "string").map((m) => m.content).join("\n");
}

/** Refuses (INVALID_ARGUMENT) an element of `context` that is not a chat message, naming its index in `context`. */
export function checkChatMessages(context: readonly unknown[]): void {
  for (const [i, m] of context.entries()) {
    const msg = m as Partial<ChatMessage> | null | undefined;
    if (!msg || typeof msg.role !== "string" || typeof msg.content !== "string") throw invalidArgument(`context[${i}] must be a chat message { role, content }`);
  }
}

/**
 * The task text the verdict reads for a context, its chat messages checked (INVALID_ARGUMENT, also
 * for chat messages that are all system prompts): a string as it is; chat messages as "role: content"
 * lines without the system prompt, as `selectLive` reads them (src/route/firing.ts).
 */
export function taskTextOf(context: RouteContext): string {
  if (typeof context === "string") return context;
  if (!Array.isArray(context)) throw invalidArgument("context must be a task string or an array of chat messages");
  if (context.length === 0) throw invalidArgument("context holds no message");
  checkChatMessages(context);
  // a system prompt says how to work, not what to do: alone it holds no task to route, and beside
  // one it would give every task the verdict reads the same words
  const kept = context.filter((m) => m.role !== "system");
  if (kept.length === 0) throw invalidArgument("context needs a message besides the system prompt: a system prompt alone holds no task to route");
  return chatAsTask(kept);
}

/**
 * The context's task tokens: a string is a written task (live only when asked); chat messages are a
 * live rollout by default, rendered with the model's chat template (or, when not live, read as
 * "role: content" lines).
 */
async function encodeContext(parts: RouterParts, context: RouteContext, live: boolean | undefined, signal?: AbortSignal) {
  const { model, encoder, taskBudget, glanceBudget } = parts;
  let enc: EncodedTask;
  let taskText: string;
  let isLive: boolean;
  /** The tokens of what a live chat's encoding read of its leading system messages. */
  let systemTokens = 0;
  /** A live chat's text for the lexical readers ({@link liveDomainText}); otherwise unset. */
  let domainText: string | undefined;
  if (typeof context === "string") {
    isLive = live ?? false;
    taskText = context;
    enc = await (isLive ? encoder.encodeLiveAsync(context, liveReadTokens(taskBudget), signal) : encoder.encodeTaskAsync(context, glanceBudget, parts.keep, signal));
  } else if (Array.isArray(context)) {
    isLive = live ?? true;
    taskText = taskTextOf(context); // checks each message
    if (isLive) {
      const whole = renderChat(model.info.chatTemplate ?? null, context);
      const head = systemHeadOf(model, context, whole);
      // a long system prompt is read from its last LIVE_SYSTEM_CHARS characters (at a word's start)
      const from = head.length > LIVE_SYSTEM_CHARS ? tailStart(whole, head.length - LIVE_SYSTEM_CHARS) : 0;
      const liveText = from > 0 ? whole.slice(from) : whole;
      if (head.length > from) systemTokens = model.tokenize(liveText.slice(0, head.length - from), { special: true, addBos: from === 0 && model.info.addBos }).length;
      enc = await encoder.encodeLiveAsync(liveText, liveReadTokens(taskBudget), signal, from === 0);
      domainText = liveDomainText(model, context, liveText, enc, undefined, Math.max(0, head.length - from));
    } else enc = await encoder.encodeTaskAsync(taskText, glanceBudget, parts.keep, signal);
  } else throw invalidArgument("context must be a task string or an array of chat messages");
  if (enc.taskEnd <= enc.taskStart) throw invalidArgument("the task has no tokens");
  const read = enc.taskEnd - enc.taskStart;
  // the system messages' rows in the window: the tokens of what was read of them (one fewer, for a
  // token the boundary may merge), less those the cut dropped; at least one row left
  const systemRows = systemTokens > 0 ? Math.max(0, Math.min(systemTokens - 1 - (enc.wholeTokens - read), read - 1)) : 0;
  let truncation: TaskTruncation | undefined;
  if (enc.truncated) truncation = { totalTokens: enc.wholeTokens, keptTokens: read, droppedTokens: enc.wholeTokens - read, kept: isLive ? "end" : parts.keep };
  else if (!isLive && read > taskBudget) truncation = { totalTokens: read, keptTokens: read, droppedTokens: 0, kept: parts.keep };
  if (truncation && !isLive && Math.min(truncation.totalTokens, taskBudget) < truncation.keptTokens) truncation.verdictTokens = taskBudget;
  return { enc, taskText, isLive, truncation, systemRows, domainText };
}

/**
 * What a live chat's lexical readers read (GAVEL_LIVE_LEXICAL): `all`, the contents of every message
 * but the system prompt ({@link domainTextOf}); `latest`, from the latest user message on (every
 * message, where none is the user's); `window`, the messages whose contents reach into what the
 * forward pass read (`enc`, the last tokens of `liveText`, the chat's rendering), a message the window
 * starts inside whole, and one whose contents the rendering does not show as they are, too. The
 * contents are looked for in order from `after` (where the leading system messages' rendering ends
 * in `liveText`), so words of a system prompt are not taken for a message.
 */
export function liveDomainText(model: Pick<Model, "detokenize">, messages: readonly ChatMessage[], liveText: string, enc: EncodedTask, mode = config().liveLexical, after = 0): string {
  const kept = messages.filter((m) => m.role !== "system");
  if (mode === "latest") {
    let last = kept.length - 1;
    while (last > 0 && kept[last].role !== "user") last--;
    return domainTextOf(kept.slice(last));
  }
  if (mode === "all" || !enc.truncated) return domainTextOf(kept);
  // where the window starts in the rendering: its text's length back from the end
  const start = liveText.length - model.detokenize(enc.tokens.subarray(enc.taskStart, enc.taskEnd), { special: true }).length;
  const reached: ChatMessage[] = [];
  let at = after;
  for (const m of kept) {
    const i = m.content.length > 0 ? liveText.indexOf(m.content, at) : -1;
    if (i < 0) {
      if (m.content.length > 0) reached.push(m); // not found as it is: kept, the safe side
      continue;
    }
    at = i + m.content.length;
    if (at > start) reached.push(m);
  }
  return domainTextOf(reached);
}

/**
 * A live chat's leading system messages rendered alone, where that rendering starts the whole chat's
 * (`whole`); "" when the chat opens with no system message or holds nothing else, or the template
 * places them otherwise.
 */
function systemHeadOf(model: Model, messages: readonly ChatMessage[], whole: string): string {
  let k = 0;
  while (k < messages.length && messages[k].role === "system") k++;
  if (k === 0 || k === messages.length) return "";
  let head: string;
  try {
    head = renderChat(model.info.chatTemplate ?? null, messages.slice(0, k));
  } catch {
    return ""; // a template that will not render system messages alone
  }
  return whole.startsWith(head) ? head : "";
}

/**
 * How much of a live chat's leading system messages its forward pass reads: their last 256 characters
 * (from a word's start), the template's turn and what the prompt ends with, as context for the
 * messages after them. Their rows have no vote; over the example skills, reading a prompt whole or
 * from its last 16-128 tokens moved the glance's first pick for at most one request in 66
 * (docs/LIVE.md), and a prompt of 1,751 tokens cost 250 ms a route on a CPU.
 */
export const LIVE_SYSTEM_CHARS = 256;

/**
 * The most tokens a live route's forward pass reads while its rows vote by the paper's decay alone
 * (2^(−a/64)): twelve half-lives. The rows further back would carry at most 2^−12 of the vote's
 * weight (a geometric tail), so the pass reads the context's last 768 tokens, or the task budget where
 * that is smaller; a vote weighed by idf (GAVEL_LIVE_ROW_WEIGHTS) reads the whole task budget.
 */
export const LIVE_DECAY_WINDOW = 12 * 64;

/** How many of a live context's last tokens its forward pass reads ({@link LIVE_DECAY_WINDOW}). */
export function liveReadTokens(taskBudget: number): number {
  return config().liveRowWeights === "decay" ? Math.min(taskBudget, LIVE_DECAY_WINDOW) : taskBudget;
}

/**
 * A written task's vote weights, as the projections say (`glanceRowWeights`; the environment's
 * `GAVEL_GLANCE_ROW_WEIGHTS` overrides them): uniform, or each token's idf over the routable skills'
 * key tokens ({@link Library.tokenIdf}).
 */
export function rowWeights(parts: RouterParts, tokens: ArrayLike<number>, mode: GlanceRowWeights = config().glanceRowWeights ?? parts.projections.glanceRowWeights): Float32Array {
  if (mode !== "idf" || !parts.library) return new Float32Array(tokens.length).fill(1);
  const idf = parts.library.tokenIdf();
  return Float32Array.from(tokens, (t) => (t >= 0 && t < idf.length ? idf[t] : idf[idf.length - 1]));
}

/**
 * A live route's vote weights (GAVEL_LIVE_ROW_WEIGHTS): the paper's recency decay
 * ({@link decayWeights}), that times each token's idf ({@link rowWeights}' idf), or the idf alone.
 */
export function liveRowWeights(parts: RouterParts, tokens: ArrayLike<number>, mode = config().liveRowWeights): Float32Array {
  if (mode === "idf") return rowWeights(parts, tokens, "idf");
  const w = decayWeights(tokens.length);
  if (mode === "idf-decay") {
    const idf = rowWeights(parts, tokens, "idf");
    for (let i = 0; i < w.length; i++) w[i] *= idf[i];
  }
  return w;
}

/** Newlines in each token's piece, per model (filled as tokens are met). */
const newlinesOf = new WeakMap<Model, Map<number, number>>();

function newlines(model: Model, token: number): number {
  let m = newlinesOf.get(model);
  if (!m) newlinesOf.set(model, (m = new Map()));
  let n = m.get(token);
  if (n === undefined) {
    n = 0;
    for (const c of model.tokenPiece(token)) if (c === "\n") n++;
    m.set(token, n);
  }
  return n;
}

/**
 * Scales the vote weights of a written task's pasted rows (its paste split, {@link taskPaste}) so that, when the paste
 * outweighs the request, the pasted rows weigh as much in all as the request's ({@link pasteWeight},
 * counted in the rows read). A row's line is found by counting the newlines in the tokens' pieces,
 * from the end of the text when its start was cut and from its start otherwise; when the count does
 * not match the text's lines (a tokenizer that folds newlines), the weights are left as they are.
 * GAVEL_PASTE_WEIGHT=off leaves them too. Returns the weight a pasted row was scaled by (1: none).
 */
export function weighPasteRows(model: Model, split: PasteSplit | undefined, tokens: ArrayLike<number>, weights: Float32Array, read: "whole" | TaskKeep): number {
  if (config().pasteWeight !== "on" || !split || split.pasteLines === 0) return 1;
  const last = split.paste.length - 1;
  const line = new Int32Array(tokens.length);
  if (read === "end") {
    // the start was cut: the last token ends the text's last line
    let at = last;
    for (let j = tokens.length - 1; j >= 0; j--) {
      at -= newlines(model, tokens[j]);
      if (at < 0) return 1;
      line[j] = at;
    }
  } else {
    let at = 0;
    for (let j = 0; j < tokens.length; j++) {
      line[j] = at;
      at += newlines(model, tokens[j]);
      if (at > last) return 1;
    }
    if (read === "whole" && at !== last) return 1;
  }
  let request = 0, paste = 0;
  for (let j = 0; j < tokens.length; j++) split.paste[line[j]] ? paste++ : request++;
  const w = pasteWeight(request, paste);
  if (w !== 1) for (let j = 0; j < tokens.length; j++) if (split.paste[line[j]]) weights[j] *= w;
  return w;
}

/**
 * The result's `paste` (RouteResult.paste) of a context's queries: empty when no paste was weighed.
 * `lexical`: whether the route read the lexical expert (its query's word weight is reported only then).
 */
export function pasteOf(q: Queries, lexical: boolean): { paste?: { lines: number; wordWeight: number; tokenWeight: number } } {
  const words = lexical && q.pasteSplit ? q.bm25Query.paste() : undefined;
  const tokenWeight = q.pasteWeight ?? 1;
  if (!words && tokenWeight === 1) return {};
  const lines = words?.lines ?? q.pasteSplit?.pasteLines ?? 0;
  return { paste: { lines, wordWeight: words?.weight ?? 1, tokenWeight } };
}

/**
 * A written task's paste split, made once for its route ({@link taskPaste}; none with
 * GAVEL_PASTE_WEIGHT=off), and its query for BM25 with it ({@link Queries.bm25Query}).
 */
function writtenPaste(taskText: string): { split: PasteSplit | undefined; bm25Query: Bm25Query } {
  const split = config().pasteWeight === "on" ? taskPaste(taskText) : undefined;
  return { split, bm25Query: bm25Query(taskText, { split }) };
}

/** The glance's queries: one forward pass over the task to ℓ*, then normalize(W_q h) per task token. */
export async function encodeQueries(parts: RouterParts, context: RouteContext, live: boolean | undefined, signal?: AbortSignal): Promise<Queries> {
  const { enc, taskText, isLive, truncation, systemRows, domainText } = await encodeContext(parts, context, live, signal);
  const { layer, dim, wq } = parts.projections;
  // the task's rows at ℓ*, projected and normalised (a resident server batches both over concurrent requests)
  const queries = await hiddenQueries(parts.model, enc.tokens, layer, { from: enc.taskStart, to: enc.taskEnd, W: wq, dim }, { signal });
  const tokens = enc.tokens.subarray(enc.taskStart, enc.taskEnd);
  const weights = isLive ? liveRowWeights(parts, tokens) : rowWeights(parts, tokens);
  // a live chat's system prompt is in the forward pass but does not vote: it says how to work, not
  // what, and would give every task of the agent the same votes (BM25 and the verdict skip it too)
  weights.fill(0, 0, systemRows);
  const lexText = lexicalRead(taskText, isLive ? "end" : parts.keep, parts.glanceBudget);
  // chat messages: BM25 reads their contents without the system prompt (an agent's system prompt,
  // and the role labels, would add the same words to every task's query); the verdict their lines
  const bmText = typeof context === "string" ? lexText : domainText !== undefined ? lexicalRead(domainText, "end", parts.glanceBudget) : lexicalDomainText(parts, context, isLive);
  const { split, bm25Query: query } = isLive ? { split: undefined, bm25Query: bm25Query(bmText) } : writtenPaste(bmText);
  const paste = weighPasteRows(parts.model, split, tokens, weights, enc.truncated ? parts.keep : "whole");
  return { queries, weights, tokens, taskText, ...(truncation ? { truncation } : {}), ...(isLive ? { live: true } : {}), ...(paste !== 1 ? { pasteWeight: paste } : {}), ...(split ? { pasteSplit: split } : {}), bm25Query: query, ...(bmText !== lexText ? { verdictText: lexText } : {}) };
}

/** Most tokens one {@link encodeTasksMany} pass decodes together (the resident router's default batch). */
const MANY_TOKENS = 4096;

/**
 * {@link encodeQueries} of many written tasks, their forward passes decoded together
 * ({@link Model.hiddenStatesMany}: a few wide passes instead of one a task; their rows equal the
 * single passes' up to float summation order) in passes of at most 4,096 tokens. On an addon without
 * that verb each task is encoded alone. Out: each task's queries, in order.
 */
export async function encodeTasksMany(parts: RouterParts, tasks: readonly string[], signal?: AbortSignal): Promise<Queries[]> {
  const { model } = parts;
  if (!model.batchesStates) {
    const out: Queries[] = [];
    for (const t of tasks) out.push(await encodeQueries(parts, t, false, signal));
    return out;
  }
  const encoded: Awaited<ReturnType<typeof encodeContext>>[] = [];
  for (const t of tasks) encoded.push(await encodeContext(parts, t, false, signal));
  const { layer, dim, wq } = parts.projections;
  const nEmbd = model.info.nEmbd;
  const out: Queries[] = [];
  for (let i = 0; i < encoded.length; ) {
    let j = i;
    for (let n = 0; j < encoded.length && (j === i || n + encoded[j].enc.tokens.length <= MANY_TOKENS); j++) n += encoded[j].enc.tokens.length;
    const rows = await model.hiddenStatesMany(encoded.slice(i, j).map((e) => e.enc.tokens), [layer], { signal });
    for (let k = i; k < j; k++) {
      const { enc, taskText, truncation } = encoded[k];
      const states = rows[k - i][0];
      // what hiddenQueries computes from a single pass's rows (model/hidden-queries.ts)
      const queries = await loadBinding().projectNormalize(states.subarray(enc.taskStart * nEmbd, enc.taskEnd * nEmbd), nEmbd, wq, dim);
      const tokens = enc.tokens.subarray(enc.taskStart, enc.taskEnd);
      const weights = rowWeights(parts, tokens);
      const { split, bm25Query: query } = writtenPaste(lexicalRead(taskText, parts.keep, parts.glanceBudget));
      const paste = weighPasteRows(parts.model, split, tokens, weights, enc.truncated ? parts.keep : "whole");
      out.push({ queries, weights, tokens, taskText, ...(truncation ? { truncation } : {}), ...(paste !== 1 ? { pasteWeight: paste } : {}), ...(split ? { pasteSplit: split } : {}), bm25Query: query });
    }
    i = j;
  }
  return out;
}
