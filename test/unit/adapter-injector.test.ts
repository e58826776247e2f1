// The adapters' shared core (src/adapters/core.ts) over a router stand-in: what a turn routes (the
// last user turn, and nothing when it holds no text), a route reused across the steps of one turn only
// while its skill is still installed as it was, options checked when the adapter is built, and the
// load-skill tools' answer to a name two installed skills share.
import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { contextOf, SkillInjector, type SkillRouterLike } from "../../src/adapters/core.js";
import { GavelError } from "../../src/errors.js";
import type { RouteResult } from "../../src/route/types.js";
import type { SkillRecord } from "../../src/route/skill-record.js";
import { findEntry } from "../../src/bank/entries.js";
import type { BankEntry } from "../../src/bank/types.js";
import * as aiSdk from "../../src/adapters/ai-sdk.js";
import * as mastra from "../../src/adapters/mastra.js";
import * as langchain from "../../src/adapters/langchain.js";
import { expectCode } from "../helpers/gavel-error.js";

/** A library of named skills that every route picks `pick()` from, and whose records can change. */
function standIn() {
  const skills = new Map<string, SkillRecord>();
  const put = (id: string, body: string) =>
    skills.set(id, { id, name: id, description: `does ${id}`, body, contentHash: `h-${body}`, metadata: {}, allowedTools: null, path: null, dir: null } as unknown as SkillRecord);
  let routes = 0;
  let pick = "pdf";
  const router: SkillRouterLike = {
    route: async () => {
      routes++;
      return { skill: skills.has(pick) ? pick : null, abstained: !skills.has(pick), shortlist: [] } as unknown as RouteResult;
    },
    get: async (id) => {
      const s = skills.get(id);
      if (!s) throw new GavelError(`no installed skill ${id}`, "SKILL_NOT_FOUND");
      return s;
    },
  };
  return { router, put, remove: (id: string) => skills.delete(id), routes: () => routes, pickNext: (id: string) => (pick = id) };
}

describe("contextOf", () => {
  it("routes the last user turn, and nothing when that turn holds no text (not an older request again)", () => {
    const older = { role: "user", content: "Extract the tables from report.pdf" };
    expect(contextOf([older, { role: "assistant", content: "Done." }, { role: "tool", content: "x" }], "last-user")).toBe(older.content);
    expect(contextOf([older, { role: "assistant", content: "Done." }, { role: "user", content: "" }], "last-user")).toBeNull();
    expect(contextOf([older, { role: "user", content: "  \n" }], undefined)).toBeNull();
    expect(contextOf([{ role: "system", content: "be brief" }], "last-user")).toBeNull();
  });
});

describe("SkillInjector", () => {
  it("reuses a turn's route while its skill is installed as it was; routes again once it is uninstalled; reads it again once it changed", async () => {
    const s = standIn();
    s.put("pdf", "Use pdftotext.");
    s.put("docker", "Start FROM a slim image.");
    const injector = new SkillInjector(s.router);
    const first = await injector.route("Extract the tables from report.pdf");
    expect(first.skill?.id).toBe("pdf");
    await injector.route("Extract the tables from report.pdf"); // the next step of the same turn
    expect(s.routes()).toBe(1);
    s.put("pdf", "Use camelot for tables."); // reinstalled with another body
    const changed = await injector.route("Extract the tables from report.pdf");
    expect(s.routes()).toBe(1);
    expect(changed.instructions).toContain("Use camelot for tables.");
    s.remove("pdf"); // uninstalled
    s.pickNext("docker");
    const after = await injector.route("Extract the tables from report.pdf");
    expect(s.routes()).toBe(2);
    expect(after.skill?.id).toBe("docker");
    expect(after.instructions).not.toContain("pdftotext");
  });

  it("checks its options when built: unknown keys, kinds, and what format returns", async () => {
    const s = standIn();
    s.put("pdf", "Use pdftotext.");
    const refused = (options: unknown, pattern: RegExp) => expect(() => new SkillInjector(s.router, options as never)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringMatching(pattern) }));
    refused({ abstian: false }, /unknown option "abstian".*did you mean abstain\?/);
    refused({ maxchars: 100 }, /did you mean maxChars\?/);
    refused({ context: "conversaton" }, /context must be "last-user" or "conversation"/);
    refused({ format: "x" }, /format must be a function/);
    refused({ onRoute: true }, /onRoute must be a function/);
    refused({ abstain: "no" }, /abstain/);
    refused({ signal: { aborted: false } }, /signal must be an AbortSignal/);
    expect(() => new SkillInjector(s.router, { name: "x" } as never, ["name"])).not.toThrow(); // an adapter's own key
    for (const notRouter of [undefined, null, {}, { route: () => undefined }]) {
      expect(() => new SkillInjector(notRouter as never)).toThrow(expect.objectContaining({ name: "GavelError", code: "INVALID_ARGUMENT", message: "a gavel adapter needs a Router (or an object with route() and get())" }));
    }
    const bad = new SkillInjector(s.router, { format: () => undefined as never });
    await expectCode(bad.route("Extract the tables from report.pdf"), "INVALID_ARGUMENT", /format must return a string/);
  });
});

