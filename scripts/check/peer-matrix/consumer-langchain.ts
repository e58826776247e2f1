// Type-checks a user's code against gavel-router/langchain's declarations and the installed langchain.
import { createAgent } from "langchain";
import { FakeListChatModel } from "@langchain/core/utils/testing";
import type { Document } from "@langchain/core/documents";
import { GavelSkillRetriever, gavelLoadSkillTool, gavelSearchSkillsTool, gavelSkillMiddleware } from "gavel-router/langchain";
import type { Router } from "gavel-router";

declare const router: Router;

export const agent = createAgent({ model: new FakeListChatModel({ responses: ["ok"] }), tools: [], middleware: [gavelSkillMiddleware(router)] });
export const docs: Promise<Document[]> = new GavelSkillRetriever(router, { k: 3 }).invoke("task");
// a model that picks its own skill: search_skills and load_skill as the agent's tools
export const picker = createAgent({ model: new FakeListChatModel({ responses: ["ok"] }), tools: [gavelSearchSkillsTool(router, { k: 3 }), gavelLoadSkillTool(router)] });
