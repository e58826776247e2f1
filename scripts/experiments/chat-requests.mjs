// What the chat-system-*.mjs and chat-idf.mjs experiments share: the glance counts (glanceHits), the
// route's (routePicks), the three forms of a request (FORMS), the system prompt (a generic coding agent's, written before any route was
// read), the 66 requests over examples/skills that expect a skill (the 46 of
// bench/data/short-requests-examples.jsonl, then examples/everyday-tasks.json and
// examples/demo-tasks.json), and the embedded pair opened over those skills in a temporary bank.
// Paths are the repository root's (run the scripts from there). Needs `npx tsup` (reads dist/).
import { Model, Router, defaultModelPaths } from "../../dist/index.js";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const SYSTEM = [
  "You are a careful software engineering agent working in the user's repository through a shell.",
  "Read the relevant files before you change them, keep changes small, and explain what you did.",
  "Run the project's tests and linters after each change; never commit secrets or credentials.",
  "Prefer the tools and conventions the project already uses. Ask before deleting data, rewriting",
  "history or running anything against production. When a command fails, read its output and fix",
  "the cause rather than retrying blindly. Answer in plain text; put commands and code in fenced blocks.",
].join(" ");

/** A request as a written task, as [system, user] chat messages and as the [user] message alone (both read live, the default for messages). */
export const FORMS = {
  "written task": (t) => t,
  "[system, user], live": (t) => [{ role: "system", content: SYSTEM }, { role: "user", content: t }],
  "[user], live": (t) => [{ role: "user", content: t }],
};

/** The requests, each { text, gold: [skill ids] }. */
export function requests() {
  return [
    ...readFileSync("bench/data/short-requests-examples.jsonl", "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)).map((t) => ({ text: t.text, gold: t.gold_skill_ids })),
    ...["examples/everyday-tasks.json", "examples/demo-tasks.json"].flatMap((f) => JSON.parse(readFileSync(f, "utf8")).filter((t) => t.expected).map((t) => ({ text: t.task, gold: [t.expected] }))),
  ];
}

/** Runs `body(router)` with the embedded pair over examples/skills (skill budget 512), then closes all. */
export async function withExampleRouter(body) {
  const { model: modelPath, projections } = defaultModelPaths();
  const model = await Model.load(modelPath, { contextSize: 2048 });
  const bankDir = mkdtempSync(join(tmpdir(), "gavel-chat-"));
  const router = await Router.open(model, { projections, bankDir, skillBudget: 512 });
  try {
    await router.install("examples/skills");
    return await body(router);
  } finally {
    await router.close();
    await model.dispose();
    rmSync(bankDir, { recursive: true, force: true });
  }
}

/** Of `tasks`, how many have the expected skill as the glance's first and among its best three (`Router.rank`) for the context `form(text)`. */
export async function glanceHits(router, tasks, form) {
  let hit1 = 0, hit3 = 0;
  for (const t of tasks) {
    const { glance } = await router.rank(form(t.text), { glanceTop: 3, verdictTop: 0 });
    if (t.gold.includes(glance[0].skill)) hit1++;
    if (glance.some((g) => t.gold.includes(g.skill))) hit3++;
  }
  return { hit1, hit3 };
}

/** Of `tasks`, how many the default route (`Router.route`) picks right and declines for the context `form(text)`. */
export async function routePicks(router, tasks, form) {
  let right = 0, declined = 0;
  for (const t of tasks) {
    const r = await router.route(form(t.text));
    if (r.skill === null) declined++;
    else if (t.gold.includes(r.skill)) right++;
  }
  return { right, declined };
}
