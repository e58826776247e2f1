// gavel-router/ai-sdk through the AI SDK itself: generateText with the SDK's MockLanguageModelV3,
// gavelPrepareStep and the loadSkill tool, over a real Router (the embedded gavel-mini pair and the 24
// example skills). The mock model records each prompt it received.
import { describe, expect, it } from "vitest";
import { generateText, jsonSchema, stepCountIs, tool } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { gavelLoadSkillTool, gavelPrepareStep, gavelSearchSkillsTool, gavelSkills, gavelSkillTools, type LoadSkillResult, type SearchResult, type SkillRouterLike } from "../../src/adapters/ai-sdk.js";
import { HAIKU, PHOTOS, setUpExampleSkillsRouter } from "../helpers/adapter-router.js";
import type { RouteContext, RouteOptions } from "../../src/index.js";
import { expectCode } from "../helpers/gavel-error.js";

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};
const finish = (unified: "stop" | "tool-calls") => ({ unified, raw: undefined });
type Prompt = { role: string; content: unknown }[];

/** A mock that answers "ok" and keeps every prompt. */
function textModel(): MockLanguageModelV3 {
  return new MockLanguageModelV3({ doGenerate: { content: [{ type: "text", text: "ok" }], finishReason: finish("stop"), usage, warnings: [] } });
}

/** The system text of a recorded prompt. */
function systemOf(prompt: Prompt): string {
  return prompt.filter((m) => m.role === "system").map((m) => String(m.content)).join("\n");
}

