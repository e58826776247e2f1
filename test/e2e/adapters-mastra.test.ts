// gavel-router/mastra through Mastra itself: an Agent with gavelSkillProcessor as an input processor and
// Mastra's own mock model (createMockModel from @mastra/core/test-utils/llm-mock), over a real Router
// (the embedded gavel-mini pair and the 24 example skills). The mock's spy records each prompt.
import { describe, expect, it } from "vitest";
import { Agent } from "@mastra/core/agent";
import { createMockModel } from "@mastra/core/test-utils/llm-mock";
import { gavelSkillProcessor, gavelSkillTools, type LoadedSkill, type SearchResult } from "../../src/adapters/mastra.js";
import { HAIKU, PHOTOS, setUpExampleSkillsRouter } from "../helpers/adapter-router.js";
import { expectCode } from "../helpers/gavel-error.js";

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

  it("gavelSkillTools: search_skills finds the skill for the work as the model states it, load_skill reads it", async () => {
    const tools = gavelSkillTools(fixture.router, { k: 3, maxChars: 80 });
    expect(tools.search_skills.id).toBe("search_skills");
    expect(tools.search_skills.description).toMatch(/state the work concretely/);
    const found = (await tools.search_skills.execute!({ task: PHOTOS }, {} as never)) as SearchResult;
    expect(found).toMatchObject({ chosen: "image-resizing", abstained: false });
    expect(found.skills.map((h) => h.rank)).toEqual([1, 2, 3]);
    // Mastra validates the input against the schema before executing
    const bad = (await tools.search_skills.execute!({ task: "" } as never, {} as never)) as { error?: boolean };
    expect(bad.error).toBe(true);
    const stopped = new AbortController();
    stopped.abort();
    await expectCode(tools.search_skills.execute!({ task: PHOTOS }, { abortSignal: stopped.signal } as never), "ABORTED");
    const read = (await tools.load_skill.execute!({ skill: "image-resizing" }, {} as never)) as LoadedSkill;
    expect(read).toMatchObject({ name: "image-resizing", path: fixture.image.path, cut: true });
    expect(read.body.length).toBeLessThanOrEqual(80);
    expect(await tools.load_skill.execute!({ skill: "nope" }, {} as never)).toEqual({ error: 'no installed skill has the id or name "nope"' });
    expect(() => gavelSkillTools(fixture.router, { k: 0 })).toThrow(/k must be an integer/);
  });

  it("the processor's route stops on the call's abortSignal (ProcessInputArgs) or the adapter's signal: ABORTED", async () => {
    const routes: unknown[] = [];
    const processor = gavelSkillProcessor(fixture.router, { onRoute: (e) => routes.push(e) });
    const args = (abortSignal?: AbortSignal) => ({ messages: [{ role: "user", content: PHOTOS }], systemMessages: [], abortSignal }) as never;
    await expect(processor.processInput(args(AbortSignal.abort()))).rejects.toMatchObject({ name: "GavelError", code: "ABORTED" });
    expect(routes).toHaveLength(0);
    const live = (await processor.processInput(args(new AbortController().signal))) as { systemMessages: { content: string }[] };
    expect(live.systemMessages.at(-1)?.content).toContain('<skill name="image-resizing"');
    // through an agent (@mastra/core 1.71.0 gives processInput no abortSignal of its own): the option's
    const { agent, prompts } = agentWith(gavelSkillProcessor(fixture.router, { signal: AbortSignal.abort() }));
    await expect(agent.generate(PHOTOS)).rejects.toThrow();
    expect(prompts).toHaveLength(0);
  });
});
