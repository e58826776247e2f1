// The chat-system experiments over a larger library: the 24 example skills beside 1,000 public ones
// (skills-mit.jsonl.gz from line 7,920, as the conversational requests' 1,024-skill library; a public
// skill whose id is an example's is left out). For the 66 requests and the system prompt of
// chat-requests.mjs, per context (written task; [system, user] live, the default for messages; the
// [user] message alone, live): the glance's first and best three (`Router.rank`), and the default
// route's picks right and declined. The bank is kept at BANK (default /tmp/gavel-chat-1k) and reused
// when it holds the library. Needs `npx tsup` (reads dist/) and ../shared.
//
//   node scripts/experiments/chat-system-1k.mjs [BANK]
import { Model, Router, defaultModelPaths, loadSkills } from "../../dist/index.js";
import { FORMS, SYSTEM, glanceHits, requests, routePicks } from "./chat-requests.mjs";

const bankDir = process.argv[2] ?? "/tmp/gavel-chat-1k";
const { model: modelPath, projections } = defaultModelPaths();
const model = await Model.load(modelPath, { contextSize: 2048 });
const router = await Router.open(model, { projections, bankDir, skillBudget: 512 });
try {
  if (router.list().length < 1024) {
    await router.install("examples/skills");
    const examples = new Set(router.list().map((s) => s.id));
    const { skills } = await loadSkills("../shared/data/skills-mit.jsonl.gz", { offset: 7920, limit: 1000 });
    const report = await router.install(skills.filter((s) => !examples.has(s.id)));
    console.error(`installed ${report.installed.length} public skills (${report.failed.length} failed)`);
  }
  const tasks = requests();
  console.log(`${tasks.length} requests over ${router.list().length} skills; system prompt ${SYSTEM.length} characters`);
  console.log("context\tglance Hit@1\tglance Hit@3\troute right\tdeclined");
  for (const [name, form] of Object.entries(FORMS)) {
    const { hit1, hit3 } = await glanceHits(router, tasks, form);
    const { right, declined } = await routePicks(router, tasks, form);
    console.log(`${name}\t${hit1}\t${hit3}\t${right}\t${declined}`);
  }
} finally {
  await router.close();
  await model.dispose();
}
