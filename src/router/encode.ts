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
import type { Model } from "../model/Model.js";
import { ChatTemplate, renderSkill, renderTask, renderVerdict, SKILL_INTRO, type RenderableSkill } from "../render/index.js";

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
}

/** A token sequence with the task's span [taskStart, taskEnd). */
export interface EncodedTask {
  tokens: Int32Array;
  taskStart: number;
  taskEnd: number;
  truncated: boolean;
}

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

/** Token sets of the verdict's answers: every spelling that is a single token of the vocabulary. */
export interface AnswerIds {
  yes: Int32Array;
  no: Int32Array;
}

export class RenderEncoder {
  readonly template: ChatTemplate;
  readonly answers: AnswerIds;
  /** Tokens the verdict's continuation adds around the task (lead space, question, closing scaffolding). */
  readonly verdictOverhead: number;

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

  #scaffold(text: string, first: boolean): Int32Array {
    return this.model.tokenize(text, { special: true, addBos: first && this.model.info.addBos });
  }

  #plain(text: string): Int32Array {
    return this.model.tokenize(text, { special: false, addBos: false });
  }

  /** r(s) for one skill, its body cut (at a character boundary found by bisection) to fit the budget. */
  encodeSkill(skill: RenderableSkill): EncodedSkill {
    // A long body is first cut to 16 characters per budget token. When even that render overflows,
    // the longest fitting cut lies below it (fitting is monotone in the cut), so searching from there
    // finds the same cut as from the whole body, without tokenizing a 100 KB body 20 times.
    const preCut = this.skillBudget * 16;
    let enc: EncodedSkill | undefined;
    if (skill.body.length > preCut) {
      const short = { ...skill, body: skill.body.slice(0, preCut) };
      const encShort = this.#encodeSkillOnce(short);
      if (encShort.tokens.length > this.skillBudget) {
        skill = short;
        enc = encShort; // the render of the pre-cut skill, reused rather than tokenized again
      }
    }
    enc ??= this.#encodeSkillOnce(skill);
    if (enc.tokens.length <= this.skillBudget) return enc;
    // Cut the body; if the name and description alone overflow (tiny budgets), cut the description too.
    // The search starts from the cut the tokens-per-character ratio predicts, so a long body costs a
    // few tokenizations rather than a full bisection over its length.
    // Guess the cut from the body's own tokens: the render's other tokens take the rest of the
    // budget, and the characters of the first `room` body tokens are about where the cut falls. The
    // search then only confirms it, a few characters either way (a handful of tokenizations).
    const bodyTokens = this.#plain(skill.body);
    const room = this.skillBudget - (enc.tokens.length - bodyTokens.length);
    const guess = room <= 0 ? 0 : Math.min(skill.body.length - 1, this.model.detokenize(bodyTokens.subarray(0, room)).length);
    const cut =
      this.#longestFitting(skill.body.length, (n) => ({ ...skill, body: skill.body.slice(0, n) }), guess, 4) ??
      this.#longestFitting(skill.description.length, (n) => ({ ...skill, description: skill.description.slice(0, n), body: "" }));
    if (!cut) {
      throw new GavelError(`the skill's name alone overflows the token budget of ${this.skillBudget}`, "SKILL_INVALID");
    }
    return { ...cut, truncated: true };
  }

  /**
   * The longest cut n ∈ [0, max) whose render fits the budget: from `guess`, gallop to a bracket
   * (doubling steps), then bisect inside it. Fitting is monotone in n, so this finds the same n as a
   * plain bisection.
   */
  #longestFitting(max: number, variant: (n: number) => RenderableSkill, guess = -1, firstStep?: number): EncodedSkill | null {
    let lo = 0;
    let hi = max - 1;
    let best: EncodedSkill | null = null;
    if (guess > 0 && guess < max) {
      const fits = (n: number) => {
        const e = this.#encodeSkillOnce(variant(n));
        return e.tokens.length <= this.skillBudget ? e : null;
      };
      const at = fits(guess);
      let step = firstStep ?? Math.max(16, Math.floor(max / 256));
      if (at) {
        best = at;
        lo = guess + 1;
        for (let n = guess + step; n < max; n += step, step *= 2) {
          const e = fits(n);
          if (!e) {
            hi = n - 1;
            break;
          }
          best = e;
          lo = n + 1;
        }
      } else {
        hi = guess - 1;
        for (let n = guess - step; ; n -= step, step *= 2) {
          if (n <= 0) break;
          const e = fits(n);
          if (e) {
            best = e;
            lo = n + 1;
            break;
          }
          hi = n - 1;
        }
      }
    }
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const e = this.#encodeSkillOnce(variant(mid));
      if (e.tokens.length <= this.skillBudget) {
        best = e;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return best;
  }

  /** The render's text before the skill (the template's opening) and SKILL_INTRO, tokenized once. */
  #fixed: { before: string; beforeTokens: Int32Array; intro: Int32Array } | undefined;

  #encodeSkillOnce(skill: RenderableSkill): EncodedSkill {
    const r = renderSkill(this.template, skill);
    const contentStart = r.spans.header.start - SKILL_INTRO.length;
    const beforeText = r.text.slice(0, contentStart);
    // The same for every skill of a template; kept by its text, so a template whose opening did
    // depend on the skill would still be tokenized each time.
    if (this.#fixed?.before !== beforeText) this.#fixed = { before: beforeText, beforeTokens: this.#scaffold(beforeText, true), intro: this.#plain(SKILL_INTRO) };
    const before = this.#fixed.beforeTokens;
    const content = this.#plain(r.text.slice(contentStart));
    const intro = this.#fixed.intro;
    const introLen = commonPrefix(intro, content);
    const keyedEnd = commonPrefix(this.#plain(r.text.slice(contentStart, r.spans.keyed.end)), content);
    return {
      tokens: concat([before, content]),
      keyStart: before.length + introLen,
      keyEnd: before.length + Math.max(introLen, keyedEnd),
      truncated: false,
      bodyChars: skill.body.length,
    };
  }

  /** The task render (appendix G) the glance reads for a written task; at most maxTokens tokens of task. */
  encodeTask(task: string, maxTokens: number): EncodedTask {
    const r = renderTask(this.template, task);
    const before = this.#scaffold(r.before, true);
    let body = this.#plain(r.task);
    const truncated = body.length > maxTokens;
    if (truncated) body = body.subarray(0, maxTokens);
    const after = this.#scaffold(r.after, false);
    return { tokens: concat([before, body, after]), taskStart: before.length, taskEnd: before.length + body.length, truncated };
  }

  /**
   * The verdict's continuation after r(s): " {task}\n\nDoes this skill provide what that task needs?
   * Answer yes or no:" and the template's closing. The same for every skill, so it is encoded once per
   * route; taskStart/taskEnd index into it.
   */
  encodeVerdictTail(task: string, maxTokens: number): EncodedTask {
    const v = renderVerdict(this.template, { name: "n", description: "d", body: "" }, task);
    const plainEnd = v.question.indexOf("Answer yes or no:") + "Answer yes or no:".length;
    const taskTokens = this.#plain(v.task);
    if (taskTokens.length > maxTokens) {
      // Cut the task itself; the question still follows it.
      const cut = this.#plain(v.task).subarray(0, maxTokens);
      const tail = concat([cut, this.#plain(v.question.slice(0, plainEnd)), this.#scaffold(v.question.slice(plainEnd), false)]);
      return { tokens: tail, taskStart: 0, taskEnd: cut.length, truncated: true };
    }
    const plain = this.#plain(v.task + v.question.slice(0, plainEnd));
    const closing = this.#scaffold(v.question.slice(plainEnd), false);
    return { tokens: concat([plain, closing]), taskStart: 0, taskEnd: commonPrefix(taskTokens, plain), truncated: false };
  }

  /**
   * A live context as the harness renders it: chat messages through the model's template, read in
   * full (control tokens parsed), the last maxTokens tokens kept.
   */
  encodeLive(text: string, maxTokens: number): EncodedTask {
    let tokens = this.model.tokenize(text, { special: true, addBos: this.model.info.addBos });
    const truncated = tokens.length > maxTokens;
    if (truncated) tokens = tokens.subarray(tokens.length - maxTokens);
    return { tokens, taskStart: 0, taskEnd: tokens.length, truncated };
  }
}
