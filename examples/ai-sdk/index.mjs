// gavel-router/ai-sdk: route each user message to a skill and add it to the system prompt, plus a
// loadSkill tool. Runs offline with the AI SDK's mock model; put your provider's model in its place
// (e.g. `openai("gpt-5")` from @ai-sdk/openai) for a real agent.
//   npm run build && node examples/ai-sdk/index.mjs
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { generateText, stepCountIs } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { Model, Router, defaultModelPaths } from "gavel-router";
import { gavelLoadSkillTool, gavelPrepareStep } from "gavel-router/ai-sdk";

// The router: the embedded gavel-mini pair over the 24 example skills shipped beside it
const { model: modelPath, projections } = defaultModelPaths();
const gavelModel = await Model.load(modelPath, { contextSize: 2048 });
const bankDir = mkdtempSync(join(tmpdir(), "gavel-bank-")); // a throwaway bank, removed at the end
const router = await Router.open(gavelModel, { projections, bankDir, skillBudget: 1024 });
await router.install(join(dirname(modelPath), "..", "examples", "skills"));

// A stand-in for your model: it answers "ok" and we print the system prompt it was given
const model = new MockLanguageModelV3({
  doGenerate: {
    content: [{ type: "text", text: "ok" }],
    finishReason: { unified: "stop", raw: undefined },
    usage: { inputTokens: { total: 1, noCache: 1 }, outputTokens: { total: 1, text: 1 } },
    warnings: [],
  },
});

const system = "You are a helpful coding agent.";
for (const prompt of ["Turn the 400 product photos in ./photos into 256 pixel square thumbnails in WebP.", "Write a haiku about autumn leaves."]) {
  const result = await generateText({
    model,
    system,
    prompt,
    tools: { loadSkill: gavelLoadSkillTool(router) },
    prepareStep: gavelPrepareStep(router, { system, maxChars: 4000, onRoute: ({ result, skill }) => console.log(`\n${prompt}\n→ ${skill ? skill.name : `abstained: ${result.abstention?.reason}`}`) }),
    stopWhen: stepCountIs(4),
  });
  const sent = model.doGenerateCalls.at(-1).prompt.find((m) => m.role === "system")?.content ?? "";
  console.log(`system prompt sent (${sent.length} chars): ${sent.split("\n").slice(0, 3).join(" | ")}`);
  console.log(`answer: ${result.text}`);
}

await router.close();
await gavelModel.dispose();
rmSync(bankDir, { recursive: true, force: true });
