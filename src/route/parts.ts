/**
 * What the route stages share: the model, the projections, the render encoder and the installed
 * library, plus the task budget they imply. {@link Router} builds it once when it opens and hands it
 * to each stage.
 *
 * @module
 */
import type { Model } from "../model/Model.js";
import type { Projections } from "../projections/projections.js";
import type { RenderEncoder, TaskKeep } from "../render/encode.js";
import type { Library } from "../bank/library.js";
import type { SkillOrigin } from "./budgets.js";

/** The parts of a {@link Router} its stages work with. */
export interface RouterParts {
  readonly model: Model;
  readonly projections: Projections;
  /** Renders and tokenizes r(s), tasks and the verdict's continuation within the skill budget. */
  readonly encoder: RenderEncoder;
  readonly library: Library;
  /** Most task tokens the verdict reads: r(s) (≤ skillBudget) + the verdict's continuation must fit the context. */
  readonly taskBudget: number;
  /**
   * Most task tokens the glance reads from a written task (or a chat read as one): its pass holds the
   * task alone, so the whole context less the task render's scaffolding (≥ taskBudget). A live
   * rollout reads at most taskBudget, as the verdict: its last 768 tokens under the decay
   * (context.ts, `LIVE_DECAY_WINDOW`).
   */
  readonly glanceBudget: number;
  /** Most tokens of a skill's text its keys are read from (RouterOpenOptions.keyBudget, resolved). */
  readonly keyBudget: number;
  /** Which part of a written task over the budget is read (RouterOpenOptions.truncate). */
  readonly keep: TaskKeep;
  /** Where the skill budget came from (`skillBudget`, or which default): a render that cannot fit it says which setting to raise. */
  readonly skillOrigin?: SkillOrigin;
  /**
   * The budgets the router takes by default: a bank entry that records no build counts as built with
   * them (its keys are kept while they match the budgets in use). Absent: such an entry counts as
   * built with the budgets in use.
   */
  readonly defaultBudgets?: { readonly skillBudget: number; readonly keyBudget: number };
}

/**
 * The two task budgets of a context: the verdict's (the context less r(s)'s skill budget and the
 * verdict's scaffolding) and the glance's (the whole context less the task render's scaffolding, never
 * under the verdict's). {@link Router} opens with these; scripts that build {@link RouterParts} by
 * hand take them from here.
 */
export function taskBudgets(contextSize: number, skillBudget: number, encoder: Pick<RenderEncoder, "verdictOverhead" | "taskOverhead">): { taskBudget: number; glanceBudget: number } {
  const taskBudget = contextSize - skillBudget - encoder.verdictOverhead;
  return { taskBudget, glanceBudget: Math.max(taskBudget, contextSize - encoder.taskOverhead) };
}
