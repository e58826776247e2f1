/**
 * What happens when the gate fires (paper, end-to-end deployment): the live context's
 * accumulated glance scores are the first stage (nothing is encoded again), its Δ-shortlist gets the
 * verdict, the ruling S = g + αL + γV (+ βB) picks the winner, and abstention decides whether to load
 * it: the projections' calibrated abstention model when there is one, else "nothing when the winner's
 * V < 0". The same {@link decide} as `router.route`, so the two cannot disagree on a shortlist.
 *
 * The result hands the host the winner's skill, with its text, and leaves the injection to the host:
 * the paper's harness injects the skill into the context and restarts the agent's turn
 * ({@link skillInjection} is one way to word it).
 *
 * The verdict reads the context as text: chat messages as "role: content" lines without the system
 * prompt, and, when that is longer than the router's task budget, its end (the most recent messages),
 * as the paper's verdict continues from the most recent message. The lexical expert's BM25 reads a
 * longer end of the messages' contents (at least 65,536 characters, without the system prompt), as a
 * live `router.route` does, so the request that opened a long turn still counts.
 *
 * @module
 */
import { GavelError, invalidArgument } from "../errors.js";
import { asAborted, boolOption, optionsObject, signalOption, throwIfAborted } from "../util/validate.js";
import { defaultLexical } from "./abstention.js";
import { lexicalDomainText, tailStart, taskTextOf } from "./context.js";
import { decide, decisionOutcome } from "./decide.js";
import { LexicalExpert } from "./lexical-expert.js";
import { bm25Query } from "../lexical/postings.js";
import { routeCut } from "./library-cut.js";
import { config } from "../config.js";
import type { LiveContext } from "./live.js";
import type { Ranked } from "./glance.js";
import type { RouterParts } from "./parts.js";
import { readSkillRecord, type SkillRecord } from "./skill-record.js";
import type { RouteContext, RouteResult } from "./types.js";
import type { Library } from "../bank/library.js";

/**
 * One lexical expert per library, kept across live selections: its lexicon-row and column maps are
 * rebuilt only when the library or the glance's columns change, not on every selection (at 30K
 * skills a rebuild is a 30K-entry map).
 */
const liveExperts = new WeakMap<Library, LexicalExpert>();
function liveExpertOf(library: Library): LexicalExpert {
  let e = liveExperts.get(library);
  if (e === undefined) liveExperts.set(library, (e = new LexicalExpert()));
  return e;
}

/** Options of {@link selectLive}. */
export interface LiveSelectOptions {
  /** Abstain (default true): by the calibrated model when the projections have one, else when the winner's V < 0. */
  abstain?: boolean;
  /** With `abstain`, also abstain at a small library's own cut (default true), as `RouteOptions.libraryCut`. */
  libraryCut?: boolean;
  /** Run the verdict when it can change the outcome (default true). */
  verdict?: boolean;
  /** Compute the lexical expert B (default: as route does, on when β > 0 or abstention reads it). */
  lexical?: boolean;
  signal?: AbortSignal;
}

/** The keys of {@link LiveSelectOptions} (optionsObject refuses others). */
const LIVE_SELECT_KEYS: Record<keyof LiveSelectOptions, true> = { abstain: true, libraryCut: true, verdict: true, lexical: true, signal: true };

/** What a firing chose. */
export interface LiveSelection extends Pick<RouteResult, "skill" | "name" | "abstained" | "abstention" | "shortlist" | "verdict" | "load"> {
  /** The winner whole (body, front matter, allowed-tools); null when nothing loads. */
  record: SkillRecord | null;
  /** Live tokens read when it fired (the rows of the scores it ranked). */
  tokens: number;
  /** As `route().timings`, without the glance (the live context keeps its scores as it reads). */
  timings: Omit<RouteResult["timings"], "glanceMs">;
}

/** Tokens past the budget that a tail must hold before its kept end is read (the cut's own tokens are far from it). */
const TAIL_MARGIN = 32;
/** Characters per budget token of the first tail tried (four times more at each retry). */
const TAIL_CHARS_PER_TOKEN = 8;

