// gavel-router/langchain through LangChain itself: a v1 createAgent agent with gavelSkillMiddleware and
// @langchain/core's FakeListChatModel, over a real Router (the embedded gavel-mini pair and the 24
// example skills). A callback handler records the messages each model call received.
import { describe, expect, it } from "vitest";
import { AIMessage, HumanMessage, createAgent, type BaseMessage } from "langchain";
import { FakeListChatModel } from "@langchain/core/utils/testing";
import { gavelSkillMiddleware } from "../../src/adapters/langchain.js";
import { HAIKU, PHOTOS, setUpExampleSkillsRouter } from "../helpers/adapter-router.js";

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
});
