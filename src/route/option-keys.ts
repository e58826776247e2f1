/**
 * The keys of the public options objects, one record each: typed `Record<keyof Options, true>`, so
 * the compiler refuses a record that misses an option or names one the type lacks, and
 * {@link optionsObject} refuses a key a caller misspelt; and the Router's own option readers.
 *
 * @module
 */
import { invalidArgument } from "../errors.js";
import { MAX_BUDGET } from "../projections/meta.js";
import { config } from "../config.js";
import { Projections } from "../projections/projections.js";
import { boolOption, describeValue, enumOption, intOption, optionsObject } from "../util/validate.js";
import type { GlanceOptions, InstallOptions, RankOptions, RouteOptions, RouterOpenOptions } from "./types.js";

/** The bounds of {@link RouterOpenOptions.skillBudget} (Router.open refuses a value outside them, and one that leaves no room for a task). */
export const SKILL_BUDGET_RANGE = { min: 16, max: 1 << 22 } as const;
/** The bounds of {@link RouterOpenOptions.keyBudget}. */
export const KEY_BUDGET_RANGE = { min: 16, max: MAX_BUDGET } as const;

export const ROUTER_OPEN_KEYS: Record<keyof RouterOpenOptions, true> = {
  projections: true, bankDir: true, skillBudget: true, keyBudget: true, truncate: true, create: true, readOnly: true, keyType: true,
};
export const INSTALL_KEYS: Record<keyof InstallOptions, true> = {
  offset: true, limit: true, onProgress: true, signal: true, commitEvery: true, concurrency: true, statesCache: true, admit: true,
};
export const GLANCE_KEYS: Record<keyof GlanceOptions, true> = { excludeFlagged: true, excludeSources: true, topK: true, live: true, signal: true };
export const ROUTE_KEYS: Record<keyof RouteOptions, true> = {
  excludeFlagged: true, excludeSources: true, trust: true, tieMargin: true, abstain: true, libraryCut: true, verdict: true,
  live: true, explain: true, lexical: true, signal: true,
};
export const RANK_KEYS: Record<keyof RankOptions, true> = { glanceTop: true, verdictTop: true, also: true, live: true, signal: true };

/** The `live` option as given: undefined lets the context's kind decide. */
export function liveOption(value: unknown): boolean | undefined {
  return value === undefined ? undefined : boolOption(value, "live", false);
}

/** The `also` option of {@link Router.rank}: skill ids (at most 4,096). */
export function alsoOption(value: unknown): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.length > 4096 || !value.every((v) => typeof v === "string")) {
    throw invalidArgument("also must be an array of at most 4096 skill ids");
  }
  return value as string[];
}

/**
 * Router.open's options, each checked for its type and range (INVALID_ARGUMENT), with the defaults of
 * those the router reads itself: `truncate` "end", `readOnly` false, `create` true, `keyType` from
 * the configuration.
 */
export function openSettings(options: RouterOpenOptions) {
  const o = optionsObject(options, "Router.open options", ROUTER_OPEN_KEYS);
  if (typeof o.bankDir !== "string" || o.bankDir === "") throw invalidArgument(`bankDir must be a non-empty string, got ${describeValue(o.bankDir)}`);
  if (!(o.projections instanceof Projections) && (typeof o.projections !== "string" || o.projections === "")) {
    throw invalidArgument(`projections must be a Projections object or the non-empty path of a projections file, got ${describeValue(o.projections)}`);
  }
  for (const [k, r] of [["skillBudget", SKILL_BUDGET_RANGE], ["keyBudget", KEY_BUDGET_RANGE]] as const) intOption(o[k], k, r.min, r.max, r.min);
  const keep = enumOption(o.truncate, "truncate", ["start", "end"] as const) ?? "end";
  const readOnly = boolOption(o.readOnly, "readOnly", false);
  const create = boolOption(o.create, "create", true);
  if (readOnly && o.create === true) throw invalidArgument("readOnly and create contradict each other: a read-only router never creates a bank");
  const keyType = enumOption(o.keyType === undefined ? config().keyType : o.keyType, "keyType", ["f32", "f16"] as const) as "f32" | "f16";
  return { o, bankDir: o.bankDir, keep, readOnly, create, keyType };
}
