// Type-checks a user's code against gavel-router/mastra's declarations and the installed @mastra/core.
import { Agent } from "@mastra/core/agent";
import { createMockModel } from "@mastra/core/test-utils/llm-mock";
import { gavelSkillProcessor } from "gavel-router/mastra";
import type { Router } from "gavel-router";

declare const router: Router;

export const agent = new Agent({
  id: "a", name: "a", instructions: "i",
  model: createMockModel({ mockText: "ok" }),
  inputProcessors: [gavelSkillProcessor(router)],
});
