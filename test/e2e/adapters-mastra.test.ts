// gavel-router/mastra through Mastra itself: an Agent with gavelSkillProcessor as an input processor and
// Mastra's own mock model (createMockModel from @mastra/core/test-utils/llm-mock), over a real Router
// (the embedded gavel-mini pair and the 24 example skills). The mock's spy records each prompt.
import { describe, expect, it } from "vitest";
import { Agent } from "@mastra/core/agent";
import { createMockModel } from "@mastra/core/test-utils/llm-mock";
import { gavelSkillProcessor } from "../../src/adapters/mastra.js";
import { HAIKU, PHOTOS, setUpExampleSkillsRouter } from "../helpers/adapter-router.js";

type Prompt = { role: string; content: unknown }[];

/** An agent over Mastra's mock model; `prompts` gets what the model received. */
function agentWith(processor: ReturnType<typeof gavelSkillProcessor>) {
  const prompts: Prompt[] = [];
  const spy = (props: { prompt: Prompt }) => prompts.push(props.prompt);
  const model = createMockModel({ mockText: "ok", spyGenerate: spy, spyStream: spy });
  const agent = new Agent({ id: "helper", name: "helper", instructions: "You are a careful assistant.", model: model as never, inputProcessors: [processor] });
  return { agent, prompts };
}

function systemOf(prompt: Prompt): string {
  return prompt.filter((m) => m.role === "system").map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content))).join("\n");
}

describe("gavel-router/mastra", () => {
  const fixture = setUpExampleSkillsRouter("gavel-mastra-");

  it("adds the routed skill as a system message of the agent's call", async () => {
    const { agent, prompts } = agentWith(gavelSkillProcessor(fixture.router));
    const result = await agent.generate(PHOTOS);
    expect(result.text).toBe("ok");
    expect(prompts).toHaveLength(1);
    const system = systemOf(prompts[0]);
    expect(system).toContain("You are a careful assistant.");
    expect(system).toContain('<skill name="image-resizing"');
    expect(system).toContain(fixture.image.body);
  });

  it("adds nothing when the ruling abstains, and takes the adapter options", async () => {
    const plain = agentWith(gavelSkillProcessor(fixture.router));
    await plain.agent.generate(HAIKU);
    expect(systemOf(plain.prompts[0])).not.toContain("<skill");
    const forced = agentWith(gavelSkillProcessor(fixture.router, { abstain: false, maxChars: 60 }));
    await forced.agent.generate(HAIKU);
    expect(systemOf(forced.prompts[0])).toMatch(/<skill name="[^"]+"[\s\S]*\[cut at \d+ of \d+ characters/);
  });
});
