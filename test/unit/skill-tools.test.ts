// searchSkills and searchText (src/adapters/skill-tools.ts), what `gavel mcp`'s search_skills and the
// adapters' search tools answer, over a SkillSource written here: the checks of the task and k come
// before any route, the ruled shortlist is listed first and padded with the glance's next best
// without repeats, and the text names the choice or says that the router abstained.
import { describe, expect, it } from "vitest";
import { MAX_SEARCH_K, searchK, searchSkills, searchText, searchToolSetup, type SkillSource } from "../../src/adapters/skill-tools.js";
import { DEFAULT_MAX_CHARS, maxCharsOf } from "../../src/adapters/core.js";
import type { Candidate, GlanceHit, RouteResult } from "../../src/route/types.js";
import * as entry from "../../src/index.js";
import type { Router, ServerRouter } from "../../src/index.js";

// a Router is a source the tools can search, as is a client of the bank's server by its types (tsc checks both)
const routerIsSource: Router extends SkillSource ? true : false = true;
const serverIsSource: ServerRouter extends SkillSource ? true : false = true;

const ids = ["alpha", "beta", "gamma", "delta", "omega"];

/** A source of five skills: the route shortlists `ruled` (R falling), the glance ranks all five by g. */
function source(ruled: string[], abstained = false) {
  const routes: string[] = [];
  const src: SkillSource = {
    route: async (task) => {
      routes.push(task);
      const shortlist: Candidate[] = ruled.map((id, i) => ({ skill: id, name: id, g: 0.5 - i / 10, L: Number.NaN, V: Number.NaN, S: -i, R: 3 - i }));
      const r: RouteResult = { skill: abstained ? null : ruled[0], name: abstained ? null : ruled[0], abstained, shortlist, verdict: "skipped", load: null, timings: { glanceMs: 1, verdictMs: 0, totalMs: 1 } };
      return abstained ? { ...r, abstention: { reason: "p(off-domain) high", score: 2 } } : r;
    },
    glance: async (_task, { topK }) => ids.map((id, i): GlanceHit => ({ skill: id, name: id, g: 0.9 - i / 10 }) as GlanceHit).slice(0, topK),
    list: () => ids.map((id) => ({ id, name: id, description: `does ${id}` })),
    get: async () => {
      throw new Error("not read");
    },
  };
  return { src, routes };
}