/**
 * The verdict's text for a live context: the messages without the system prompt, the end kept within
 * `budget` tokens. Only a tail of the text is tokenized (off the JS thread): one that holds more tokens
 * than the budget, grown until it does or is the whole text, so a long conversation costs what its end
 * does. An abort of `signal` rejects at once (`Model.tokenizeAsync`'s ABORTED), the tokenization under
 * way dropped.
 */
export async function liveVerdictText(parts: RouterParts, context: RouteContext, signal?: AbortSignal): Promise<string> {
  return liveTail(parts, liveText(context), signal);
}

/** A live context as text: a string as it is; chat messages as "role: content" lines without the system prompt ({@link taskTextOf}). */
function liveText(context: RouteContext): string {
  const text = taskTextOf(context);
  if (text.trim() === "") throw invalidArgument("the live context's text is empty");
  return text;
}

/** The end of a live context's text within the task budget ({@link liveVerdictText}). */
async function liveTail(parts: RouterParts, text: string, signal?: AbortSignal): Promise<string> {
  const { model, taskBudget } = parts;
  // The end: the most recent messages. Cut a few tokens short, so that the text tokenized again fits.
  const keep = Math.max(1, taskBudget - 8);
  for (let chars = (taskBudget + TAIL_MARGIN) * TAIL_CHARS_PER_TOKEN; ; chars *= 4) {
    const whole = chars >= text.length;
    const tail = whole ? text : text.slice(tailStart(text, text.length - chars));
    const tokens = await model.tokenizeAsync(tail, { special: false, addBos: false, signal });
    if (whole) return tokens.length <= taskBudget ? text : model.detokenize(tokens.subarray(tokens.length - keep));
    if (tokens.length >= taskBudget + TAIL_MARGIN) return model.detokenize(tokens.subarray(tokens.length - keep));
  }
}

/**
 * Runs the verdict on a live context's shortlist and returns the winner's skill (or nothing): call it
 * when the gate fires (`gate.stepChunk(live, chunk)` or `gate.stepLive(live, state)` returned true). `context` is the conversation so
 * far (chat messages, or its text), which the verdict reads.
 *
 * @example
 * ```ts
 * for await (const c of model.generate(prompt, { captureLayer: live.layer, onPrompt: (s) => void live.append(s) })) {
 *   await live.append(c.state);
 *   if (gate.stepChunk(live, c)) { // c.state, or c.finalState (generate's finalState: true) for a final-layer gate
 *     const pick = await selectLive(live, [...messages, { role: "assistant", content: soFar }]);
 *     if (pick.record) { messages.push({ role: "user", content: skillInjection(pick.record) }); break; } // restart the turn
 *   }
 * }
 * ```
 * @throws GavelError INVALID_ARGUMENT (no token read yet, a bad context), EMPTY_LIBRARY, ABORTED,
 *   DISPOSED (the live context was disposed, or its router closed); the tokens and the disposal are
 *   checked again after each wait, so a reset or a dispose while it runs is one of these too
 */
export async function selectLive(live: LiveContext, context: RouteContext, options?: LiveSelectOptions): Promise<LiveSelection> {
  try {
    return await select(live, context, options);
  } catch (err) {
    // an abort noticed by any stage (the verdict's model call, the library cut) is selectLive's
    throw asAborted(err, "selectLive", (options as { signal?: AbortSignal } | undefined)?.signal);
  }
}

