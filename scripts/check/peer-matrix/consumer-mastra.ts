// Type-checks a user's code against gavel-router/mastra's declarations and the installed @mastra/core.
import { Agent } from "@mastra/core/agent";
import { createMockModel } from "@mastra/core/test-utils/llm-mock";
import { gavelSkillProcessor, gavelSkillTools } from "gavel-router/mastra";
import type { Router } from "gavel-router";

declare const router: Router;

export const agent = new Agent({
  id: "a", name: "a", instructions: "i",
  model: createMockModel({ mockText: "ok" }),
  inputProcessors: [gavelSkillProcessor(router)],
});

// a model that picks its own skill: search_skills and load_skill as the agent's tools
export const picker = new Agent({
  id: "p", name: "p", instructions: "i",
  model: createMockModel({ mockText: "ok" }),
  tools: gavelSkillTools(router, { k: 3 }),
});
