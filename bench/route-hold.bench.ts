/**
 * How long a route of a very long task holds the JavaScript thread. The embedded default pair over
 * the example skills (context 2,048) routes tasks of 10 KB to 2.4 MB, each twice: once to its end, and
 * once with its signal aborted 20 ms after `route` returns its promise. Per size: the time `route`
 * takes to return its promise (work done on the caller's thread before the first await), the longest
 * gap between ticks of a 10 ms interval timer while the route runs (how long the event loop was
 * held), and when the promise settled (routed, or ABORTED).
 *
 * With `log`, each task is instead pasted service log lines (one per line) with a one-line request
 * after them, the shape whose paste is read at the request's weight (src/lexical/paste.ts); run it
 * with GAVEL_PASTE_WEIGHT=off too to see what reading the paste apart costs. With `chat`, the context
 * is a conversation: user and assistant messages of about 4 KB each, in turn, read as a live rollout
 * (a chat's default).
 *
 *   npm run bench -- route-hold [sizes in KB = 10,100,500,2400] [log|chat]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Model } from "../src/model/Model.js";
import { Router } from "../src/route/Router.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../src/defaults.js";
import { config } from "../src/config.js";
import { loopHold } from "./loop-hold.js";

const sizes = (process.argv[2] ?? "10,100,500,2400").split(",").map(Number);
const shape = process.argv[3] === "log" || process.argv[3] === "chat" ? process.argv[3] : "line";
/** About `kb` KB of conversation: messages of about 4 KB, the user's and the assistant's in turn, the request last. */
function chatTask(kb: number): { role: "user" | "assistant"; content: string }[] {
  const turn = "I ran the exporter again and the rows still come out shifted by one column in the second table. ";
  const n = Math.max(1, Math.round(kb / 4));
  const msgs = Array.from({ length: n }, (_, i) => ({ role: i % 2 ? ("assistant" as const) : ("user" as const), content: turn.repeat(42) }));
  msgs.push({ role: "user", content: "Extract the tables from report.pdf and clean the rows." });
  return msgs;
}
/** About `kb` KB of log lines, then the request. */
function logTask(kb: number): string {
  const lines: string[] = ["Here are the logs:"];
  for (let i = 0, n = 0; n < kb * 1024; i++) {
    const l = `2026-11-26T03:00:${String(i % 60).padStart(2, "0")}Z INFO svc-${i % 7} worker heartbeat id=${i * 31} took=${i % 900}ms`;
    lines.push(l);
    n += l.length + 1;
  }
  return `${lines.join("\n")}\n\nExtract the tables from report.pdf and clean the rows.`;
}
const model = await Model.load(DEFAULT_MODEL, { contextSize: 2048 });
const dir = mkdtempSync(join(tmpdir(), "gavel-hold-"));
const router = await Router.open(model, { projections: DEFAULT_PROJECTIONS, bankDir: dir });
await router.install(join(resolve("."), "examples", "skills"));
console.log(`route-hold: ${cpus()[0]?.model} × ${cpus().length}, node ${process.version}, ${new Date().toISOString()}, load ${loadavg()[0].toFixed(1)}, tasks: ${shape === "log" ? "log lines and a request" : shape === "chat" ? "a conversation, 4 KB messages" : "one line"}, GAVEL_PASTE_WEIGHT=${config().pasteWeight}`);
console.log("| task | route returns its promise | longest event-loop hold | settled | aborted 20 ms after the return: settled |");
console.log("| --- | --- | --- | --- | --- |");

async function once(task: string | ReturnType<typeof chatTask>, abortAfterMs?: number) {
  const loop = loopHold();
  const ac = new AbortController();
  const t0 = performance.now();
  const p = router.route(task, { signal: ac.signal });
  const returned = performance.now() - t0;
  if (abortAfterMs !== undefined) setTimeout(() => ac.abort(), abortAfterMs);
  let outcome: string;
  try {
    outcome = `routed (${(await p).skill ?? "declined"})`;
  } catch (e) {
    outcome = (e as { code?: string }).code ?? String(e);
  }
  const settled = performance.now() - t0;
  const hold = loop.stop();
  return { returned, hold, settled, outcome };
}

for (const kb of sizes) {
  const task = shape === "chat" ? chatTask(kb) : shape === "log" ? logTask(kb) : "Extract the tables from report.pdf and clean the rows. ".repeat(Math.ceil((kb * 1024) / 55));
  const whole = await once(task);
  const aborted = await once(task, 20);
  const ms = (x: number) => `${x.toFixed(0)} ms`;
  console.log(`| ${kb} KB | ${ms(whole.returned)} | ${ms(whole.hold)} | ${ms(whole.settled)}, ${whole.outcome} | ${ms(aborted.settled)}, ${aborted.outcome} |`);
}
await router.close();
await model.dispose();
rmSync(dir, { recursive: true, force: true });
