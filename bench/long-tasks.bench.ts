/**
 * Long written tasks (issue 17, "Long inputs"): which part of a task longer than the router's task
 * budget to read, its start or its end. Each in-domain task of bench/routing-tasks.ts is built two
 * ways around a neutral filler (pasted service logs, ~3× the task budget):
 *
 * - request last: "Here are the logs from last night:\n<logs>\n\n<task>" (the request follows the paste);
 * - request first: "<task>\n\nFor context, the logs from last night:\n<logs>" (context follows it).
 *
 * Each is routed over the example skills with the embedded default pair (context 2,048, skill budget
 * 1,024: a task budget of a few hundred tokens), reading the task's start (the text as given, to a router opened with `truncate: "start"`: the
 * encoder keeps the start) or its end (the text cut here to its last task-budget tokens, which is what
 * keeping the end reads). Counts the tasks routed to the expected skill.
 *
 *   npm run bench -- long-tasks [default|no-abstain] [log lines=60]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Model } from "../src/model/Model.js";
import { Router } from "../src/route/Router.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../src/defaults.js";
import { logs, routingTasks } from "./routing-tasks.js";

const root = resolve(".");
const tasks = routingTasks(root).filter((t) => t.expected !== null);
const model = await Model.load(DEFAULT_MODEL, { contextSize: 2048 });
const dir = mkdtempSync(join(tmpdir(), "gavel-long-"));
const router = await Router.open(model, { projections: DEFAULT_PROJECTIONS, bankDir: dir, skillBudget: 1024, truncate: "start" });
await router.install(join(root, "examples", "skills"));

/** The last `n` tokens of a text, as text (what keeping the end of a written task reads). */
function lastTokens(text: string, n: number): string {
  const ids = model.tokenize(text, { special: false, addBos: false });
  return ids.length <= n ? text : model.detokenize(ids.subarray(ids.length - n));
}

/** The first and the last n/2 tokens of a text, as text (keeping both ends). */
function bothEnds(text: string, n: number): string {
  const ids = model.tokenize(text, { special: false, addBos: false });
  if (ids.length <= n) return text;
  const h = Math.floor(n / 2) - 4;
  return model.detokenize(ids.subarray(0, h)) + "\n…\n" + model.detokenize(ids.subarray(ids.length - h));
}

const filler = logs(Number(process.argv[3] ?? 60));
let budget = 0;
const counts = { last: { start: 0, end: 0, both: 0 }, first: { start: 0, end: 0, both: 0 } };
const winners = new Map<string, number>();
const ranks = { last: { start: 0, end: 0, both: 0 }, first: { start: 0, end: 0, both: 0 } };
const options = { abstain: process.argv[2] === "no-abstain" ? false : undefined };
for (const t of tasks) {
  const builds = {
    last: `Here are the logs from last night:\n${filler}\n\n${t.task}`,
    first: `${t.task}\n\nFor context, the logs from last night:\n${filler}`,
  };
  for (const [shape, text] of Object.entries(builds) as ["last" | "first", string][]) {
    const start = await router.route(text, options);
    if (!start.truncation) throw new Error(`the ${shape} task was not cut: make the filler longer`);
    budget = start.truncation.keptTokens;
    // keep the end: the text cut to its last keptTokens tokens (a little less, so that it is not cut again)
    const endText = lastTokens(text, budget - 4);
    const bothText = bothEnds(text, budget - 8);
    const end = await router.route(endText, options);
    const both = await router.route(bothText, options);
    if (start.skill === t.expected) counts[shape].start++;
    if (end.skill === t.expected) counts[shape].end++;
    if (both.skill === t.expected) counts[shape].both++;
    for (const r of [start, end, both]) winners.set(String(r.skill), (winners.get(String(r.skill)) ?? 0) + 1);
    // the expected skill's rank by the glance alone (1 = first): finer than the winner
    for (const [policy, x] of [["start", text], ["end", endText], ["both", bothText]] as const) {
      const hits = await router.glance(x, { topK: 1000 });
      ranks[shape][policy] += hits.findIndex((h) => h.skill === t.expected) + 1;
    }
  }
}
console.log(`machine: ${cpus().length} × ${cpus()[0].model}, ${new Date().toISOString().slice(0, 10)}; ${tasks.length} in-domain tasks, task budget ${budget} tokens, filler ${model.tokenize(filler, { special: false, addBos: false }).length} tokens`);
console.log(`abstention ${options.abstain === false ? "off" : "default"}; winners: ${[...winners].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(", ")}`);
console.log("| task shape | keep the start | keep the end | keep both ends (½ + ½) |\n| --- | --- | --- | --- |");
const row = (label: string, c: { start: number; end: number; both: number }, n: number) => console.log(`| ${label} | ${c.start}/${n} | ${c.end}/${n} | ${c.both}/${n} |`);
row("request after the logs", counts.last, tasks.length);
row("request before the logs", counts.first, tasks.length);
const rrow = (label: string, c: { start: number; end: number; both: number }, n: number) => console.log(`| ${label}: mean glance rank of the expected skill | ${(c.start / n).toFixed(1)} | ${(c.end / n).toFixed(1)} | ${(c.both / n).toFixed(1)} |`);
rrow("request after the logs", ranks.last, tasks.length);
rrow("request before the logs", ranks.first, tasks.length);
row("all", { start: counts.last.start + counts.first.start, end: counts.last.end + counts.first.end, both: counts.last.both + counts.first.both }, 2 * tasks.length);
await router.close();
await model.dispose();
rmSync(dir, { recursive: true, force: true });
