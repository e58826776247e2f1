/**
 * The verdict (paper, section 3.4): for each shortlisted skill, one pass over r(s) + task + question
 * with r(s) as a KV-cached prefix, read out as L (the task's mean log-likelihood given the skill) and
 * V (the log-odds of yes over no to "Does this skill provide what that task needs?").
 *
 * @module
 */
import { meanLogLikelihood, yesNoLogOdds } from "./ruling.js";
import type { RouterParts } from "./parts.js";

/** A shortlisted skill: its id, name and glance vote. */
export interface Shortlisted {
  skill: string;
  name: string;
  g: number;
}

/** A shortlisted skill with the verdict's read-outs. */
export interface Judged extends Shortlisted {
  L: number;
  V: number;
}

/** The token sequences the verdict scores for one (context, skill), as {@link verdictInputsOf} gives them. */
export interface VerdictInputs {
  /** r(s), the KV-cached prefix. */
  prefix: Int32Array;
  /** Task, question and closing scaffolding; the task spans [taskStart, taskEnd). */
  continuation: Int32Array;
  taskStart: number;
  taskEnd: number;
  /** The answer spellings' token ids. */
  yes: Int32Array;
  no: Int32Array;
}

/**
 * r(s) for the verdict: the render install made (its recorded cut, so the verdict resumes the same
 * pass, whatever the encoder's cut search would pick now); cut afresh for banks that predate the
 * record, or when that render exceeds this router's skillBudget.
 */
export async function skillPrefix({ library, encoder }: RouterParts, id: string): Promise<Int32Array> {
  const entry = library.entry(id);
  const skill = await library.text(entry);
  // tokenized off the JS thread: a verdict renders up to 20 shortlisted skills at once
  const atCut = entry.renderCut ? await encoder.encodeSkillCutAsync(skill, entry.renderCut) : null;
  return (atCut ?? (await encoder.encodeSkillAsync(skill))).tokens;
}

/** The yes spellings' token ids, then the no spellings'. */
function readIds({ encoder }: RouterParts): Int32Array {
  const { yes, no } = encoder.answers;
  const ids = new Int32Array(yes.length + no.length);
  ids.set(yes, 0);
  ids.set(no, yes.length);
  return ids;
}

/** One verdict pass per candidate (prefixes KV-cached), read out as L and V; in the candidates' order. */
export async function judge(parts: RouterParts, taskText: string, candidates: readonly Shortlisted[], signal?: AbortSignal): Promise<Judged[]> {
  if (candidates.length === 0) return [];
  const { model, encoder, taskBudget } = parts;
  const tail = await encoder.encodeVerdictTailAsync(taskText, taskBudget, parts.keep, signal);
  const prefixes = await Promise.all(candidates.map((c) => skillPrefix(parts, c.skill)));
  const nYes = encoder.answers.yes.length;
  const scores = await model.scoreMany(prefixes, tail.tokens, { readIds: readIds(parts), signal });
  return candidates.map((c, i) => ({
    skill: c.skill,
    name: c.name,
    g: c.g,
    L: meanLogLikelihood(scores[i].logprobs, tail.taskStart, tail.taskEnd),
    V: yesNoLogOdds(scores[i].final, nYes),
  }));
}

/** The exact inputs {@link judge} scores for `taskText` and the installed skill `id`. */
export async function verdictInputsOf(parts: RouterParts, taskText: string, id: string): Promise<VerdictInputs> {
  const tail = parts.encoder.encodeVerdictTail(taskText, parts.taskBudget, parts.keep);
  return { prefix: await skillPrefix(parts, id), continuation: tail.tokens, taskStart: tail.taskStart, taskEnd: tail.taskEnd, ...parts.encoder.answers };
}
