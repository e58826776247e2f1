// gavel-router/mastra: an input processor that adds the routed skill as a system message, then the
// search_skills and load_skill tools for a model that picks its own skill. Runs offline
// with Mastra's mock model (createMockModel); use your model (e.g. "openai/gpt-5") for a real agent.
//   In the repository: npm run build && node examples/mastra/index.mjs
//   In a project of your own: npm install gavel-router @mastra/core zod, copy this file, node index.mjs
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Agent } from "@mastra/core/agent";
import { createMockModel } from "@mastra/core/test-utils/llm-mock";
import { Model, Router, defaultModelPaths } from "gavel-router";
import { gavelSkillProcessor, gavelSkillTools } from "gavel-router/mastra";

const { model: modelPath, projections } = defaultModelPaths();
const gavelModel = await Model.load(modelPath, { contextSize: 2048 });
const bankDir = mkdtempSync(join(tmpdir(), "gavel-bank-")); // a throwaway bank, removed at the end
const router = await Router.open(gavelModel, { projections, bankDir, skillBudget: 1024 });
await router.install(join(dirname(modelPath), "..", "examples", "skills"));

const show = ({ prompt }) => {
  const system = prompt.filter((m) => m.role === "system").map((m) => m.content).join("\n");
  console.log(`system prompt: ${system.split("\n").slice(0, 3).join(" | ")}`);
};
const agent = new Agent({
  id: "coder",
  name: "coder",
  instructions: "You are a helpful coding agent.",
  model: createMockModel({ mockText: "ok", spyGenerate: show, spyStream: show }),
  inputProcessors: [gavelSkillProcessor(router, { maxChars: 4000 })],
});

for (const prompt of ["Extract the tables from report.pdf into CSV files.", "Write a haiku about autumn leaves."]) {
  console.log(`\n${prompt}`);
  const result = await agent.generate(prompt);
  console.log(`answer: ${result.text}`);
}

// The tools (new Agent({ …, tools: gavelSkillTools(router) })), called here as a tool-calling model
// would: the work stated in its own words, as search_skills' description asks
const tools = gavelSkillTools(router, { k: 3, maxChars: 400 });
const found = await tools.search_skills.execute({ task: "Extract the tables from a PDF report into CSV files" }, {});
console.log(`\nsearch_skills → chosen ${found.chosen}; ${found.skills.map((h) => `${h.rank}. ${h.id} (${h.score.toFixed(2)})`).join(", ")}`);
const skill = await tools.load_skill.execute({ skill: found.chosen }, {});
console.log(`load_skill → ${skill.name}: ${skill.body.length} characters of its body${skill.cut ? " (cut)" : ""}, at ${skill.path}`);

await router.close();
await gavelModel.dispose();
rmSync(bankDir, { recursive: true, force: true });
