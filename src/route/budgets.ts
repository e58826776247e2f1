/**
 * The router's token budgets: the skill budget (what r(s) and the verdict read) and the key budget
 * (what an install keys from), resolved from Router.open's options, the projections' own and the
 * model's context, with where each came from, so a refusal says which setting to change.
 *
 * A refusal names the option to change (`GavelError.option`) and is written with the options' names
 * as a parameter (errors.ts, `optionError`): the API's names (`skillBudget`, `contextSize`) here, the
 * CLI's flags where the CLI words it (`messageNaming`).
 *
 * @module
 */
import { optionError, type GavelError, type OptionNames } from "../errors.js";
import { intOption } from "../util/validate.js";
import type { Projections } from "../projections/projections.js";
import type { EntryBuild } from "../bank/types.js";
import { KEY_BUDGET_RANGE, SKILL_BUDGET_RANGE } from "./option-keys.js";

/** Most tokens of the default skill budget drawn from the context (¾ of it, at most this). */
const RULE_CAP = 30_720;

/** The budgets an entry's keys were built with (recorded in the bank: `BankEntry.build`). */
export type BudgetBuild = EntryBuild;

/**
 * Where a skill budget came from: the `skillBudget` option, the projections' own, or the default rule:
 * ¾ of the context (`context`), at most {@link RULE_CAP} tokens (`cap`).
 */
export type SkillOrigin = "skillBudget" | "projections" | "cap" | "context";

/** A skill budget's origin in words, its options named by `name`, for a context of `ctx` tokens. */
export function originWords(origin: SkillOrigin, ctx: number, name: OptionNames): string {
  if (origin === "skillBudget") return name("skillBudget");
  if (origin === "projections") return "the projections' skill budget";
  return origin === "cap" ? `the default, at most ${RULE_CAP}` : `the default, ¾ of ${name("contextSize")} ${ctx}`;
}

/** The budgets of a router, as Router.open resolved them. */
export interface ResolvedBudgets {
  skillBudget: number;
  keyBudget: number;
  /** Where the skill budget came from ({@link originWords} says it in words). */
  skillOrigin: SkillOrigin;
  /** Whether the caller gave the skill budget (else it is a default). */
  skillGiven: boolean;
  /** The budgets the router takes with neither option given: what a bank entry without a build record counts as built with. */
  defaults: { skillBudget: number; keyBudget: number };
}

/**
 * The skill and key budgets for `o` (Router.open's options, their ranges already checked), the
 * projections and a context of `ctx` tokens.
 *
 * @throws GavelError `INVALID_ARGUMENT` when the skill budget leaves no room for a task, naming where it came from
 */
export function resolveBudgets(o: { skillBudget?: unknown; keyBudget?: unknown }, projections: Projections, ctx: number): ResolvedBudgets {
  // The projections' own budgets, where they carry them and the context holds them; else ¾ of the context
  const fromProjections = projections.skillBudget >= 16 && projections.skillBudget < ctx - 16;
  const rule = Math.min(RULE_CAP, Math.floor(ctx * 0.75));
  const defaultSkill = fromProjections ? projections.skillBudget : rule;
  const skillGiven = o.skillBudget !== undefined;
  const skillBudget = intOption(o.skillBudget, "skillBudget", SKILL_BUDGET_RANGE.min, SKILL_BUDGET_RANGE.max, defaultSkill);
  const skillOrigin: SkillOrigin = skillGiven ? "skillBudget" : fromProjections ? "projections" : rule === RULE_CAP ? "cap" : "context";
  const resolved = { skillBudget, skillOrigin, skillGiven };
  if (skillBudget >= ctx - 16) throw noRoomForTask(resolved, ctx, "no");
  const keyBudget = intOption(o.keyBudget, "keyBudget", KEY_BUDGET_RANGE.min, KEY_BUDGET_RANGE.max, Math.max(skillBudget, projections.keyBudget));
  return { ...resolved, keyBudget, defaults: { skillBudget: defaultSkill, keyBudget: Math.max(defaultSkill, projections.keyBudget) } };
}

/**
 * The refusal of a skill budget that leaves `how` ("no", "too little") room for a task in the context:
 * which setting to change, first `skillBudget` when given, else `contextSize` (`GavelError.option`).
 */
export function noRoomForTask(b: Pick<ResolvedBudgets, "skillBudget" | "skillOrigin" | "skillGiven">, ctx: number, how: "no" | "too little"): GavelError {
  const [first, second] = b.skillGiven ? ["skillBudget", "contextSize"] : ["contextSize", "skillBudget"];
  const remedy = (n: OptionNames) => (b.skillGiven ? `lower ${n(first)} or raise ${n(second)}` : `raise ${n(first)} or give a smaller ${n(second)}`);
  return optionError(
    (n) => `the skill budget of ${b.skillBudget} tokens (${originWords(b.skillOrigin, ctx, n)}) leaves ${how} room for a task in the context of ${ctx} tokens (${n("contextSize")}): ${remedy(n)}`,
    "INVALID_ARGUMENT",
    first,
  );
}

/**
 * Whether an entry built with `recorded` holds the keys a router building with `now` would compute: the
 * same skill and key budgets, and the same context where it bounded the key render (a key budget over
 * either context). An entry without a record counts as built with the router's defaults at its
 * context (`legacy`), as the bank's entries were before they recorded their budgets.
 */
export function sameBuild(recorded: BudgetBuild | undefined, now: BudgetBuild, legacy: { skillBudget: number; keyBudget: number } | undefined): boolean {
  const r = recorded ?? (legacy === undefined ? now : { ...legacy, contextSize: now.contextSize });
  if (r.skillBudget !== now.skillBudget || r.keyBudget !== now.keyBudget) return false;
  return r.contextSize === now.contextSize || now.keyBudget <= Math.min(r.contextSize, now.contextSize);
}
