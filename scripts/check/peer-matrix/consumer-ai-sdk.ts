// Type-checks a user's code against gavel-router/ai-sdk's declarations and the installed `ai`.
import { generateText, stepCountIs, type LanguageModel } from "ai";
import { gavelLoadSkillTool, gavelPrepareStep, gavelSearchSkillsTool, gavelSkills, gavelSkillTools } from "gavel-router/ai-sdk";
import type { Router } from "gavel-router";

declare const router: Router;
declare const model: LanguageModel;

export async function run(): Promise<string> {
  const a = await generateText({
    model, system: "s", prompt: "p",
    prepareStep: gavelPrepareStep(router, { system: "s" }),
    tools: { loadSkill: gavelLoadSkillTool(router) },
    stopWhen: stepCountIs(3),
  });
  const { prepareStep, tools } = gavelSkills(router, { maxChars: 1000 });
  const b = await generateText({ model, prompt: "p", prepareStep, tools, stopWhen: stepCountIs(3) });
  // a model that picks its own skill: searchSkills and loadSkill, nothing routed on its own
  const c = await generateText({ model, prompt: "p", tools: gavelSkillTools(router, { search: { k: 3 } }), stopWhen: stepCountIs(4) });
  const d = await generateText({ model, prompt: "p", tools: { searchSkills: gavelSearchSkillsTool(router), loadSkill: gavelLoadSkillTool(router) } });
  return a.text + b.text + c.text + d.text;
}
