// What an agent's system prompt does to a route of chat messages. The embedded pair over
// examples/skills, default route options; each request of bench/data/short-requests-examples.jsonl,
// examples/everyday-tasks.json and examples/demo-tasks.json (those with a skill expected) routed as a
// written task, as [system, user] chat messages (live, the default for messages) and as the same
// messages with live: false. The system prompt is a generic coding agent's, written for this check
// before any route was read. Prints right / declined / wrong per form. Needs `npx tsup` (reads dist/).
//
//   node scripts/experiments/chat-system-prompt.mjs
import { Model, Router, defaultModelPaths } from "../../dist/index.js";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const SYSTEM = [
  "You are a careful software engineering agent working in the user's repository through a shell.",
  "Read the relevant files before you change them, keep changes small, and explain what you did.",
  "Run the project's tests and linters after each change; never commit secrets or credentials.",
  "Prefer the tools and conventions the project already uses. Ask before deleting data, rewriting",
  "history or running anything against production. When a command fails, read its output and fix",
  "the cause rather than retrying blindly. Answer in plain text; put commands and code in fenced blocks.",
].join(" ");

const { model: modelPath, projections } = defaultModelPaths();
const model = await Model.load(modelPath, { contextSize: 2048 });
const bankDir = mkdtempSync(join(tmpdir(), "gavel-chat-system-"));
const router = await Router.open(model, { projections, bankDir, skillBudget: 512 });
try {
  await router.install("examples/skills");
  const tasks = [
    ...readFileSync("bench/data/short-requests-examples.jsonl", "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)).map((t) => ({ text: t.text, gold: t.gold_skill_ids })),
    ...["examples/everyday-tasks.json", "examples/demo-tasks.json"].flatMap((f) => JSON.parse(readFileSync(f, "utf8")).filter((t) => t.expected).map((t) => ({ text: t.task, gold: [t.expected] }))),
  ];
  const forms = {
    "written task": (t) => router.route(t),
    "chat, live (default)": (t) => router.route([{ role: "system", content: SYSTEM }, { role: "user", content: t }]),
    "chat, live: false": (t) => router.route([{ role: "system", content: SYSTEM }, { role: "user", content: t }], { live: false }),
  };
  console.log(`${tasks.length} requests over ${router.list().length} skills; system prompt ${SYSTEM.length} characters`);
  console.log("form\tright\tdeclined\twrong\twrong picks");
  for (const [name, route] of Object.entries(forms)) {
    let right = 0, declined = 0;
    const wrong = {};
    for (const t of tasks) {
      const r = await route(t.text);
      if (r.skill === null) declined++;
      else if (t.gold.includes(r.skill)) right++;
      else wrong[r.skill] = (wrong[r.skill] ?? 0) + 1;
    }
    const picks = Object.entries(wrong).sort((a, b) => b[1] - a[1]);
    console.log(`${name}\t${right}\t${declined}\t${picks.reduce((a, [, n]) => a + n, 0)}\t${picks.map(([s, n]) => `${s} ${n}`).join(", ")}`);
  }
} finally {
  await router.close();
  await model.dispose();
  rmSync(bankDir, { recursive: true, force: true });
}
