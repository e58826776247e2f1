// gavel-router/langchain through LangChain itself: a v1 createAgent agent with gavelSkillMiddleware and
// @langchain/core's FakeListChatModel, over a real Router (the embedded gavel-mini pair and the 24
// example skills). A callback handler records the messages each model call received.
import { describe, expect, it } from "vitest";
import { AIMessage, HumanMessage, createAgent, type BaseMessage } from "langchain";
import { FakeListChatModel } from "@langchain/core/utils/testing";
import { BaseRetriever } from "@langchain/core/retrievers";
import { Document } from "@langchain/core/documents";
import { RunnableLambda } from "@langchain/core/runnables";
import { GavelSkillRetriever, gavelLoadSkillTool, gavelSearchSkillsTool, gavelSkillMiddleware, type LoadedSkill, type SearchResult } from "../../src/adapters/langchain.js";
import { ChatMessage, ToolMessage } from "@langchain/core/messages";
import { HAIKU, PHOTOS, setUpExampleSkillsRouter } from "../helpers/adapter-router.js";
import { expectCode } from "../helpers/gavel-error.js";

/** Runs one agent turn and returns the messages the model received, by type and text. */
async function modelSaw(agent: { invoke: (input: never, config?: never) => Promise<unknown> }, messages: BaseMessage[]) {
  const seen: { type: string; text: string }[][] = [];
  const handler = {
    handleChatModelStart: async (_llm: unknown, batches: BaseMessage[][]) => {
      for (const batch of batches) seen.push(batch.map((m) => ({ type: m.getType(), text: m.text })));
    },
  };
  const state = (await agent.invoke({ messages } as never, { callbacks: [handler] } as never)) as { messages: BaseMessage[] };
  return { seen, state };
}

