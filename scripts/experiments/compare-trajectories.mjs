// Compares two runs of chat-trajectories.ts record by record (the same trajectories, in the same
// order): on how many the chat glance's first and the route's pick differ, and how many of those gain
// or lose the gold. Usage: node scripts/experiments/compare-trajectories.mjs BEFORE.jsonl[.gz] AFTER.jsonl[.gz]
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";

const read = (f) => {
  const raw = readFileSync(f);
  return (f.endsWith(".gz") ? gunzipSync(raw) : raw).toString("utf8").trim().split("\n").map((l) => JSON.parse(l));
};
const [a, b] = process.argv.slice(2).map(read);
if (!a || !b || a.length !== b.length) throw new Error("usage: compare-trajectories.mjs BEFORE AFTER (two runs over the same trajectories)");
const count = { glance: [0, 0, 0], route: [0, 0, 0] };
a.forEach((x, i) => {
  const y = b[i];
  if (x.task !== y.task || x.scenario !== y.scenario) throw new Error(`record ${i}: another trajectory (${x.task} / ${y.task})`);
  for (const [k, hit] of [["glance", "glanceHit"], ["route", "routeHit"]]) {
    if (x[k] === y[k]) continue;
    count[k][0]++;
    if (y[hit] > x[hit]) count[k][1]++;
    if (y[hit] < x[hit]) count[k][2]++;
  }
});
const line = ([n, won, lost]) => `differs on ${n} (gold gained ${won}, lost ${lost})`;
console.log(`${a.length} trajectories: glance first ${line(count.glance)}; route pick ${line(count.route)}`);
