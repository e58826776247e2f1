// searchSkills and searchText (src/adapters/skill-tools.ts), what `gavel mcp`'s search_skills and the
// adapters' search tools answer, over a SkillSource written here: the checks of the task and k come
// before any route, the ruled shortlist is listed first and padded with the glance's next best
// without repeats, and the text names the choice or says that the router abstained; an abstention
// score not computed is null, and a bank with no routable skill answers no skill (also through
// `gavel mcp`'s server and an SDK client, which check the output schema).
import { describe, expect, it } from "vitest";
import { MAX_SEARCH_K, searchK, searchSkills, searchText, searchToolSetup, type SkillSource } from "../../src/adapters/skill-tools.js";
import { DEFAULT_MAX_CHARS, maxCharsOf } from "../../src/adapters/core.js";
import type { Candidate, GlanceHit, RouteResult } from "../../src/route/types.js";
import * as entry from "../../src/index.js";
import type { Router, ServerRouter } from "../../src/index.js";
import { GavelError } from "../../src/errors.js";
import { createMcpServer } from "../../src/cli/mcp/server.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { expectCode } from "../helpers/gavel-error.js";

/** The reason a route gives for a task without a letter or digit (src/route/decide.ts), whose score it does not compute. */
const WORDLESS_REASON = "the task holds no word (no letter or digit) that a skill could match: abstaining";

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
    for (const task of ["", "  \n", 7 as unknown as string]) await expectCode(searchSkills(src, task), "INVALID_ARGUMENT");
    for (const k of [0, -1, 1.5, MAX_SEARCH_K + 1, Number.NaN]) await expectCode(searchSkills(src, "resize images", k), "INVALID_ARGUMENT");
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

  it("gives an abstention score that was not computed (NaN from a Router, null through gavel serve) as null", async () => {
    for (const score of [Number.NaN, null, Infinity]) {
      const { src } = source(["beta"], true);
      const route = src.route;
      src.route = async (task, o) => ({ ...(await route(task, o)), abstention: { abstain: true, reason: WORDLESS_REASON, score: score as number } });
      const r = await searchSkills(src, "!!", 2);
      expect(r.abstention, String(score)).toEqual({ abstain: true, reason: WORDLESS_REASON, score: null });
      expect(JSON.parse(JSON.stringify(r))).toEqual(r); // what JSON carries is what it returned
    }
  });

  it("answers a bank with no routable skill (the route's EMPTY_LIBRARY) with no skill, as its text says", async () => {
    const src: SkillSource = { ...source([]).src, route: async () => Promise.reject(new GavelError("no skill is installed (or every one has disable-model-invocation)", "EMPTY_LIBRARY")) };
    const r = await searchSkills(src, "resize images");
    expect(r).toMatchObject({ task: "resize images", chosen: null, abstained: false, skills: [] });
    expect(r).not.toHaveProperty("abstention");
    expect(searchText(r)).toBe("No skill is installed in this bank (gavel install <folder> installs some).");
    // any other failure of the route is still thrown
    const broken: SkillSource = { ...src, route: async () => Promise.reject(new GavelError("damaged keys", "INTERNAL")) };
    await expectCode(searchSkills(broken, "resize images"), "INTERNAL");
  });
});

describe("gavel mcp's search_skills, through an MCP client", () => {
  /** Calls search_skills on a server over `src`, connected in memory to an SDK client (which checks the output schema again). */
  async function callSearch(src: SkillSource, task: string) {
    const server = await createMcpServer(src, { version: "0.0.0", bankDir: "/nowhere" });
    const [a, b] = InMemoryTransport.createLinkedPair();
    const client = new Client({ name: "test", version: "0.0.0" });
    await Promise.all([server.connect(a), client.connect(b)]);
    try {
      return await client.callTool({ name: "search_skills", arguments: { task, k: 2 } });
    } finally {
      await client.close();
      await server.close();
    }
  }

  it("answers a wordless task's abstention, whose score was not computed, with score null (not an output validation error)", async () => {
    const { src } = source(["beta"], true);
    src.route = async () => ({ skill: null, name: null, abstained: true, shortlist: [], verdict: "off", load: null, abstention: { abstain: true, reason: WORDLESS_REASON, score: Number.NaN }, timings: { glanceMs: 1, verdictMs: 0, totalMs: 1 } }) as RouteResult;
    const r = await callSearch(src, "🙂🙂");
    expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
    expect(r.structuredContent).toMatchObject({ chosen: null, abstained: true, abstention: { reason: WORDLESS_REASON, score: null } });
    expect((r.structuredContent as { skills: unknown[] }).skills).toHaveLength(2);
  });

  it("answers an empty bank with the documented text, not an EMPTY_LIBRARY error", async () => {
    const src: SkillSource = { ...source([]).src, route: async () => Promise.reject(new GavelError("no skill is installed (or every one has disable-model-invocation)", "EMPTY_LIBRARY")), list: () => [] };
    const r = await callSearch(src, "resize images");
    expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
    expect(r.content).toEqual([{ type: "text", text: "No skill is installed in this bank (gavel install <folder> installs some)." }]);
    expect(r.structuredContent).toMatchObject({ chosen: null, abstained: false, skills: [] });
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
