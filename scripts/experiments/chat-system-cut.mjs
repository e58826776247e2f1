// How much of an agent's system prompt the glance of a live chat route needs to read. The embedded
// pair over examples/skills; the requests and the system prompt of chat-requests.mjs. For each request
// `Router.rank` gives the glance's best three for four [system, user] chats: with that system prompt,
// with a generic one-line one, with the prompt's last 120 characters, and with the prompt ten times
// over (longer than the task budget). Prints how often the glance's first and its best three hold
// the expected skill. Needs `npx tsup` (reads dist/).
//
//   node scripts/experiments/chat-system-cut.mjs
import { SYSTEM, glanceHits, requests, withExampleRouter } from "./chat-requests.mjs";
await withExampleRouter(async (router) => {
  const tasks = requests();
  console.log("context\tglance Hit@1\tglance Hit@3");
  const forms = {
    "[system, user]": (t) => [{ role: "system", content: SYSTEM }, { role: "user", content: t }],
    "[generic system, user]": (t) => [{ role: "system", content: "You are a helpful assistant." }, { role: "user", content: t }],
    "[system last 120 chars, user]": (t) => [{ role: "system", content: SYSTEM.slice(-120) }, { role: "user", content: t }],
    "[system x10, user]": (t) => [{ role: "system", content: (SYSTEM + " ").repeat(10) }, { role: "user", content: t }],
  };
  for (const [name, form] of Object.entries(forms)) {
    const { hit1, hit3 } = await glanceHits(router, tasks, form);
    console.log(`${name}\t${hit1}\t${hit3}`);
  }
});