async function select(live: LiveContext, context: RouteContext, options?: LiveSelectOptions): Promise<LiveSelection> {
  checkLive(live);
  live.checkOpen("selectLive");
  const parts = live.routerParts;
  const o = optionsObject(options, "selectLive options", LIVE_SELECT_KEYS);
  const projections = parts.projections;
  const abstain = boolOption(o.abstain, "abstain", true);
  const ownCut = boolOption(o.libraryCut, "libraryCut", config().libraryCut === "on");
  const verdict = boolOption(o.verdict, "verdict", true);
  const lexical = boolOption(o.lexical, "lexical", defaultLexical(projections, abstain));
  const signal = signalOption(o.signal);
  throwIfAborted(signal, "selectLive");
  const noToken = () => invalidArgument("the live context has read no token yet: nothing to select from");
  if (live.tokens === 0) throw noToken();
  const verdictText = await liveTail(parts, liveText(context), signal);
  // BM25 reads what a live route's reads (the contents' end, at least 65,536 characters), not only
  // the verdict's tail: the request that started a long turn stays in its query
  const domainText = lexicalDomainText(parts, context, true);
  const query = bm25Query(domainText);
  throwIfAborted(signal, "selectLive");
  // checked again after each wait: a reset or a dispose may have come meanwhile
  live.checkOpen("selectLive");
  if (live.tokens === 0) throw noToken();
  const t0 = performance.now();
  const { library } = parts;
  return library.reading(async () => {
    live.checkOpen("selectLive");
    const routable = new Set(library.routable());
    if (routable.size === 0) throw new GavelError("no skill is installed (or every one has disable-model-invocation)", "EMPTY_LIBRARY");
    const scores = live.scores();
    if (scores.tokens === 0) throw noToken();
    // Columns of skills still routable (one removed since the last append is dropped).
    const kept: number[] = [];
    for (let c = 0; c < scores.handles.length; c++) if (routable.has(scores.handles[c])) kept.push(c);
    const handles = Int32Array.from(kept, (c) => scores.handles[c]);
    const ranked: Ranked[] = kept
      .map((c, column) => {
        const { id, name } = library.label(scores.handles[c]);
        return { column, skill: id, name, g: scores.g[c] };
      })
      .sort((a, b) => b.g - a.g || a.column - b.column);
    const lexicalExpert = liveExpertOf(library);
    // a small library's own cut, as a route reads it (src/route/library-cut.ts)
    const cut = abstain && ownCut ? await routeCut(parts, lexicalExpert, signal) : null;
    const d = await decide(parts, lexicalExpert, query, ranked, handles, { lexical, verdict, abstain, libraryCut: cut, domainText, verdictText, signal });
    const outcome = decisionOutcome(parts, d);
    const record = outcome.skill !== null ? await readSkillRecord(library, outcome.skill) : null;
    throwIfAborted(signal, "selectLive");
    return {
      ...outcome,
      record,
      tokens: scores.tokens,
      timings: { verdictMs: d.verdictMs, totalMs: performance.now() - t0, ...(d.lexicalMs !== undefined ? { lexicalMs: d.lexicalMs } : {}) },
    };
  }, signal);
}

/**
 * Refuses (INVALID_ARGUMENT) what is not a live context. One of this package's other build (ESM
 * beside CommonJS) is no instance of this build's class: it passes by what it has, read through its
 * own getters (one that throws, as a private field's read on a copy does, refuses).
 */
function checkLive(live: unknown): asserts live is LiveContext {
  const bad = () => invalidArgument("selectLive: live must be a LiveContext (router.live())");
  if (typeof live !== "object" || live === null) throw bad();
  try {
    const l = live as Partial<LiveContext>;
    const parts = l.routerParts as Partial<RouterParts> | undefined;
    if (typeof l.checkOpen === "function" && typeof l.scores === "function" && typeof l.tokens === "number" && parts?.projections && parts.library && parts.model) return;
  } catch {
    // a getter that throws: not a live context
  }
  throw bad();
}

/**
 * One way to inject a chosen skill: a user turn that carries its SKILL.md (front matter name and
 * description, then the body), for the host to append before restarting the agent's turn.
 */
export function skillInjection(record: Pick<SkillRecord, "name" | "description" | "body">): string {
  return `The skill "${record.name}" applies to this task. Its SKILL.md follows; use it.\n\n---\nname: ${record.name}\ndescription: ${record.description}\n---\n${record.body.trimStart()}`;
}
