/**
 * Renders to tokens. The chat template's scaffolding is trusted and tokenized with special tokens
 * parsed; everything inside the user turn (the paper's prompt text, the skill, the task) is tokenized
 * as plain text, so a skill that writes `<|im_start|>` cannot forge a control token.
 *
 * Spans (which tokens are the skill's keys, which are the task's) are found by tokenizing the span's
 * text on its own and taking the common prefix with the whole: where a BPE merge straddles the end of
 * a span, the straddling token is left out of it.
 */
import { GavelError } from "../errors.js";
import { throwIfAborted } from "../util/validate.js";
import { quoteForMessage } from "../util/regular-file.js";
import type { Model } from "../model/Model.js";
import { ChatTemplate, renderSkill, renderTask, renderVerdictTail, SKILL_INTRO, type RenderableSkill } from "./index.js";

/** r(s) as tokens: the verdict's reusable prefix, and which tokens the glance keys. */
export interface EncodedSkill {
  tokens: Int32Array;
  /** Keyed tokens are tokens[keyStart, keyEnd): "name: …\ndescription: …\n\n{body}". */
  keyStart: number;
  keyEnd: number;
  /** The body was cut to fit the token budget. */
  truncated: boolean;
  /** Characters of the body rendered (all of it unless truncated). */
  bodyChars: number;
  /** Characters of the description rendered (all of it unless even an empty body overflowed). */
  descriptionChars: number;
}

/**
 * Which part of a task longer than its budget is read: its end (the default: a request usually comes
 * last, after pasted context) or its start.
 */
export type TaskKeep = "start" | "end";

/** The first or the last `n` tokens. */
function keepPart(tokens: Int32Array, n: number, keep: TaskKeep): Int32Array {
  return keep === "start" ? tokens.subarray(0, n) : tokens.subarray(tokens.length - n);
}

/** A token sequence with the task's span [taskStart, taskEnd). */
export interface EncodedTask {
  tokens: Int32Array;
  taskStart: number;
  taskEnd: number;
  truncated: boolean;
  /** The task's tokens before any cut (taskEnd − taskStart when it was not cut). */
  wholeTokens: number;
}

/**
 * Texts of at least this many characters are tokenized off the JavaScript thread when a task is
 * encoded asynchronously; shorter ones (the scaffolding, an everyday request) on it, where a
 * tokenization costs microseconds and a round trip through the thread pool would cost more.
 */
const ASYNC_TOKENIZE_CHARS = 16_384;