describe("gavel-router/ai-sdk", () => {
  const fixture = setUpExampleSkillsRouter("gavel-ai-sdk-");

  it("adds the routed skill's body to the system prompt the model receives", async () => {
    const mock = textModel();
    const routes: (string | null)[] = [];
    const result = await generateText({
      model: mock,
      system: "You are a careful assistant.",
      prompt: PHOTOS,
      prepareStep: gavelPrepareStep(fixture.router, { system: "You are a careful assistant.", onRoute: (e) => routes.push(e.skill?.name ?? null) }),
    });
    expect(result.text).toBe("ok");
    expect(routes).toEqual(["image-resizing"]);
    expect(mock.doGenerateCalls).toHaveLength(1);
    const system = systemOf(mock.doGenerateCalls[0].prompt as Prompt);
    expect(system).toContain("You are a careful assistant.");
    expect(system).toContain('<skill name="image-resizing"');
    expect(system).toContain(fixture.image.body);
    expect(system).toContain(fixture.image.path!);
  });

  it("adds nothing when the ruling abstains", async () => {
    const mock = textModel();
    await generateText({ model: mock, system: "Base.", prompt: HAIKU, prepareStep: gavelPrepareStep(fixture.router, { system: "Base." }) });
    expect(systemOf(mock.doGenerateCalls[0].prompt as Prompt)).toBe("Base.");
    // with abstention off the glance's best skill is injected instead
    const forced = textModel();
    await generateText({ model: forced, prompt: HAIKU, prepareStep: gavelPrepareStep(fixture.router, { abstain: false, verdict: false }) });
    expect(systemOf(forced.doGenerateCalls[0].prompt as Prompt)).toMatch(/^<skill name="/);
  });

  it("a later step whose route adds nothing runs without the skill an earlier step added (AI SDK 7 carries instructions over)", async () => {
    // a router that picks a skill for the first context it sees and abstains on every later one
    let routes = 0;
    const router = {
      route: async () => (++routes === 1 ? { skill: fixture.image.id, abstained: false, shortlist: [] } : { skill: null, abstained: true, shortlist: [] }),
      get: (id: string) => fixture.router.get(id),
    } as unknown as SkillRouterLike;
    for (const system of ["Base.", undefined]) {
      routes = 0;
      let k = 0;
      const mock = new MockLanguageModelV3({
        doGenerate: async () =>
          ++k === 1
            ? { content: [{ type: "text", text: "Let me look." }, { type: "tool-call", toolCallId: "c1", toolName: "noop", input: "{}" }], finishReason: finish("tool-calls"), usage, warnings: [] }
            : { content: [{ type: "text", text: "done" }], finishReason: finish("stop"), usage, warnings: [] },
      });
      await generateText({
        model: mock,
        ...(system === undefined ? {} : { system }),
        prompt: PHOTOS,
        tools: { noop: tool({ inputSchema: jsonSchema({ type: "object", properties: {} }), execute: async () => "ok" }) },
        prepareStep: gavelPrepareStep(router, { context: "conversation", ...(system === undefined ? {} : { system }) }),
        stopWhen: stepCountIs(3),
      });
      expect(routes).toBe(2);
      const [first, second] = mock.doGenerateCalls.map((c) => c.prompt as Prompt);
      expect(systemOf(first)).toContain('<skill name="image-resizing"');
      expect(systemOf(second)).not.toContain("<skill");
      if (system === undefined) expect(second.filter((m) => m.role === "system")).toEqual([]);
      else expect(systemOf(second)).toBe(system);
    }
  });

  it("passes abstain, libraryCut and verdict through to the router's route", async () => {
    const seen: RouteOptions[] = [];
    const spy = {
      route: (c: RouteContext, o?: RouteOptions) => (seen.push({ ...o }), fixture.router.route(c, o)),
      get: (id: string) => fixture.router.get(id),
    };
    const mock = textModel();
    await generateText({ model: mock, prompt: PHOTOS, prepareStep: gavelPrepareStep(spy, { abstain: true, libraryCut: false, verdict: false }) });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ abstain: true, libraryCut: false, verdict: false });
    // left out, the router's own defaults apply
    await generateText({ model: textModel(), prompt: HAIKU, prepareStep: gavelPrepareStep(spy) });
    expect(seen[1]).toEqual({});
    expect(systemOf(mock.doGenerateCalls[0].prompt as Prompt)).toContain('<skill name="image-resizing"');
  });

  it("cuts the injected body at maxChars and names the file that holds the rest", async () => {
    const mock = textModel();
    await generateText({ model: mock, prompt: PHOTOS, prepareStep: gavelPrepareStep(fixture.router, { maxChars: 100 }) });
    const system = systemOf(mock.doGenerateCalls[0].prompt as Prompt);
    expect(system).not.toContain(fixture.image.body);
    expect(system).toContain(fixture.image.body.slice(0, 40));
    expect(system).toContain(`of ${fixture.image.body.length} characters; the whole skill is in ${fixture.image.path}`);
  });

  it("answers a tool call to loadSkill with the skill's body, metadata and path; the tool-call step reuses the route", async () => {
    let calls = 0;
    const mock = new MockLanguageModelV3({
      doGenerate: async () => {
        calls++;
        if (calls === 1) {
          const input = JSON.stringify({ name: "pdf-extract" });
          return { content: [{ type: "tool-call", toolCallId: "call-1", toolName: "loadSkill", input }], finishReason: finish("tool-calls"), usage, warnings: [] };
        }
        return { content: [{ type: "text", text: "done" }], finishReason: finish("stop"), usage, warnings: [] };
      },
    });
    let routes = 0;
    const { prepareStep, tools } = gavelSkills(fixture.router, { onRoute: () => routes++ });
    const result = await generateText({ model: mock, prompt: PHOTOS, tools, prepareStep, stopWhen: stepCountIs(3) });
    expect(result.text).toBe("done");
    expect(routes).toBe(1); // two steps, one route
    const pdf = await fixture.router.get("pdf-extract");
    const output = result.steps[0].toolResults[0].output as LoadSkillResult;
    expect(output).toMatchObject({ name: "pdf-extract", body: pdf.body, path: pdf.path, dir: pdf.dir, cut: false });
    expect((output as { metadata: Record<string, unknown> }).metadata.description).toBe(pdf.description);
    // both steps' prompts carry the routed skill; the second also the tool's result
    for (const call of mock.doGenerateCalls) expect(systemOf(call.prompt as Prompt)).toContain(fixture.image.body);
    expect(JSON.stringify(mock.doGenerateCalls[1].prompt)).toContain(JSON.stringify(pdf.body.slice(0, 40)).slice(1, -1));
  });

  it("tells the model when no installed skill has the name", async () => {
    const loadSkill = gavelLoadSkillTool(fixture.router);
    const out = await loadSkill.execute!({ name: "no-such-skill" }, { toolCallId: "x", messages: [] } as never);
    expect(out).toEqual({ error: 'no installed skill named "no-such-skill"' });
  });

  it("searchSkills answers the model's statement of the work with the fitting skill first, then loadSkill reads it", async () => {
    // the user's message as people say it; the model calls searchSkills with the work stated, then loadSkill
    const said = "ugh, the product pictures on the shop are way too big, can you sort them out";
    let calls = 0;
    const mock = new MockLanguageModelV3({
      doGenerate: async () => {
        calls++;
        if (calls === 1) return { content: [{ type: "tool-call", toolCallId: "s1", toolName: "searchSkills", input: JSON.stringify({ task: PHOTOS, k: 3 }) }], finishReason: finish("tool-calls"), usage, warnings: [] };
        if (calls === 2) return { content: [{ type: "tool-call", toolCallId: "l1", toolName: "loadSkill", input: JSON.stringify({ name: "image-resizing" }) }], finishReason: finish("tool-calls"), usage, warnings: [] };
        return { content: [{ type: "text", text: "done" }], finishReason: finish("stop"), usage, warnings: [] };
      },
    });
    const tools = gavelSkillTools(fixture.router);
    const result = await generateText({ model: mock, prompt: said, tools, stopWhen: stepCountIs(4) });
    expect(result.text).toBe("done");
    // the model read both tools' descriptions; searchSkills' asks for the work stated concretely
    const offered = mock.doGenerateCalls[0].tools as { name: string; description?: string }[];
    expect(offered.map((t) => t.name).sort()).toEqual(["loadSkill", "searchSkills"]);
    expect(offered.find((t) => t.name === "searchSkills")!.description).toMatch(/state the work concretely/);
    const found = result.steps[0].toolResults[0].output as SearchResult;
    expect(found).toMatchObject({ task: PHOTOS, chosen: "image-resizing", abstained: false });
    expect(found.skills).toHaveLength(3);
    expect(found.skills[0]).toMatchObject({ rank: 1, id: "image-resizing", description: fixture.image.description });
    expect(found.skills.map((h) => h.rank)).toEqual([1, 2, 3]);
    expect(new Set(found.skills.map((h) => h.id)).size).toBe(3);
    const loaded = result.steps[1].toolResults[0].output as LoadSkillResult;
    expect(loaded).toMatchObject({ name: "image-resizing", body: fixture.image.body, path: fixture.image.path });
    // nothing was routed on its own: no system text was added
    for (const call of mock.doGenerateCalls) expect(systemOf(call.prompt as Prompt)).toBe("");
  });

  it("searchSkills checks k, stops on the call's abort signal, and says when the router abstains", async () => {
    expect(() => gavelSearchSkillsTool(fixture.router, { k: 0 })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => gavelSearchSkillsTool(fixture.router, { k: 51 })).toThrow(/k must be an integer from 1 to 50/);
    expect(() => gavelSearchSkillsTool({ route: fixture.router.route.bind(fixture.router) } as never)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/^gavelSearchSkillsTool needs a Router/) }));
    expect(() => gavelLoadSkillTool(fixture.router, { maxChars: -1 })).toThrow(/maxChars must be a non-negative integer or Infinity/);
    const search = gavelSearchSkillsTool(fixture.router, { k: 2 });
    const stopped = new AbortController();
    stopped.abort();
    await expectCode(search.execute!({ task: PHOTOS }, { toolCallId: "a", messages: [], abortSignal: stopped.signal } as never), "ABORTED");
    const off = (await search.execute!({ task: HAIKU }, { toolCallId: "b", messages: [] } as never)) as SearchResult;
    expect(off).toMatchObject({ chosen: null, abstained: true });
    expect(off.skills).toHaveLength(2);
  });

  it("prepareStep: the adapter's signal stops the route (ABORTED) and no model call is made; the AI SDK gives prepareStep no signal of its own", async () => {
    const mock = textModel();
    const routes: unknown[] = [];
    const stopped = gavelPrepareStep(fixture.router, { signal: AbortSignal.abort(), onRoute: (e) => routes.push(e) });
    await expect(generateText({ model: mock, prompt: PHOTOS, abortSignal: new AbortController().signal, prepareStep: stopped })).rejects.toMatchObject({ name: "GavelError", code: "ABORTED" });
    expect(routes).toHaveLength(0);
    expect(mock.doGenerateCalls).toHaveLength(0);
  });
});
