// What an agent's system prompt does to the glance of a live route of chat messages. The embedded
// pair over examples/skills; the requests and the system prompt of chat-requests.mjs (the prompt
// written before any route was read). For each request, `Router.rank` gives the glance's best three
// for the request as a written task, as [system, user] chat messages (live, the default for messages)
// and as the [user] message alone (live). Prints, per context, how often the glance's first and its
// best three hold the expected skill. Needs `npx tsup` (reads dist/).
//
//   node scripts/experiments/chat-system-glance.mjs
import { SYSTEM, requests, withExampleRouter } from "./chat-requests.mjs";

await withExampleRouter(async (router) => {
  const tasks = requests();
  const forms = {
    "written task": (t) => t,
    "[system, user], live": (t) => [{ role: "system", content: SYSTEM }, { role: "user", content: t }],
    "[user], live": (t) => [{ role: "user", content: t }],
  };
  console.log(`${tasks.length} requests over ${router.list().length} skills; system prompt ${SYSTEM.length} characters`);
  console.log("context\tglance Hit@1\tglance Hit@3");
  for (const [name, form] of Object.entries(forms)) {
    let hit1 = 0, hit3 = 0;
    for (const t of tasks) {
      const { glance } = await router.rank(form(t.text), { glanceTop: 3, verdictTop: 0 });
      if (t.gold.includes(glance[0].skill)) hit1++;
      if (glance.some((g) => t.gold.includes(g.skill))) hit3++;
    }
    console.log(`${name}\t${hit1}\t${hit3}`);
  }
});
