// The GAVEL_* settings a running server reads from its own environment (src/serve/settings.ts): which
// ones a client set on purpose, and how they are named against what the server reports.
import { describe, expect, it } from "vitest";
import { resolveConfig } from "../../src/config.js";
import { ROUTE_SETTINGS, routeSettings, settingsGiven, settingsUnread } from "../../src/serve/settings.js";

describe("route settings", () => {
  it("unset, every setting is at its default and none is given", () => {
    const c = resolveConfig({});
    expect(settingsGiven(c)).toEqual([]);
    expect(Object.keys(routeSettings(c))).toEqual([...ROUTE_SETTINGS]);
    expect(settingsUnread(c, undefined)).toEqual([]);
  });

  it("a value other than the default is given; the default spelled out is not", () => {
    const c = resolveConfig({ GAVEL_LIBRARY_CUT: "on", GAVEL_KEY_TYPE: "f16", GAVEL_GLANCE_ROW_WEIGHTS: "uniform", GAVEL_PASTE_WEIGHT: "", GAVEL_LIVE_ROW_WEIGHTS: "decay" });
    expect(settingsGiven(c)).toEqual(["GAVEL_GLANCE_ROW_WEIGHTS", "GAVEL_KEY_TYPE"]);
    const live = resolveConfig({ GAVEL_LIVE_ROW_WEIGHTS: "idf", GAVEL_LIVE_VOTE_SHARE: "on" });
    expect(settingsGiven(live)).toEqual(["GAVEL_LIVE_ROW_WEIGHTS", "GAVEL_LIVE_VOTE_SHARE"]);
    expect(settingsUnread(live, routeSettings(resolveConfig({})))).toEqual(["GAVEL_LIVE_ROW_WEIGHTS (idf here, decay in the server)", "GAVEL_LIVE_VOTE_SHARE (on here, off in the server)"]);
  });

  it("names a given setting with both values where the server's differs, not where it agrees, and plainly where the server reports none", () => {
    const c = resolveConfig({ GAVEL_PASTE_WEIGHT: "off", GAVEL_GLANCE_VOTE_SHARE: "0.25", GAVEL_KEY_IVF: "on" });
    const server = { ...routeSettings(resolveConfig({})), GAVEL_KEY_IVF: "on" };
    expect(settingsUnread(c, server)).toEqual(["GAVEL_PASTE_WEIGHT (off here, on in the server)", "GAVEL_GLANCE_VOTE_SHARE (0.25 here, projections in the server)"]);
    // an older server, or one that did not answer status
    for (const none of [undefined, null, "x", {}]) expect(settingsUnread(c, none)).toEqual(["GAVEL_PASTE_WEIGHT", "GAVEL_GLANCE_VOTE_SHARE", "GAVEL_KEY_IVF"]);
    // a value of another type in the report is no agreement
    expect(settingsUnread(c, { ...server, GAVEL_KEY_IVF: 1 })).toContain("GAVEL_KEY_IVF");
    // nor is a value no setting takes, which is never printed (a terminal escape, a long text)
    for (const odd of ["\u001b[2Jon", "x".repeat(33), ""]) {
      const named = settingsUnread(c, { ...server, GAVEL_PASTE_WEIGHT: odd });
      expect(named).toEqual(["GAVEL_PASTE_WEIGHT", "GAVEL_GLANCE_VOTE_SHARE (0.25 here, projections in the server)"]);
    }
  });
});