function concat(parts: Int32Array[]): Int32Array {
  const out = new Int32Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

function commonPrefix(a: Int32Array, b: Int32Array): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/**
 * Tokens by which joining two texts can change their token counts at the seam, at most; a margin on
 * the probe that decides a body overflows (llama.cpp's tokenizers merge within a few characters of
 * a seam, so one or two tokens would do).
 */
const SEAM_SLACK = 16;

/** A text the skill encoding asks to have tokenized (Model.tokenize's arguments). */
interface TokenizeStep {
  text: string;
  special: boolean;
  addBos: boolean;
}

/** A skill's render and its content's tokens (SKILL_INTRO onwards); the cut search's probes keep them. */
interface RenderedContent {
  text: string;
  contentStart: number;
  keyedEnd: number;
  fixed: { beforeTokens: Int32Array; intro: Int32Array };
  content: Int32Array;
}

/** Token sets of the verdict's answers: every spelling that is a single token of the vocabulary. */
export interface AnswerIds {
  yes: Int32Array;
  no: Int32Array;
}

/**
 * SKILL_INVALID: the render of skill `name` without its body (`tokens`) overflows the skill budget
 * even with its description cut away. It refuses the skill budget (`GavelError.option` is
 * `skillBudget`): a router adds which setting to raise (route/install.ts).
 */
function budgetOverflow(name: string, budget: number, tokens: number): GavelError {
  const message = `skill ${quoteForMessage(name)}: its name and the render's scaffolding alone overflow the skill budget of ${budget} tokens (its render without a body takes ${tokens})`;
  return new GavelError(message, "SKILL_INVALID", { option: "skillBudget" });
}

export class RenderEncoder {
  readonly template: ChatTemplate;
  readonly answers: AnswerIds;
  /** Tokens the verdict's continuation adds around the task (lead space, question, closing scaffolding). */
  readonly verdictOverhead: number;
  /** Tokens the glance's task render adds around the task (the template's scaffolding, BOS). */
  readonly taskOverhead: number;

  constructor(
    readonly model: Model,
    /** Most tokens of r(s); the body is cut to fit. */
    readonly skillBudget: number,
  ) {
    this.template = new ChatTemplate({ template: model.info.chatTemplate ?? null });
    this.answers = {
      yes: this.#singleTokens(["yes", "Yes", "YES"]),
      no: this.#singleTokens(["no", "No", "NO"]),
    };
    const probe = this.encodeVerdictTail("x", 1 << 20);
    // +2: a cut task may tokenize differently at its end than the probe's one-word task
    this.verdictOverhead = probe.tokens.length - (probe.taskEnd - probe.taskStart) + 2;
    const task = this.encodeTask("x", 1 << 20);
    this.taskOverhead = task.tokens.length - (task.taskEnd - task.taskStart) + 2;
  }

  #singleTokens(words: string[]): Int32Array {
    const ids = new Set<number>();
    for (const w of words) {
      for (const s of [w, ` ${w}`]) {
        const t = this.model.tokenize(s, { special: false, addBos: false });
        if (t.length === 1) ids.add(t[0]);
      }
    }
    return Int32Array.from([...ids].sort((a, b) => a - b));
  }

  /** r(s) for one skill, its body cut (at a character boundary found by bisection) to fit the budget. */
  encodeSkill(skill: RenderableSkill): EncodedSkill {
    return this.#runSync(this.#skillSteps(skill));
  }

  /**
   * {@link encodeSkill} with its tokenizations off the JS thread (Model.tokenizeAsync): the same
   * result, while the JS thread serves other work, e.g. an install's other skills in flight.
   */
  encodeSkillAsync(skill: RenderableSkill): Promise<EncodedSkill> {
    return this.#runAsync(this.#skillSteps(skill));
  }

  /**
   * r(s) with the description and body cut where an earlier {@link encodeSkill} cut them (its
   * descriptionChars and bodyChars): the same tokens, without searching for the cut again. Null when
   * the cut does not apply to this skill or its render does not fit this encoder's budget.
   */
  encodeSkillCut(skill: RenderableSkill, cut: { descriptionChars: number; bodyChars: number }): EncodedSkill | null {
    return this.#runSync(this.#cutSteps(skill, cut));
  }

  /** {@link encodeSkillCut} with its tokenizations off the JS thread. */
  encodeSkillCutAsync(skill: RenderableSkill, cut: { descriptionChars: number; bodyChars: number }): Promise<EncodedSkill | null> {
    return this.#runAsync(this.#cutSteps(skill, cut));
  }

  *#cutSteps(skill: RenderableSkill, cut: { descriptionChars: number; bodyChars: number }): Generator<TokenizeStep, EncodedSkill | null, Int32Array> {
    const { descriptionChars: d, bodyChars: b } = cut;
    if (!(Number.isSafeInteger(d) && Number.isSafeInteger(b) && d >= 0 && b >= 0 && d <= skill.description.length && b <= skill.body.length)) return null;
    const e = yield* this.#onceSteps({ ...skill, description: skill.description.slice(0, d), body: skill.body.slice(0, b) });
    if (e.tokens.length > this.skillBudget) return null;
    return { ...e, truncated: d < skill.description.length || b < skill.body.length };
  }

  // The skill encoding is written once, as generators that yield each text to tokenize and receive
  // its tokens; #runSync answers with Model.tokenize, #runAsync with Model.tokenizeAsync.

  #runSync<T>(steps: Generator<TokenizeStep, T, Int32Array>): T {
    let r = steps.next();
    while (!r.done) r = steps.next(this.model.tokenize(r.value.text, { special: r.value.special, addBos: r.value.addBos }));
    return r.value;
  }

  /**
   * Answers each step with Model.tokenizeAsync, or on this thread for a text under `syncBelow`
   * characters. With a signal, an abort rejects at once with ABORTED (Model.tokenizeAsync's signal: a
   * tokenization under way runs to its end on its thread; its result is dropped).
   */
  async #runAsync<T>(steps: Generator<TokenizeStep, T, Int32Array>, syncBelow = 0, signal?: AbortSignal): Promise<T> {
    let r = steps.next();
    while (!r.done) {
      const { text, special, addBos } = r.value;
      throwIfAborted(signal, "tokenize");
      const tokens = text.length < syncBelow
        ? this.model.tokenize(text, { special, addBos })
        : await this.model.tokenizeAsync(text, { special, addBos, signal });
      r = steps.next(tokens);
    }
    return r.value;
  }

  *#scaffoldStep(text: string, first: boolean): Generator<TokenizeStep, Int32Array, Int32Array> {
    return yield { text, special: true, addBos: first && this.model.info.addBos };
  }

  *#plainStep(text: string): Generator<TokenizeStep, Int32Array, Int32Array> {
    return yield { text, special: false, addBos: false };
  }

  *#skillSteps(skill: RenderableSkill): Generator<TokenizeStep, EncodedSkill, Int32Array> {
    // Tokenizing is nearly all of a render's cost (llama.cpp's tokenizer), so a long body is never
    // tokenized whole. The render without a body gives the scaffolding's tokens and the room left for
    // the body; a probe of the body's first characters that holds more tokens than the room (plus a
    // margin for the seams) proves the cut lies inside it and says about where (the characters of its
    // first `room` tokens). A search for the longest fitting cut then confirms it exactly, a few
    // tokenizations of the render either way. Probes start at 8 characters a token of room (prose and
    // code take fewer) and grow 4× while the body has more.
    const bare = yield* this.#renderSteps({ ...skill, body: "" });
    const room = this.skillBudget - bare.fixed.beforeTokens.length - bare.content.length;
    const bodyCut = (n: number) => ({ ...skill, body: skill.body.slice(0, n) });
    if (room < 0) {
      // Even the name and description overflow (tiny budgets): no body, and the description cut.
      const cut = yield* this.#longestFitting(skill.description.length, skill.description, (n) => ({ ...skill, description: skill.description.slice(0, n), body: "" }));
      if (!cut) throw budgetOverflow(skill.name, this.skillBudget, bare.fixed.beforeTokens.length + bare.content.length);
      return { ...cut, truncated: true };
    }
    for (let probeChars = Math.max(64, room * 8); probeChars < skill.body.length; probeChars *= 4) {
      const probe = yield* this.#plainStep(skill.body.slice(0, probeChars));
      // Joining the body to its scaffolding changes a token or two at the seams.
      if (probe.length > room + SEAM_SLACK) {
        const guess = Math.min(probeChars - 1, this.model.detokenize(probe.subarray(0, room)).length);
        const cut = yield* this.#longestFitting(probeChars, skill.body, bodyCut, guess, 4);
        if (cut) return { ...cut, truncated: true };
        break;
      }
    }
    // A body short enough to tokenize whole.
    const enc = yield* this.#onceSteps(skill);
    if (enc.tokens.length <= this.skillBudget) return enc;
    const bodyTokens = yield* this.#plainStep(skill.body);
    const bodyRoom = this.skillBudget - (enc.tokens.length - bodyTokens.length);
    const guess = bodyRoom <= 0 ? 0 : Math.min(skill.body.length - 1, this.model.detokenize(bodyTokens.subarray(0, bodyRoom)).length);
    // n = 0 (no body) fits: room ≥ 0 above
    const cut = (yield* this.#longestFitting(skill.body.length, skill.body, bodyCut, guess, 4))!;
    return { ...cut, truncated: true };
  }

  /**
   * The longest cut n ∈ [0, max) whose render fits the budget: from `guess`, gallop to a bracket
   * (doubling steps), then bisect inside it. Fitting is monotone in n, so this finds the same n as a
   * plain bisection. A probe tokenizes the render's content once; the cut found reuses its probe. A
   * cut inside a surrogate pair of `text` (the text cut) steps back before the pair: a lone half
   * would reach the tokenizer as U+FFFD.
   */
  *#longestFitting(max: number, text: string, variant: (n: number) => RenderableSkill, guess = -1, firstStep?: number): Generator<TokenizeStep, EncodedSkill | null, Int32Array> {
    let lo = 0;
    let hi = max - 1;
    let best = -1;
    const probed = new Map<number, RenderedContent>();
    const self = this;
    function* fits(n: number): Generator<TokenizeStep, boolean, Int32Array> {
      const c = yield* self.#renderSteps(variant(n));
      probed.set(n, c);
      return c.fixed.beforeTokens.length + c.content.length <= self.skillBudget;
    }
    if (guess > 0 && guess < max) {
      let step = firstStep ?? Math.max(16, Math.floor(max / 256));
      if (yield* fits(guess)) {
        best = guess;
        lo = guess + 1;
        for (let n = guess + step; n < max; n += step, step *= 2) {
          if (!(yield* fits(n))) {
            hi = n - 1;
            break;
          }
          best = n;
          lo = n + 1;
        }
      } else {
        hi = guess - 1;
        for (let n = guess - step; ; n -= step, step *= 2) {
          if (n <= 0) break;
          if (yield* fits(n)) {
            best = n;
            lo = n + 1;
            break;
          }
          hi = n - 1;
        }
      }
    }
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (yield* fits(mid)) {
        best = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    if (best < 0) return null;
    // fitting is monotone, so the cut before the pair fits too
    if (insidePair(text, best)) best--;
    // the cut's render was tokenized by its probe (only a bisection that never probed n = 0 lacks it)
    const cut = variant(best);
    return yield* this.#encodeRenderedSteps(probed.get(best) ?? (yield* this.#renderSteps(cut)), cut);
  }

  /** The render's text before the skill (the template's opening) and SKILL_INTRO, tokenized once. */
  #fixed: { before: string; beforeTokens: Int32Array; intro: Int32Array } | undefined;

  /** The same for every skill of a template; kept by its text, so a template whose opening did depend on the skill would still be tokenized each time. */
  *#fixedSteps(beforeText: string): Generator<TokenizeStep, { before: string; beforeTokens: Int32Array; intro: Int32Array }, Int32Array> {
    if (this.#fixed?.before !== beforeText) {
      const beforeTokens = yield { text: beforeText, special: true, addBos: this.model.info.addBos };
      const intro = yield* this.#plainStep(SKILL_INTRO);
      this.#fixed = { before: beforeText, beforeTokens, intro };
    }
    return this.#fixed;
  }

  *#onceSteps(skill: RenderableSkill): Generator<TokenizeStep, EncodedSkill, Int32Array> {
    return yield* this.#encodeRenderedSteps(yield* this.#renderSteps(skill), skill);
  }

  /** r(s) rendered, and the tokens of its content (SKILL_INTRO onwards), tokenized as plain text. */
  *#renderSteps(skill: RenderableSkill): Generator<TokenizeStep, RenderedContent, Int32Array> {
    const r = renderSkill(this.template, skill);
    const contentStart = r.spans.header.start - SKILL_INTRO.length;
    const fixed = yield* this.#fixedSteps(r.text.slice(0, contentStart));
    const content = yield* this.#plainStep(r.text.slice(contentStart));
    return { text: r.text, contentStart, keyedEnd: r.spans.keyed.end, fixed, content };
  }

  *#encodeRenderedSteps(c: RenderedContent, rendered: RenderableSkill): Generator<TokenizeStep, EncodedSkill, Int32Array> {
    const before = c.fixed.beforeTokens;
    const introLen = commonPrefix(c.fixed.intro, c.content);
    const keyedEnd = commonPrefix(yield* this.#plainStep(c.text.slice(c.contentStart, c.keyedEnd)), c.content);
    return {
      tokens: concat([before, c.content]),
      keyStart: before.length + introLen,
      keyEnd: before.length + Math.max(introLen, keyedEnd),
      truncated: false,
      bodyChars: rendered.body.length,
      descriptionChars: rendered.description.length,
    };
  }

  /** The task render (appendix G) the glance reads for a written task; at most maxTokens tokens of task. */
  encodeTask(task: string, maxTokens: number, keep: TaskKeep = "end"): EncodedTask {
    return this.#runSync(this.#taskSteps(task, maxTokens, keep));
  }

  /**
   * {@link encodeTask} with a long task tokenized off the JavaScript thread, so a task of megabytes
   * neither blocks the event loop nor outlasts its signal.
   */
  encodeTaskAsync(task: string, maxTokens: number, keep: TaskKeep = "end", signal?: AbortSignal): Promise<EncodedTask> {
    return this.#runAsync(this.#taskSteps(task, maxTokens, keep), ASYNC_TOKENIZE_CHARS, signal);
  }

  *#taskSteps(task: string, maxTokens: number, keep: TaskKeep): Generator<TokenizeStep, EncodedTask, Int32Array> {
    const r = renderTask(this.template, task);
    const before = yield* this.#scaffoldStep(r.before, true);
    let body = yield* this.#plainStep(r.task);
    const wholeTokens = body.length;
    const truncated = body.length > maxTokens;
    if (truncated) body = keepPart(body, maxTokens, keep);
    const after = yield* this.#scaffoldStep(r.after, false);
    return { tokens: concat([before, body, after]), taskStart: before.length, taskEnd: before.length + body.length, truncated, wholeTokens };
  }

  /**
   * The verdict's continuation after r(s): " {task}\n\nDoes this skill provide what that task needs?
   * Answer yes or no:" (plain text) and the template's closing (scaffolding), rendered directly
   * ({@link renderVerdictTail}). The same for every skill, so it is encoded once per route;
   * taskStart/taskEnd index into it. A task over maxTokens tokens is cut; the question still follows it.
   */
  encodeVerdictTail(task: string, maxTokens: number, keep: TaskKeep = "end"): EncodedTask {
    return this.#runSync(this.#verdictTailSteps(task, maxTokens, keep));
  }

  /** {@link encodeVerdictTail} with a long task tokenized off the JavaScript thread. */
  encodeVerdictTailAsync(task: string, maxTokens: number, keep: TaskKeep = "end", signal?: AbortSignal): Promise<EncodedTask> {
    return this.#runAsync(this.#verdictTailSteps(task, maxTokens, keep), ASYNC_TOKENIZE_CHARS, signal);
  }

  *#verdictTailSteps(task: string, maxTokens: number, keep: TaskKeep): Generator<TokenizeStep, EncodedTask, Int32Array> {
    const v = renderVerdictTail(this.template, task);
    const taskTokens = yield* this.#plainStep(v.task);
    const closing = yield* this.#scaffoldStep(v.closing, false);
    if (taskTokens.length > maxTokens) {
      const cut = keepPart(taskTokens, maxTokens, keep);
      const question = yield* this.#plainStep(v.question);
      return { tokens: concat([cut, question, closing]), taskStart: 0, taskEnd: cut.length, truncated: true, wholeTokens: taskTokens.length };
    }
    // Task and question tokenized together, as one plain text: the task's span is their common prefix.
    const plain = yield* this.#plainStep(v.task + v.question);
    const taskEnd = commonPrefix(taskTokens, plain);
    return { tokens: concat([plain, closing]), taskStart: 0, taskEnd, truncated: false, wholeTokens: taskEnd };
  }

  /**
   * A live context as the harness renders it: chat messages through the model's template, read in
   * full (control tokens parsed), the last maxTokens tokens kept.
   */
  encodeLive(text: string, maxTokens: number): EncodedTask {
    return this.#runSync(this.#liveSteps(text, maxTokens));
  }

  /**
   * {@link encodeLive} with a long context tokenized off the JavaScript thread; `bos` false: a text
   * that does not start the context (no BOS before it, whatever the model adds).
   */
  encodeLiveAsync(text: string, maxTokens: number, signal?: AbortSignal, bos = true): Promise<EncodedTask> {
    return this.#runAsync(this.#liveSteps(text, maxTokens, bos), ASYNC_TOKENIZE_CHARS, signal);
  }

  *#liveSteps(text: string, maxTokens: number, bos = true): Generator<TokenizeStep, EncodedTask, Int32Array> {
    let tokens = yield { text, special: true, addBos: bos && this.model.info.addBos };
    const wholeTokens = tokens.length;
    const truncated = tokens.length > maxTokens;
    if (truncated) tokens = tokens.subarray(tokens.length - maxTokens);
    return { tokens, taskStart: 0, taskEnd: tokens.length, truncated, wholeTokens };
  }
}

/** Whether cutting `text` at `n` splits a surrogate pair (a high surrogate before, a low one after). */
export function insidePair(text: string, n: number): boolean {
  if (n <= 0 || n >= text.length) return false;
  const hi = text.charCodeAt(n - 1);
  const lo = text.charCodeAt(n);
  return hi >= 0xd800 && hi <= 0xdbff && lo >= 0xdc00 && lo <= 0xdfff;
}
