/**
 * The three appendix G templates GAVEL feeds the backbone, wrapped in the model's chat template in
 * non-thinking mode, returned as text segments whose boundaries the caller maps to tokens.
 *
 * Reading of the LaTeX (appendix G, file appendix/07_prompts.tex). Inside each box `\\` is a line break
 * ("\n"), a blank source line is a paragraph break ("\n\n"), and a source line wrapped inside a paragraph
 * is a space. So the user content is:
 *
 *   skill render r(s):  "Here is an agent skill (SKILL.md):\nname: {name}\ndescription: {description}"
 *                       + "\n\n{body}\n\nHere is a user task:"
 *   verdict:            r(s) content + " {task}\n\nDoes this skill provide what that task needs? Answer yes or no:"
 *                       ("Answer yes or\nno:" in the source is one wrapped line: a space, not a newline)
 *   task render:        "{task}"
 *
 * The control tokens shown in the boxes (`<|im_start|>user\n` before, `<|im_end|>\n<|im_start|>assistant\n
 * <think>\n\n</think>` after) are exactly what Qwen3's template emits with `enable_thinking=false`, plus the
 * "\n\n" it prints after `</think>` (the box ends there). We do not hard-code them: the model's own template
 * is rendered and the segments are cut out of its output.
 *
 * r(s) has no closing scaffolding: it stops at "Here is a user task:", and the verdict continues it token
 * for token ("The continuation extends r(s) token for token"), so the verdict is returned as
 * skillPrefix (= r(s)) + task + question.
 *
 * Normalisation choices (documented so the caller can rely on them): the task is trimmed (the verdict puts
 * exactly one space before it and a paragraph break after it); a skill with an empty body drops the body
 * paragraph ("description: …\n\nHere is a user task:") instead of printing two blank lines; name,
 * description and body are used as {@link Skill} normalises them on load.
 */
import { invalidArgument } from "../errors.js";
import { describeValue } from "../util/validate.js";
import type { Skill } from "../skills/types.js";
import { ChatTemplate, type ChatMessage } from "./template.js";

/** A half-open range [start, end) of UTF-16 code-unit offsets into a rendered string. */
export interface TextSpan {
  start: number;
  end: number;
}

/**
 * Where the skill's own text sits inside r(s). The glance keys every token of `keyed`
 * ("name: …\ndescription: …\n\n{body}"), not the chat scaffolding, not the
 * "Here is an agent skill (SKILL.md):" line, not the trailing "Here is a user task:".
 */
export interface SkillSpans {
  /** "name: {name}\ndescription: {description}" */
  header: TextSpan;
  /** "{body}" (empty, at the end of the header, when the body is empty) */
  body: TextSpan;
  /** header through body, including the blank line between them */
  keyed: TextSpan;
}

/** The skill render r(s). */
export interface SkillRender {
  /** r(s): chat scaffolding + "Here is an agent skill (SKILL.md):\n…\n\nHere is a user task:" */
  text: string;
  spans: SkillSpans;
}

/** The task render, split so the caller knows which tokens are the task's. */
export interface TaskRender {
  /** Scaffolding before the task, e.g. "<|im_start|>user\n". */
  before: string;
  /** The task text as the template printed it. */
  task: string;
  /** Scaffolding after it, e.g. "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n". */
  after: string;
  /** before + task + after */
  text: string;
}

/** The verdict continuation as segments: skillPrefix + task + question. */
export interface VerdictRender {
  /** Exactly r(s) (the same string as {@link SkillRender.text}); ends with "Here is a user task:". */
  skillPrefix: string;
  /** " " + task: the span L averages over. */
  task: string;
  /**
   * "\n\nDoes this skill provide what that task needs? Answer yes or no:" + the template's closing, e.g.
   * "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"; V is read after its last token.
   */
  question: string;
  /** skillPrefix + task + question */
  text: string;
  /** The skill's spans inside skillPrefix (same as in {@link SkillRender.spans}). */
  spans: SkillSpans;
}

/**
 * The verdict's continuation after r(s), rendered without any skill: what follows
 * {@link VerdictRender.skillPrefix} for every skill alike, as plain text (task, question) and the
 * template's scaffolding (closing). task + question + closing equals {@link VerdictRender.task} +
 * {@link VerdictRender.question}.
 */
