// A live chat route's vote weights, compared: for the 66 requests and the system prompt of
// chat-requests.mjs, as `[system, user]` and as `[user]` (both read live, the default for chat
// messages), per vote (VOTES, default all of them): the glance's first and best three
// (`Router.rank`) and the default route's picks right and declined. BANK: a bank holding the example
// skills beside others (e.g. chat-system-1k.mjs's /tmp/gavel-chat-1k), or "examples" for the 24 example
// skills alone in a temporary bank. The vote is chosen through GAVEL_LIVE_ROW_WEIGHTS and
// GAVEL_LIVE_VOTE_SHARE (src/config.ts), set per vote in a child process of this script. Needs `npx
// tsup` (reads dist/).
//
//   node scripts/experiments/chat-idf.mjs BANK [VOTES]     e.g. VOTES=decay,idf-decay
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Model, Router, defaultModelPaths } from "../../dist/index.js";
import { FORMS, glanceHits, requests, routePicks, withExampleRouter } from "./chat-requests.mjs";

// name: [row weights, vote share on]
const VOTES = { decay: ["decay", false], "idf-decay": ["idf-decay", false], idf: ["idf", false], "idf-decay+share": ["idf-decay", true], "idf+share": ["idf", true] };
const bankDir = process.argv[2];
if (!bankDir) throw new Error("usage: chat-idf.mjs BANK|examples [VOTES]");
const votes = (process.argv[3] ?? Object.keys(VOTES).join(",")).split(",");
for (const v of votes) if (!VOTES[v]) throw new Error(`unknown vote ${v}: ${Object.keys(VOTES).join(", ")}`);

async function run(router, v) {
  const tasks = requests();
  const forms = { "[system, user]": FORMS["[system, user], live"], "[user]": FORMS["[user], live"] };
  if (v === votes[0]) console.log(`${tasks.length} requests over ${router.list().length} skills\nvote\tcontext\tglance Hit@1\tglance Hit@3\troute right\tdeclined\tseconds`);
  for (const [name, form] of Object.entries(forms)) {
    const t0 = performance.now();
    const { hit1, hit3 } = await glanceHits(router, tasks, form);
    const { right, declined } = await routePicks(router, tasks, form);
    console.log(`${v}\t${name}\t${hit1}\t${hit3}\t${right}\t${declined}\t${((performance.now() - t0) / 1000).toFixed(0)}`);
  }
}

const child = process.env.CHAT_IDF_VOTE;
if (!child) {
  // one process a vote: the configuration is read once a process
  for (const v of votes) {
    const [weights, share] = VOTES[v];
    const env = { ...process.env, CHAT_IDF_VOTE: v, GAVEL_LIVE_ROW_WEIGHTS: weights, GAVEL_LIVE_VOTE_SHARE: share ? "on" : "off" };
    const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), bankDir, votes.join(",")], { env, stdio: "inherit" });
    if (r.status !== 0) process.exit(r.status ?? 1);
  }
} else if (bankDir === "examples") await withExampleRouter((router) => run(router, child));
else {
  const { model: modelPath, projections } = defaultModelPaths();
  const model = await Model.load(modelPath, { contextSize: 2048 });
  const router = await Router.open(model, { projections, bankDir, skillBudget: 512, readOnly: true });
  try {
    await run(router, child);
  } finally {
    await router.close();
    await model.dispose();
  }
}