describe("gavel-router/langchain", () => {
  const fixture = setUpExampleSkillsRouter("gavel-langchain-");

  it("adds the routed skill to the system message of the model call, not to the agent's history", async () => {
    const agent = createAgent({
      model: new FakeListChatModel({ responses: ["ok"] }),
      systemPrompt: "You are a careful assistant.",
      middleware: [gavelSkillMiddleware(fixture.router)],
    });
    const { seen, state } = await modelSaw(agent, [new HumanMessage(PHOTOS)]);
    expect(seen).toHaveLength(1);
    const system = seen[0].filter((m) => m.type === "system").map((m) => m.text).join("\n");
    expect(system).toContain("You are a careful assistant.");
    expect(system).toContain('<skill name="image-resizing"');
    expect(system).toContain(fixture.image.body);
    expect(state.messages.map((m) => m.getType())).toEqual(["human", "ai"]);
    expect(JSON.stringify(state.messages)).not.toContain(fixture.image.body);
  });

  it("routes the latest user message of a conversation, and adds nothing when the ruling abstains", async () => {
    const agent = createAgent({ model: new FakeListChatModel({ responses: ["ok"] }), systemPrompt: "Base.", middleware: [gavelSkillMiddleware(fixture.router)] });
    const { seen } = await modelSaw(agent, [new HumanMessage(PHOTOS), new AIMessage("Done: 400 thumbnails."), new HumanMessage(HAIKU)]);
    const system = seen[0].filter((m) => m.type === "system").map((m) => m.text);
    expect(system).toEqual(["Base."]);
  });

  it("reads a ChatMessage by its role: a user one is routed as a HumanMessage is", async () => {
    const agent = createAgent({ model: new FakeListChatModel({ responses: ["ok"] }), systemPrompt: "Base.", middleware: [gavelSkillMiddleware(fixture.router)] });
    const { seen } = await modelSaw(agent, [new HumanMessage(HAIKU), new AIMessage("Here it is."), new ChatMessage(PHOTOS, "user")]);
    const system = seen[0].filter((m) => m.type === "system").map((m) => m.text).join("\n");
    expect(system).toContain('<skill name="image-resizing"');
  });

  it("takes the adapter options: abstain off, and a cut at maxChars", async () => {
    const names: (string | null)[] = [];
    const agent = createAgent({
      model: new FakeListChatModel({ responses: ["ok", "ok"] }),
      middleware: [gavelSkillMiddleware(fixture.router, { abstain: false, verdict: false, maxChars: 80, onRoute: (e) => names.push(e.skill?.name ?? null) })],
    });
    const { seen } = await modelSaw(agent, [new HumanMessage(HAIKU)]);
    const system = seen[0].filter((m) => m.type === "system").map((m) => m.text).join("\n");
    expect(names).toHaveLength(1);
    expect(names[0]).not.toBeNull();
    expect(system).toContain(`<skill name="${names[0]}"`);
    expect(system).toMatch(/\[cut at \d+ of \d+ characters/);
  });

  it("GavelSkillRetriever is a BaseRetriever returning the shortlist as Documents with skill metadata", async () => {
    const retriever = new GavelSkillRetriever(fixture.router, { k: 3 });
    expect(retriever).toBeInstanceOf(BaseRetriever);
    const docs = await retriever.invoke(PHOTOS);
    expect(docs.length).toBeGreaterThanOrEqual(1);
    expect(docs.length).toBeLessThanOrEqual(3);
    expect(docs[0]).toBeInstanceOf(Document);
    expect(docs[0].pageContent).toBe(fixture.image.body);
    expect(docs[0].id).toBe("image-resizing");
    expect(docs[0].metadata).toMatchObject({
      id: "image-resizing",
      name: "image-resizing",
      description: fixture.image.description,
      path: fixture.image.path,
      dir: fixture.image.dir,
      rank: 1,
      chosen: true,
      cut: false,
    });
    // the ranks follow the router's own shortlist, best first, by its score: the re-ranker's R (the
    // embedded projections carry one, applied at every size), so the scores descend
    const routed = await fixture.router.route(PHOTOS);
    expect(docs.map((d) => d.metadata.id)).toEqual(routed.shortlist.slice(0, 3).map((c) => c.skill));
    expect(docs.map((d) => d.metadata.rank)).toEqual(docs.map((_, i) => i + 1));
    expect(routed.shortlist.every((c) => typeof c.R === "number")).toBe(true);
    expect(docs.map((d) => d.metadata.score)).toEqual(routed.shortlist.slice(0, docs.length).map((c) => c.R));
    for (let i = 1; i < docs.length; i++) expect(docs[i - 1].metadata.score).toBeGreaterThanOrEqual(docs[i].metadata.score);
    expect(docs.slice(1).every((d) => !d.metadata.chosen)).toBe(true);
  });

  it("GavelSkillRetriever returns nothing when the ruling abstains, and composes as a Runnable", async () => {
    expect(await new GavelSkillRetriever(fixture.router).invoke(HAIKU)).toEqual([]);
    expect(await new GavelSkillRetriever(fixture.router).invoke("   ")).toEqual([]);
    // abstention off: the best skill anyway, cut at maxChars
    const forced = await new GavelSkillRetriever(fixture.router, { k: 1, abstain: false, maxChars: 40 }).invoke(HAIKU);
    expect(forced).toHaveLength(1);
    expect(forced[0].pageContent.length).toBeLessThanOrEqual(40);
    expect(forced[0].metadata.cut).toBe(true);
    // in a chain: retriever → the names of what it found
    const chain = new GavelSkillRetriever(fixture.router, { k: 1 }).pipe(RunnableLambda.from((docs: Document[]) => docs.map((d) => d.metadata.name)));
    expect(await chain.invoke(PHOTOS)).toEqual(["image-resizing"]);
    expect(() => new GavelSkillRetriever(fixture.router, { k: 0 })).toThrow(/k must be a positive integer/);
    // a wrong kind is a typed GavelError, as the other adapters' options
    for (const options of [{ k: "3" }, { maxChars: -1 }]) expect(() => new GavelSkillRetriever(fixture.router, options as never)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    // a query that is not a string, typed; the run's signal stops the route
    await expectCode(new GavelSkillRetriever(fixture.router).invoke(123 as never), "INVALID_ARGUMENT");
    await expectCode(new GavelSkillRetriever(fixture.router).invoke(PHOTOS, { signal: AbortSignal.abort() }), "ABORTED");
    const stopping = new AbortController();
    const running = new GavelSkillRetriever(fixture.router, { abstain: false }).invoke(PHOTOS, { signal: stopping.signal });
    stopping.abort();
    await expectCode(running, "ABORTED");
  });

  it("search_skills and load_skill answer tool calls as ToolMessages: text for the model, the result as artifact", async () => {
    const search = gavelSearchSkillsTool(fixture.router, { k: 3 });
    expect(search.name).toBe("search_skills");
    expect(search.description).toMatch(/state the work concretely/);
    const found = (await search.invoke({ name: "search_skills", args: { task: PHOTOS }, id: "c1", type: "tool_call" })) as unknown as ToolMessage;
    expect(found).toBeInstanceOf(ToolMessage);
    expect(found.tool_call_id).toBe("c1");
    const result = found.artifact as SearchResult;
    expect(result).toMatchObject({ task: PHOTOS, chosen: "image-resizing", abstained: false });
    expect(result.skills.map((h) => h.rank)).toEqual([1, 2, 3]);
    expect(found.text).toContain("Best skill: image-resizing.");
    expect(found.text).toContain(`1. image-resizing (id image-resizing, score`);
    // the model's k wins over the tool's; out of range is refused by the schema
    const two = (await search.invoke({ name: "search_skills", args: { task: PHOTOS, k: 2 }, id: "c2", type: "tool_call" })) as unknown as ToolMessage;
    expect((two.artifact as SearchResult).skills).toHaveLength(2);
    await expect(search.invoke({ task: PHOTOS, k: 99 })).rejects.toThrow();
    const stopped = new AbortController();
    stopped.abort();
    await expect(search.invoke({ task: PHOTOS }, { signal: stopped.signal })).rejects.toThrow();
    expect(() => gavelSearchSkillsTool(fixture.router, { k: 1.5 })).toThrow(/k must be an integer/);

    const load = gavelLoadSkillTool(fixture.router, { maxChars: 50 });
    const read = (await load.invoke({ name: "load_skill", args: { skill: "image-resizing" }, id: "c3", type: "tool_call" })) as unknown as ToolMessage;
    const skill = read.artifact as LoadedSkill;
    expect(skill).toMatchObject({ name: "image-resizing", path: fixture.image.path, cut: true });
    expect(skill.body).toBe(fixture.image.body.slice(0, skill.body.length));
    expect(read.text).toContain(`Source: ${fixture.image.path}`);
    expect(read.text).toContain(`[cut at ${skill.body.length} of ${fixture.image.body.length} characters; the whole skill is in ${fixture.image.path}]`);
    const none = (await load.invoke({ name: "load_skill", args: { skill: "no-such-skill" }, id: "c4", type: "tool_call" })) as unknown as ToolMessage;
    expect(none.text).toBe('No installed skill has the id or name "no-such-skill"; search_skills lists them.');
    expect(none.artifact).toBeNull();
  });

  it("the middleware's route stops on the run's signal (request.runtime.signal): ABORTED, and the model is not called", async () => {
    const middleware = gavelSkillMiddleware(fixture.router);
    let called = 0;
    const handler = async () => {
      called++;
      return new AIMessage("ok");
    };
    const request = (signal: AbortSignal) => ({ messages: [new HumanMessage(PHOTOS)], systemPrompt: "Base.", runtime: { signal } }) as never;
    await expect(middleware.wrapModelCall!(request(AbortSignal.abort()), handler as never)).rejects.toMatchObject({ name: "GavelError", code: "ABORTED" });
    expect(called).toBe(0);
    await middleware.wrapModelCall!(request(new AbortController().signal), handler as never);
    expect(called).toBe(1);
  });
});