export interface VerdictTailRender {
  /** " " + task: the span L averages over. */
  task: string;
  /** {@link VERDICT_QUESTION}, plain text like the task. */
  question: string;
  /** The template's closing of the user turn, e.g. "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n". */
  closing: string;
}

/** The texts the renders need; a {@link Skill} has them. */
export type RenderableSkill = Pick<Skill, "name" | "description" | "body">;

export const SKILL_INTRO = "Here is an agent skill (SKILL.md):\n";
export const TASK_LEAD = "\n\nHere is a user task:";
export const VERDICT_QUESTION = "\n\nDoes this skill provide what that task needs? Answer yes or no:";

/** Every GAVEL render is a single user turn, generation prompt added, thinking off. */
const RENDER_OPTS = { addGenerationPrompt: true, enableThinking: false } as const;

/**
 * Renders r(s), the skill render the glance keys at installation.
 * @throws GavelError `INVALID_ARGUMENT` if the template rewrites message content so segments cannot be found.
 */
export function renderSkill(template: ChatTemplate, skill: RenderableSkill): SkillRender {
  // r(s) is the verdict cut after "Here is a user task:"; any task works as filler.
  const v = verdictSegments(template, skill, "");
  return { text: v.skillPrefix, spans: v.spans };
}

/**
 * Renders the verdict continuation for (skill, task) as segments; `skillPrefix` equals
 * {@link renderSkill}'s text, so a prefix cache of r(s) serves the verdict.
 * @throws GavelError `INVALID_ARGUMENT` for an empty task or a template that rewrites content.
 */
export function renderVerdict(template: ChatTemplate, skill: RenderableSkill, task: string): VerdictRender {
  const t = checkTask(task);
  return verdictSegments(template, skill, t);
}

/**
 * Renders the verdict's continuation after r(s) directly from its pieces: the task and
 * {@link VERDICT_QUESTION} as written, then the template's closing of the user turn. The closing is
 * the template's alone (it does not depend on the content), so it is rendered once per template.
 * @throws GavelError `INVALID_ARGUMENT` for an empty task or a template that rewrites content.
 */
export function renderVerdictTail(template: ChatTemplate, task: string): VerdictTailRender {
  const t = checkTask(task);
  return { task: ` ${t}`, question: VERDICT_QUESTION, closing: userTurnClosing(template) };
}

/** Each template's closing of a user turn, rendered once. */
const closings = new WeakMap<ChatTemplate, string>();

/**
 * The scaffolding a template prints after a user message's content (generation prompt added,
 * thinking off). The question stands in as the content: it neither starts nor ends with whitespace,
 * so a template that trims content prints it as it prints the end of a verdict.
 */
function userTurnClosing(template: ChatTemplate): string {
  let closing = closings.get(template);
  if (closing === undefined) {
    const { text, cuts } = renderWithCuts(template, [VERDICT_QUESTION.trimStart()]);
    closing = text.slice(cuts[1]);
    closings.set(template, closing);
  }
  return closing;
}

/**
 * Renders the task render the glance reads on written-task benchmarks.
 * @throws GavelError `INVALID_ARGUMENT` for an empty task or a template that rewrites content.
 */
export function renderTask(template: ChatTemplate, task: string): TaskRender {
  const t = checkTask(task);
  const { text, cuts } = renderWithCuts(template, [t]);
  const [a, b] = cuts;
  return { before: text.slice(0, a), task: text.slice(a, b), after: text.slice(b), text };
}

function checkTask(task: string): string {
  if (typeof task !== "string") throw invalidArgument("task must be a string");
  const t = task.replace(/\r\n?/g, "\n").trim();
  if (t === "") throw invalidArgument("task is empty");
  return t;
}

