/**
 * The GAVEL_* settings that change what a route or an install answers. A running `gavel serve` reads
 * them from its own environment when it starts; a client's are not sent. `status` reports the
 * server's ({@link routeSettings}), and the CLI names those it set to other values
 * (src/cli/commands/served-flags.ts).
 *
 * @module
 */
import { resolveConfig, type Config } from "../config.js";

/** The settings, by variable name, that change a route's or an install's answer (docs/configuration.md). */
export const ROUTE_SETTINGS = [
  "GAVEL_LIBRARY_CUT",
  "GAVEL_PASTE_WEIGHT",
  "GAVEL_GLANCE_ROW_WEIGHTS",
  "GAVEL_GLANCE_VOTE_SHARE",
  "GAVEL_LIVE_ROW_WEIGHTS",
  "GAVEL_LIVE_VOTE_SHARE",
  "GAVEL_LIVE_LEXICAL",
  "GAVEL_GLANCE_INDEX",
  "GAVEL_KEY_IVF",
  "GAVEL_KEY_TYPE",
] as const;

/** A setting's name. */
export type RouteSetting = (typeof ROUTE_SETTINGS)[number];

/** The value a setting left unset takes where the projections file decides. */
const FROM_PROJECTIONS = "projections";

/** Each setting's effective value under `c`, as text: what `status` reports. */
export function routeSettings(c: Config): Record<RouteSetting, string> {
  return {
    GAVEL_LIBRARY_CUT: c.libraryCut,
    GAVEL_PASTE_WEIGHT: c.pasteWeight,
    GAVEL_GLANCE_ROW_WEIGHTS: c.glanceRowWeights ?? FROM_PROJECTIONS,
    GAVEL_GLANCE_VOTE_SHARE: c.glanceVoteShare === undefined ? FROM_PROJECTIONS : String(c.glanceVoteShare),
    GAVEL_LIVE_ROW_WEIGHTS: c.liveRowWeights,
    GAVEL_LIVE_VOTE_SHARE: c.liveVoteShare,
    GAVEL_LIVE_LEXICAL: c.liveLexical,
    GAVEL_GLANCE_INDEX: c.glanceIndex,
    GAVEL_KEY_IVF: c.keyIvf,
    GAVEL_KEY_TYPE: c.keyType,
  };
}

/** What a setting's value looks like (a word or a number); another is not read from a server's answer. */
const VALUE = /^[\w.+-]{1,32}$/;

let defaults: Record<RouteSetting, string> | undefined;

/** The settings of `c` set to other than their defaults: those a user gave on purpose. */
export function settingsGiven(c: Config): RouteSetting[] {
  const mine = routeSettings(c);
  defaults ??= routeSettings(resolveConfig({}));
  return ROUTE_SETTINGS.filter((k) => mine[k] !== defaults![k]);
}

/**
 * The settings given in `c` ({@link settingsGiven}) that a server whose `status.settings` is `server`
 * reads otherwise, each as `NAME (value here, value in the server)`; a server that reports none (an
 * older one) reads all of them otherwise, as far as anyone can tell: `NAME`.
 */
export function settingsUnread(c: Config, server: unknown): string[] {
  const mine = routeSettings(c);
  const theirs = typeof server === "object" && server !== null ? (server as Record<string, unknown>) : undefined;
  const out: string[] = [];
  for (const k of settingsGiven(c)) {
    const v = theirs?.[k];
    // a value no setting takes (another type, a control character) is printed nowhere: no agreement
    if (typeof v !== "string" || !VALUE.test(v)) out.push(k);
    else if (v !== mine[k]) out.push(`${k} (${mine[k]} here, ${v} in the server)`);
  }
  return out;
}
