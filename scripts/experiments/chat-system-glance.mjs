// What an agent's system prompt does to the glance of a live route of chat messages. The embedded
// pair over examples/skills; the requests and the system prompt of chat-requests.mjs (the prompt
// written before any route was read). For each request, `Router.rank` gives the glance's best three
// for the request as a written task, as [system, user] chat messages (live, the default for messages)
// and as the [user] message alone (live). Prints, per context, how often the glance's first and its
// best three hold the expected skill. Needs `npx tsup` (reads dist/).
//
//   node scripts/experiments/chat-system-glance.mjs
import { FORMS, SYSTEM, glanceHits, requests, withExampleRouter } from "./chat-requests.mjs";

await withExampleRouter(async (router) => {
  const tasks = requests();
  console.log(`${tasks.length} requests over ${router.list().length} skills; system prompt ${SYSTEM.length} characters`);
  console.log("context\tglance Hit@1\tglance Hit@3");
  for (const [name, form] of Object.entries(FORMS)) {
    const { hit1, hit3 } = await glanceHits(router, tasks, form);
    console.log(`${name}\t${hit1}\t${hit3}`);
  }
});