describe("searchSkills", () => {
  it("is the package's own export, with the tool descriptions, for a tool in any framework", () => {
    expect([routerIsSource, serverIsSource]).toEqual([true, true]);
    expect(entry.searchSkills).toBe(searchSkills);
    expect(entry.searchText).toBe(searchText);
    expect(entry.MAX_SEARCH_K).toBe(50);
    expect(entry.SEARCH_SKILLS_DESCRIPTION).toMatch(/state the work concretely in one or two sentences/);
    expect(entry.SEARCH_TASK_DESCRIPTION).toMatch(/^the work, stated concretely/);
    expect(entry.LOAD_SKILL_DESCRIPTION).toMatch(/^Read an installed skill by id or name/);
  });

  it("refuses an empty task or a k outside 1-50 with INVALID_ARGUMENT, before routing", async () => {
    const { src, routes } = source(["beta"]);
    for (const task of ["", "  \n", 7 as unknown as string]) await expect(searchSkills(src, task)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    for (const k of [0, -1, 1.5, MAX_SEARCH_K + 1, Number.NaN]) await expect(searchSkills(src, "resize images", k)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    expect(routes).toEqual([]);
    expect(searchK(undefined)).toBe(5);
    expect(searchK(MAX_SEARCH_K)).toBe(MAX_SEARCH_K);
    expect(() => searchK("3")).toThrow(/k must be an integer from 1 to 50, got 3/);
  });

  it("lists the ruled shortlist first, then the glance's next best without repeats, up to k", async () => {
    const { src, routes } = source(["gamma", "alpha"]);
    const r = await searchSkills(src, "resize images", 4);
    expect(routes).toEqual(["resize images"]);
    expect(r.chosen).toBe("gamma");
    expect(r.skills.map((h) => [h.rank, h.id, h.stage])).toEqual([
      [1, "gamma", "ruled"],
      [2, "alpha", "ruled"],
      [3, "beta", "glance"],
      [4, "delta", "glance"],
    ]);
    expect(r.skills[0]).toMatchObject({ description: "does gamma", score: 3 });
    expect(r.skills[2]).toMatchObject({ score: 0.8, g: 0.8 });
    expect(r.skills[0].reason).toMatch(/^chosen by the router: re-ranker R=3\.00/);
    expect((await searchSkills(src, "resize images", 1)).skills.map((h) => h.id)).toEqual(["gamma"]);
    expect(searchText(r)).toMatch(/^Best skill: gamma\. Shortlist, best first:\n1\. gamma \(id gamma, score 3\.00\): does gamma\n/);
  });

  it("says when the router abstained, and lists the closest skills anyway", async () => {
    const r = await searchSkills(source(["beta"], true).src, "write a haiku", 2);
    expect(r).toMatchObject({ chosen: null, abstained: true, abstention: { reason: "p(off-domain) high" } });
    expect(r.skills.map((h) => h.id)).toEqual(["beta", "alpha"]);
    expect(r.skills[0].reason).toMatch(/^best match, but the router abstained/);
    expect(searchText(r).split("\n")[0]).toBe("No skill fits this task confidently (p(off-domain) high); the closest ones:");
  });
});

/** The keys of a search tool's options, as a framework's tool passes them. */
const KEYS = { k: true, libraryCut: true } as const;

describe("what a framework's search tool checks when it is built", () => {
  it("needs route, glance and list, and takes k and libraryCut as the route's options", () => {
    const { src } = source(["alpha"]);
    expect(searchToolSetup(src, {}, "t", KEYS)).toEqual({ k: 5, search: {} });
    expect(searchToolSetup(src, { k: 3, libraryCut: false }, "t", KEYS)).toEqual({ k: 3, search: { libraryCut: false } });
    expect(() => searchToolSetup(src, { k: 0 }, "t", KEYS)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    const notRouter = expect.objectContaining({ name: "GavelError", code: "INVALID_ARGUMENT", message: "myTool needs a Router (or an object with route(), glance(), list() and get())" });
    expect(() => searchToolSetup({ ...src, glance: undefined } as never, {}, "myTool", KEYS)).toThrow(notRouter);
    expect(() => searchToolSetup(null as never, {}, "myTool", KEYS)).toThrow(notRouter);
    expect(() => searchToolSetup({} as never, {}, "myTool", KEYS)).toThrow(notRouter);
    const refused = (options: unknown, message: RegExp) => expect(() => searchToolSetup(src, options, "myTool", KEYS)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringMatching(message) }));
    refused({ kk: 3 }, /^unknown option "kk" in myTool options \(did you mean k\?\); the options are k, libraryCut$/);
    refused({ search: { k: 3 } }, /^unknown option "search" in myTool options; the options are k, libraryCut$/);
    refused(null, /^myTool options must be an object$/);
    refused({ libraryCut: "no" }, /^libraryCut must be a boolean/);
  });

  it("maxCharsOf takes a non-negative integer or Infinity, or the fallback when absent", () => {
    expect(maxCharsOf(undefined)).toBe(DEFAULT_MAX_CHARS);
    expect(maxCharsOf(undefined, Infinity)).toBe(Infinity);
    expect(maxCharsOf(0, Infinity)).toBe(0);
    expect(maxCharsOf(120)).toBe(120);
    expect(maxCharsOf(Infinity)).toBe(Infinity);
    for (const bad of [-1, Number.NaN, -Infinity, 1.5, null, "100", true]) expect(() => maxCharsOf(bad, Infinity)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/maxChars must be a non-negative integer or Infinity/) }));
  });
});
