// What an agent's system prompt does to a route of chat messages. The embedded pair over
// examples/skills, default route options; each request of bench/data/short-requests-examples.jsonl,
// examples/everyday-tasks.json and examples/demo-tasks.json (those with a skill expected) routed as a
// written task, as [system, user] chat messages (live, the default for messages) and as the same
// messages with live: false. The system prompt (chat-requests.mjs) is a generic coding agent's, written for this check
// before any route was read. Prints right / declined / wrong per form. Needs `npx tsup` (reads dist/).
//
//   node scripts/experiments/chat-system-prompt.mjs
import { SYSTEM, requests, withExampleRouter } from "./chat-requests.mjs";

await withExampleRouter(async (router) => {
  const tasks = requests();
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
});
