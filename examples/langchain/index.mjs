// gavel-router/langchain: agent middleware that adds the routed skill to each model call's system
// message; then the search_skills and load_skill tools, as a tool-calling agent would call them. Runs offline with LangChain's FakeListChatModel; use your chat model (e.g. "openai:gpt-5")
// for a real agent.
//   In the repository: npm run build && node examples/langchain/index.mjs
//   In a project of your own: npm install gavel-router langchain @langchain/core zod, copy this file, node index.mjs
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createAgent, HumanMessage } from "langchain";
import { FakeListChatModel } from "@langchain/core/utils/testing";
import { Model, Router, defaultModelPaths } from "gavel-router";
import { gavelLoadSkillTool, gavelSearchSkillsTool, gavelSkillMiddleware } from "gavel-router/langchain";

const { model: modelPath, projections } = defaultModelPaths();
const gavelModel = await Model.load(modelPath, { contextSize: 2048 });
const bankDir = mkdtempSync(join(tmpdir(), "gavel-bank-")); // a throwaway bank, removed at the end
const router = await Router.open(gavelModel, { projections, bankDir, skillBudget: 1024 });
await router.install(join(dirname(modelPath), "..", "examples", "skills"));

const agent = createAgent({
  model: new FakeListChatModel({ responses: ["ok", "ok"] }),
  systemPrompt: "You are a helpful coding agent.",
  middleware: [gavelSkillMiddleware(router, { maxChars: 4000 })],
});

// prints the system message each model call received
const show = { handleChatModelStart: async (_llm, [messages]) => console.log(`system message: ${messages[0].text.split("\n").slice(0, 3).join(" | ")}`) };
for (const prompt of ["Speed up this slow Postgres query: SELECT * FROM orders WHERE customer_id = 7", "Write a haiku about autumn leaves."]) {
  console.log(`\n${prompt}`);
  const state = await agent.invoke({ messages: [new HumanMessage(prompt)] }, { callbacks: [show] });
  console.log(`answer: ${state.messages.at(-1).text}`);
}

// The tools for a model that picks its own skill (createAgent({ model, tools: [search, load] })): a
// tool-calling model states the work in its own words, as search_skills' description asks
const search = gavelSearchSkillsTool(router, { k: 3 });
const load = gavelLoadSkillTool(router, { maxChars: 400 });
const found = await search.invoke({ name: "search_skills", args: { task: "Find why a slow Postgres query on the orders table takes seconds and add the right index" }, id: "1", type: "tool_call" });
console.log(`\nsearch_skills →\n${found.text}`);
const read = await load.invoke({ name: "load_skill", args: { skill: found.artifact.chosen }, id: "2", type: "tool_call" });
console.log(`load_skill → ${read.text.split("\n")[0]} (${read.artifact.body.length} characters of its body)`);

await router.close();
await gavelModel.dispose();
rmSync(bankDir, { recursive: true, force: true });
