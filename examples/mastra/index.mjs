// gavel-router/mastra: an input processor that adds the routed skill as a system message. Runs offline
// with Mastra's mock model (createMockModel); use your model (e.g. "openai/gpt-5") for a real agent.
//   npm run build && node examples/mastra/index.mjs
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Agent } from "@mastra/core/agent";
import { createMockModel } from "@mastra/core/test-utils/llm-mock";
import { Model, Router, defaultModelPaths } from "gavel-router";
import { gavelSkillProcessor } from "gavel-router/mastra";

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

await router.close();
await gavelModel.dispose();
rmSync(bankDir, { recursive: true, force: true });
