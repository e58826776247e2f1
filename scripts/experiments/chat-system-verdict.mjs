// What an agent's system prompt does to the verdict's read of chat messages. The embedded pair over
// examples/skills; the requests and the system prompt of chat-requests.mjs (the prompt written
// before any route was read). For each request, `Router.rank` gives the verdict (L, V, S) of every
// installed skill for three contexts: the request as a written task, [system, user] chat messages, and
// the [user] message alone. Prints, per context, how often the verdict's best by L, by V and by S is
// the expected skill, and how many requests' verdicts differ from the [user] alone's (the verdict
// then read the system prompt). Needs `npx tsup` (reads dist/).
//
//   node scripts/experiments/chat-system-verdict.mjs
import { SYSTEM, requests, withExampleRouter } from "./chat-requests.mjs";

await withExampleRouter(async (router) => {
  const n = router.list().length;
  const tasks = requests();
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
});