describe("SkillInjector and abort signals", () => {
  /** A router whose routes wait until released, and fail ABORTED when their signal aborts first. */
  function slowRouter() {
    const signals: (AbortSignal | undefined)[] = [];
    const waiting: (() => void)[] = [];
    const router: SkillRouterLike = {
      route: (_context, options) =>
        new Promise<RouteResult>((resolve, reject) => {
          const signal = options?.signal;
          signals.push(signal);
          if (signal?.aborted) return reject(new GavelError("the operation was aborted", "ABORTED"));
          signal?.addEventListener("abort", () => reject(new GavelError("the operation was aborted", "ABORTED")), { once: true });
          waiting.push(() => resolve({ skill: null, abstained: true, shortlist: [] } as unknown as RouteResult));
        }),
      get: async (id) => {
        throw new GavelError(`no installed skill ${id}`, "SKILL_NOT_FOUND");
      },
    };
    return { router, signals, release: () => waiting.splice(0).forEach((r) => r()) };
  }

  it("an already-aborted call signal or option signal is ABORTED before any route", async () => {
    const { router, signals } = slowRouter();
    await expectCode(new SkillInjector(router).forTurns([{ role: "user", content: "resize photos" }], AbortSignal.abort()), "ABORTED");
    await expectCode(new SkillInjector(router, { signal: AbortSignal.abort() }).forTurns([{ role: "user", content: "resize photos" }]), "ABORTED");
    expect(signals).toHaveLength(0);
  });

  it("passes the call's signal (with the option's) to the route; a call joining a route stops on its own signal, and routes again when the other's stopped it", async () => {
    const { router, signals, release } = slowRouter();
    const option = new AbortController();
    const injector = new SkillInjector(router, { signal: option.signal });
    const turns = [{ role: "user", content: "resize photos" }];
    const first = new AbortController();
    const owner = injector.forTurns(turns, first.signal);
    expect(signals).toHaveLength(1);
    // both signals reach the route: aborting either stops it
    expect(signals[0]).not.toBe(first.signal);
    const second = new AbortController();
    const joiner = injector.forTurns(turns, second.signal);
    expect(signals).toHaveLength(1); // joined, not routed again
    first.abort();
    await expectCode(owner, "ABORTED");
    // the joiner's signal is live: it routes again, with its own signal
    await new Promise((r) => setTimeout(r, 0));
    expect(signals).toHaveLength(2);
    release();
    await expect(joiner).resolves.toMatchObject({ skill: null, instructions: null });
    // a joiner whose own signal aborts stops waiting at once
    const third = injector.forTurns([{ role: "user", content: "another task" }]);
    const leaving = new AbortController();
    const fourth = injector.forTurns([{ role: "user", content: "another task" }], leaving.signal);
    leaving.abort();
    await expectCode(fourth, "ABORTED");
    release();
    await expect(third).resolves.toMatchObject({ skill: null });
    // the option's signal stops every route
    const fifth = injector.forTurns([{ role: "user", content: "a third task" }]);
    option.abort();
    await expectCode(fifth, "ABORTED");
  });

  it("a settled call leaves nothing on the option's (long-lived) signal: no listener, and no link that its abort still reaches", async () => {
    const { router, signals, release } = slowRouter();
    const option = new AbortController();
    const injector = new SkillInjector(router, { signal: option.signal });
    for (let i = 0; i < 20; i++) {
      const call = new AbortController();
      const routed = injector.forTurns([{ role: "user", content: `task ${i}` }], call.signal);
      release();
      await routed;
      expect(getEventListeners(option.signal, "abort").length).toBe(0);
    }
    expect(signals).toHaveLength(20);
    // each route's signal was one for the option's and the call's; once its call settled, the option's
    // abort no longer reaches it (AbortSignal.any's composite stayed linked for as long as both lived)
    option.abort();
    expect(signals.filter((s) => s?.aborted)).toEqual([]);
  });

  it("a call's own abort stops its route with ABORTED, and leaves no listener on the option's signal", async () => {
    const { router } = slowRouter();
    const option = new AbortController();
    const injector = new SkillInjector(router, { signal: option.signal });
    const call = new AbortController();
    const routed = injector.forTurns([{ role: "user", content: "resize photos" }], call.signal);
    call.abort(new Error("the user left"));
    await expectCode(routed, "ABORTED");
    expect(getEventListeners(option.signal, "abort").length).toBe(0);
    expect(getEventListeners(call.signal, "abort").length).toBe(0);
  });
});

