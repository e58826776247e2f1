// What an agent's system prompt does to the verdict's read of chat messages. The embedded pair over
// examples/skills; the requests and the system prompt of chat-system-prompt.mjs (the prompt written
// before any route was read). For each request, `Router.rank` gives the verdict (L, V, S) of every
// installed skill for three contexts: the request as a written task, [system, user] chat messages, and
// the [user] message alone. Prints, per context, how often the verdict's best by L, by V and by S is
// the expected skill, and how many requests' verdicts differ from the [user] alone's (the verdict
// then read the system prompt). Needs `npx tsup` (reads dist/).
//
//   node scripts/experiments/chat-system-verdict.mjs
import { Model, Router, defaultModelPaths } from "../../dist/index.js";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const SYSTEM = readFileSync(new URL("./chat-system-prompt.mjs", import.meta.url), "utf8")
  .match(/const SYSTEM = \[([\s\S]*?)\]\.join/)[1]
  .split("\n").map((l) => l.trim()).filter(Boolean).map((l) => JSON.parse(l.replace(/,$/, ""))).join(" ");

const { model: modelPath, projections } = defaultModelPaths();
const model = await Model.load(modelPath, { contextSize: 2048 });
const bankDir = mkdtempSync(join(tmpdir(), "gavel-chat-verdict-"));
const router = await Router.open(model, { projections, bankDir, skillBudget: 512 });
try {
  await router.install("examples/skills");
  const n = router.list().length;
  const tasks = [
    ...readFileSync("bench/data/short-requests-examples.jsonl", "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)).map((t) => ({ text: t.text, gold: t.gold_skill_ids })),
    ...["examples/everyday-tasks.json", "examples/demo-tasks.json"].flatMap((f) => JSON.parse(readFileSync(f, "utf8")).filter((t) => t.expected).map((t) => ({ text: t.task, gold: [t.expected] }))),
  ];
  const forms = {
    "written task": (t) => t,
    "[system, user]": (t) => [{ role: "system", content: SYSTEM }, { role: "user", content: t }],
    "[user]": (t) => [{ role: "user", content: t }],
  };
  console.log(`${tasks.length} requests over ${n} skills; system prompt ${SYSTEM.length} characters; every skill judged`);
  console.log("context\tbest L right\tbest V right\tbest S right\tverdicts unlike [user]'s");
  const byForm = {};
  for (const [name, form] of Object.entries(forms)) {
    byForm[name] = [];
    for (const t of tasks) {
      const { verdict } = await router.rank(form(t.text), { glanceTop: n, verdictTop: n });
      byForm[name].push(new Map(verdict.map((c) => [c.skill, c])));
    }
  }
  const best = (m, k) => [...m.values()].reduce((a, b) => (b[k] > a[k] ? b : a)).skill;
  for (const [name, maps] of Object.entries(byForm)) {
    const right = (k) => maps.filter((m, i) => tasks[i].gold.includes(best(m, k))).length;
    const unlike = maps.filter((m, i) => [...m.values()].some((c) => {
      const u = byForm["[user]"][i].get(c.skill);
      return Math.abs(c.L - u.L) > 1e-6 || Math.abs(c.V - u.V) > 1e-6;
    })).length;
    console.log(`${name}\t${right("L")}\t${right("V")}\t${right("S")}\t${unlike}`);
  }
} finally {
  await router.close();
  await model.dispose();
  rmSync(bankDir, { recursive: true, force: true });
}
