// gavel-router/ai-sdk: route each user message to a skill and add it to the system prompt, plus a
// loadSkill tool; then the other way, the model searching with the work stated in its own words. Runs offline with the AI SDK's mock model; put your provider's model in its place
// (e.g. `openai("gpt-5")` from @ai-sdk/openai) for a real agent.
//   In the repository: npm run build && node examples/ai-sdk/index.mjs
//   In a project of your own: npm install gavel-router ai@6 zod, copy this file, node index.mjs
//   (the mock model, MockLanguageModelV3, comes with ai 6 and 7; the adapter itself runs on ai 5 too)
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { generateText, stepCountIs } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { Model, Router, defaultModelPaths } from "gavel-router";
import { gavelLoadSkillTool, gavelPrepareStep, gavelSkillTools } from "gavel-router/ai-sdk";

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

// Searched instead of routed: the model calls searchSkills with the work stated concretely (as its
// description asks), then loadSkill. This stand-in makes the calls a real model would make for
// "ugh, the pictures people upload are huge, can you shrink them down?".
const said = "ugh, the pictures people upload are huge, can you shrink them down?";
const stated = "Resize and compress user-uploaded images (JPEG, PNG) to smaller dimensions and file sizes";
const calls = [
  { type: "tool-call", toolCallId: "1", toolName: "searchSkills", input: JSON.stringify({ task: stated, k: 3 }) },
  { type: "tool-call", toolCallId: "2", toolName: "loadSkill", input: JSON.stringify({ name: "image-resizing" }) },
];
const usage = { inputTokens: { total: 1, noCache: 1 }, outputTokens: { total: 1, text: 1 } };
const picker = new MockLanguageModelV3({
  doGenerate: async () => {
    const call = calls.shift();
    if (call) return { content: [call], finishReason: { unified: "tool-calls", raw: undefined }, usage, warnings: [] };
    return { content: [{ type: "text", text: "ok" }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] };
  },
});
const searched = await generateText({ model: picker, system, prompt: said, tools: gavelSkillTools(router), stopWhen: stepCountIs(4) });
const found = searched.steps[0].toolResults[0].output;
console.log(`\n${said}\nsearchSkills("${stated}")`);
for (const hit of found.skills) console.log(`  ${hit.rank}. ${hit.id} (score ${hit.score.toFixed(2)})`);
console.log(`loadSkill → ${searched.steps[1].toolResults[0].output.name}; answer: ${searched.text}`);

await router.close();
await gavelModel.dispose();
rmSync(bankDir, { recursive: true, force: true });