describe("load-skill tools and a name two installed skills share", () => {
  /** A router stand-in whose get looks skills up as the bank does (findEntry): by id, else by a name only one skill has. */
  function sharedName(): SkillRouterLike {
    const rec = (id: string, name: string) => ({ id, name, description: `does ${id}`, body: `body of ${id}`, contentHash: `h-${id}`, metadata: {}, allowedTools: null, path: null, dir: null }) as unknown as SkillRecord;
    const records = [rec("team-a/pdf", "pdf"), rec("team-b/pdf", "pdf"), rec("docker", "docker")];
    const store = { get: (id: string) => records.find((r) => r.id === id) as unknown as BankEntry | undefined, entries: () => records as unknown as BankEntry[] };
    return {
      route: async () => ({ skill: null, abstained: true, shortlist: [] }) as unknown as RouteResult,
      get: async (idOrName) => {
        const e = findEntry(store, idOrName);
        if (!e) throw new GavelError(`no installed skill has the id or name ${idOrName}`, "SKILL_NOT_FOUND");
        return e as unknown as SkillRecord;
      },
    };
  }
  const AMBIGUOUS = 'ambiguous name: 2 installed skills are named "pdf" ("team-a/pdf", "team-b/pdf"): give the id of the one meant';

  it("the AI SDK's loadSkill and Mastra's load_skill answer { error } naming the ids, LangChain's load_skill a line; an id still loads", async () => {
    const router = sharedName();
    const aiLoad = aiSdk.gavelLoadSkillTool(router);
    const call = { toolCallId: "x", messages: [] } as never;
    expect(await aiLoad.execute!({ name: "pdf" }, call)).toEqual({ error: AMBIGUOUS });
    expect(await aiLoad.execute!({ name: "team-b/pdf" }, call)).toMatchObject({ name: "pdf", body: "body of team-b/pdf" });
    expect(await aiLoad.execute!({ name: "nope" }, call)).toEqual({ error: 'no installed skill named "nope"' });
    const { load_skill } = mastra.gavelSkillTools({ ...router, glance: async () => [], list: () => [] });
    expect(await load_skill.execute!({ skill: "pdf" }, {} as never)).toEqual({ error: AMBIGUOUS });
    expect(await load_skill.execute!({ skill: "team-a/pdf" }, {} as never)).toMatchObject({ body: "body of team-a/pdf" });
    const lcLoad = langchain.gavelLoadSkillTool(router);
    const msg = (await lcLoad.invoke({ name: "load_skill", args: { skill: "pdf" }, id: "c1", type: "tool_call" })) as unknown as { text: string; artifact: unknown };
    expect([msg.text, msg.artifact]).toEqual([`${AMBIGUOUS}.`, null]);
  });

  it("another INVALID_ARGUMENT from get is still thrown, not answered", async () => {
    const router: SkillRouterLike = {
      route: async () => ({ skill: null, abstained: true, shortlist: [] }) as unknown as RouteResult,
      get: async () => {
        throw new GavelError("the skill id must be a string", "INVALID_ARGUMENT");
      },
    };
    await expect(new SkillInjector(router).lookup("pdf")).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: "the skill id must be a string" });
    await expectCode(aiSdk.gavelLoadSkillTool(router).execute!({ name: "pdf" }, { toolCallId: "x", messages: [] } as never), "INVALID_ARGUMENT");
  });
});

describe("a library with no skill to route to", () => {
  /** A router over an empty bank (or one whose every skill has disable-model-invocation): route is EMPTY_LIBRARY. */
  function emptyRouter(): SkillRouterLike {
    return {
      route: async (_context, options) => {
        if (options?.signal?.aborted) throw new GavelError("the operation was aborted", "ABORTED");
        throw new GavelError("no skill is installed (or every one has disable-model-invocation)", "EMPTY_LIBRARY");
      },
      get: async (id) => {
        throw new GavelError(`no installed skill ${id}`, "SKILL_NOT_FOUND");
      },
    };
  }
  const turns = [{ role: "user", content: "resize photos" }];

  it("adds nothing, as on an abstention, rather than failing the agent's model call (every routed adapter)", async () => {
    const router = emptyRouter();
    await expect(new SkillInjector(router).forTurns(turns)).resolves.toBeNull();
    // the AI SDK's prepareStep: nothing on 5/6, the call's own instructions on 7
    const step = aiSdk.gavelPrepareStep(router, { system: "be brief" });
    await expect(step({ messages: [{ role: "user", content: "resize photos" }] })).resolves.toBeUndefined();
    await expect(step({ messages: [{ role: "user", content: "resize photos" }], initialInstructions: "be brief" })).resolves.toEqual({ instructions: "be brief" });
    // Mastra's processor: the messages as they were
    const messages = [{ role: "user", content: "resize photos" }];
    await expect(mastra.gavelSkillProcessor(router).processInput({ messages, systemMessages: [] } as never)).resolves.toBe(messages);
    // LangChain's retriever: no documents
    await expect(new langchain.GavelSkillRetriever(router).invoke("resize photos")).resolves.toEqual([]);
  });

  it("an aborted call is still ABORTED, and another routing error is still thrown", async () => {
    await expectCode(new SkillInjector(emptyRouter()).forTurns(turns, AbortSignal.abort()), "ABORTED");
    const failing: SkillRouterLike = {
      route: async () => {
        throw new GavelError("the bank is corrupt", "CORRUPT_FILE");
      },
      get: async () => {
        throw new GavelError("x", "SKILL_NOT_FOUND");
      },
    };
    await expectCode(new SkillInjector(failing).forTurns(turns), "CORRUPT_FILE");
    await expectCode(new langchain.GavelSkillRetriever(failing).invoke("resize photos"), "CORRUPT_FILE");
  });
});