function verdictSegments(template: ChatTemplate, skill: RenderableSkill, task: string): VerdictRender {
  if (typeof skill !== "object" || skill === null) throw invalidArgument(`skill must be an object with name, description and body, got ${describeValue(skill)}`);
  for (const k of ["name", "description", "body"] as const) {
    if (typeof skill[k] !== "string") throw invalidArgument(`skill.${k} must be a string`);
  }
  const hasBody = skill.body !== "";
  // Pieces between cut points; cuts fall at: header start | header end | body start | body end |
  // end of r(s) | end of task. A template sees the content with markers at these points only, never at
  // its edges, so templates that test how content starts or ends behave as for the plain text.
  const pieces = [
    SKILL_INTRO,
    `name: ${skill.name}\ndescription: ${skill.description}`,
    hasBody ? "\n\n" : "",
    skill.body,
    TASK_LEAD,
    ` ${task}`,
    VERDICT_QUESTION,
  ];
  const { text, cuts } = renderWithCuts(template, pieces, true);
  const [, headerStart, headerEnd, bodyStart, bodyEnd, prefixEnd, taskEnd] = cuts;
  const spans: SkillSpans = {
    header: { start: headerStart, end: headerEnd },
    body: hasBody ? { start: bodyStart, end: bodyEnd } : { start: headerEnd, end: headerEnd },
    keyed: { start: headerStart, end: hasBody ? bodyEnd : headerEnd },
  };
  const skillPrefix = text.slice(0, prefixEnd);
  return {
    skillPrefix,
    task: text.slice(prefixEnd, taskEnd),
    question: text.slice(taskEnd),
    text,
    spans,
  };
}

/**
 * Renders `pieces.join("")` as one user message and returns the rendered text with the offsets of the
 * boundaries between pieces (plus the start of the first and the end of the last piece).
 *
 * Boundaries are found by rendering once with sentinel strings (private-use characters plus a nonce
 * absent from the content) inserted between the pieces, locating and removing them, and checking that
 * the result equals a plain render. This keeps the model's template the single source of the
 * scaffolding without assuming its shape, and fails loudly if a template rewrites content (e.g. trims or
 * escapes it) in a way that moves the boundaries.
 *
 * @param internalOnly  put sentinels only between pieces, not before the first / after the last
 *   (the content's edges are then located as the bounds of the whole rendered content by difference).
 */
function renderWithCuts(template: ChatTemplate, pieces: string[], internalOnly = false): { text: string; cuts: number[] } {
  if (typeof template !== "object" || template === null || typeof (template as { render?: unknown }).render !== "function") {
    throw invalidArgument(`template must be a ChatTemplate, got ${describeValue(template)}`);
  }
  const content = pieces.join("");
  let nonce = 0;
  const mark = (i: number) => `\uE000gavel${nonce}:${i}\uE001`;
  while (content.includes(`\uE000gavel${nonce}:`)) nonce++;

  let marked = "";
  const markers: string[] = [];
  for (let i = 0; i <= pieces.length; i++) {
    const edge = i === 0 || i === pieces.length;
    if (!(edge && internalOnly)) {
      markers.push(mark(i));
      marked += mark(i);
    } else {
      markers.push("");
    }
    if (i < pieces.length) marked += pieces[i];
  }
  const messages: ChatMessage[] = [{ role: "user", content: marked }];
  const raw = template.render(messages, RENDER_OPTS);
  const plain = template.render([{ role: "user", content }], RENDER_OPTS);

  // Locate each marker, in order, exactly once; build the text without them.
  let text = "";
  let from = 0;
  const cuts: number[] = [];
  for (const m of markers) {
    if (m === "") {
      cuts.push(-1);
      continue;
    }
    const at = raw.indexOf(m, from);
    if (at === -1 || raw.indexOf(m, at + m.length) !== -1) {
      throw invalidArgument("the chat template does not print the message content verbatim; cannot locate render segments");
    }
    text += raw.slice(from, at);
    cuts.push(text.length);
    from = at + m.length;
  }
  text += raw.slice(from);
  if (text !== plain) {
    throw invalidArgument("the chat template renders content differently around segment boundaries; cannot split the render");
  }
  if (internalOnly) {
    // Content edges by difference: the content is verbatim between the first and last internal cut.
    cuts[0] = cuts[1] - pieces[0].length;
    cuts[pieces.length] = cuts[pieces.length - 1] + pieces[pieces.length - 1].length;
    if (text.slice(cuts[0], cuts[1]) !== pieces[0] || text.slice(cuts[pieces.length - 1], cuts[pieces.length]) !== pieces[pieces.length - 1]) {
      throw invalidArgument("the chat template does not print the message content verbatim; cannot locate render segments");
    }
  }
  return { text, cuts };
}

/** Converts a {@link TextSpan} of `text` to UTF-8 byte offsets (what llama.cpp token pieces measure). */
export function toUtf8Span(text: string, span: TextSpan): TextSpan {
  const start = Buffer.byteLength(text.slice(0, span.start), "utf8");
  return { start, end: start + Buffer.byteLength(text.slice(span.start, span.end), "utf8") };
}
