// Type-checks a user's code against gavel-router/langchain's declarations and the installed langchain.
import { createAgent } from "langchain";
import { FakeListChatModel } from "@langchain/core/utils/testing";
import type { Document } from "@langchain/core/documents";
import { GavelSkillRetriever, gavelSkillMiddleware } from "gavel-router/langchain";
import type { Router } from "gavel-router";

declare const router: Router;

export const agent = createAgent({ model: new FakeListChatModel({ responses: ["ok"] }), tools: [], middleware: [gavelSkillMiddleware(router)] });
export const docs: Promise<Document[]> = new GavelSkillRetriever(router, { k: 3 }).invoke("task");
