/**
 * Requests with a paste: each in-domain task of bench/routing-tasks.ts, and the demo's two off-domain
 * prompts, wrapped in pasted material of no example skill's domain (neutral service log lines, a
 * Node.js stack trace), once with the request after the paste and once before it, all short enough
 * to be read whole. Each is routed over the example skills with the embedded default pair and default
 * options; prints how many go to the skill written for them (or, off-domain, are declined), and the
 * unwrapped tasks as a check that nothing changes without a paste.
 *
 * Run it once with GAVEL_PASTE_WEIGHT=off and once without to compare the two readings of a paste
 * (src/lexical/paste.ts):
 *
 *   GAVEL_PASTE_WEIGHT=off npm run bench -- pasted-tasks; npm run bench -- pasted-tasks
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Model } from "../src/model/Model.js";
import { Router } from "../src/route/Router.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../src/defaults.js";
import { config } from "../src/config.js";
import { routingTasks } from "./routing-tasks.js";

const root = resolve(".");
const all = routingTasks(root);
const model = await Model.load(DEFAULT_MODEL);
const dir = mkdtempSync(join(tmpdir(), "gavel-paste-"));
const router = await Router.open(model, { projections: DEFAULT_PROJECTIONS, bankDir: dir });
await router.install(join(root, "examples", "skills"));

/** Neutral log lines (no example skill's domain words beyond what any service log has). */
function logs(lines: number): string {
  const msgs = ["request handled", "cache refreshed", "worker heartbeat", "session renewed", "queue drained", "config reloaded", "metrics flushed", "connection reused"];
  const out: string[] = [];
  for (let i = 0; i < lines; i++) {
    const s = String(i % 60).padStart(2, "0");
    out.push(`2026-11-26T03:${String(Math.floor(i / 60) % 60).padStart(2, "0")}:${s}Z INFO svc-${i % 7} ${msgs[i % msgs.length]} id=${(i * 7919) % 100000} took=${(i * 37) % 900}ms`);
  }
  return out.join("\n");
}

const STACK = [
  "Error: request failed with status 500",
  "    at handle (/srv/app/lib/handler.js:42:7)",
  "    at Layer.handle [as handle_request] (/srv/app/node_modules/router/lib/layer.js:95:5)",
  "    at next (/srv/app/node_modules/router/lib/route.js:137:13)",
  "    at Route.dispatch (/srv/app/node_modules/router/lib/route.js:112:3)",
  "    at /srv/app/node_modules/router/index.js:281:22",
  "    at Function.process_params (/srv/app/node_modules/router/index.js:335:12)",
  "    at next (/srv/app/node_modules/router/index.js:275:10)",
  "    at session (/srv/app/lib/session.js:18:5)",
  "    at processTicksAndRejections (node:internal/process/task_queues:95:5)",
  "    at async Promise.all (index 0)",
  "    at async main (/srv/app/bin/server.js:61:3)",
  "  code: 'E_UPSTREAM',",
  "  status: 500",
].join("\n");

const PYTHON = [
  "def shipping_cost(order, zones, rates):",
  "    total = 0",
  "    for item in order.items:",
  "        zone = zones.get(item.destination)",
  "        if zone is None:",
  "            raise KeyError(item.destination)",
  "        weight = item.weight * item.quantity",
  "        rate = rates[zone]",
  "        if weight > rate.limit:",
  "            total += rate.base + (weight - rate.limit) * rate.extra",
  "        else:",
  "            total += rate.base",
  "    if order.express:",
  "        total *= 1.5",
  "    return round(total, 2)",
  "",
].join("\n");

const TYPESCRIPT = [
  "export function mergeSettings(base: Settings, local: Partial<Settings>): Settings {",
  "  const out: Settings = { ...base };",
  "  for (const [key, value] of Object.entries(local)) {",
  "    if (value === undefined) continue;",
  "    if (typeof value === \"object\" && !Array.isArray(value)) {",
  "      out[key] = { ...(base[key] ?? {}), ...value };",
  "    } else {",
  "      out[key] = value;",
  "    }",
  "  }",
  "  if (out.retries < 0) {",
  "    throw new RangeError(\"retries\");",
  "  }",
  "  return out;",
  "}",
].join("\n");

const shapes: Record<string, (task: string) => string> = {
  "20 log lines, request after": (t) => `Here are the logs from last night:\n${logs(20)}\n\n${t}`,
  "40 log lines, request before": (t) => `${t}\n\nFor context, the logs from last night:\n${logs(40)}`,
  "stack trace, request after": (t) => `I got this:\n\n${STACK}\n\n${t}`,
  "stack trace in a fence, request before": (t) => `${t}\n\nThe error, for reference:\n\`\`\`\n${STACK}\n\`\`\``,
  "Python function without a fence, request after": (t) => `This is the module I am working on:\n\n${PYTHON}\n${t}`,
  "TypeScript function without a fence, request before": (t) => `${t}\n\nHere is some of the code:\n${TYPESCRIPT}`,
};

const right = (skill: string | null, expected: string | null) => skill === expected;
const mode = config().pasteWeight;
console.log(`machine: ${cpus().length} × ${cpus()[0].model}, ${new Date().toISOString().slice(0, 10)}; GAVEL_PASTE_WEIGHT=${mode}`);
console.log("| shape | in-domain routed right (declined) | off-domain declined |\n| --- | --- | --- |");
const line = async (label: string, wrap: (t: string) => string) => {
  let ok = 0, declined = 0, offOk = 0, offN = 0, inN = 0;
  const picks: string[] = [];
  for (const t of all) {
    const r = await router.route(wrap(t.task));
    picks.push(String(r.skill));
    if (t.expected === null) { offN++; if (r.skill === null) offOk++; continue; }
    inN++;
    if (right(r.skill, t.expected)) ok++;
    if (r.skill === null) declined++;
  }
  console.log(`| ${label} | ${ok}/${inN} (${declined}) | ${offOk}/${offN} |`);
  return picks;
};
const plain = await line("no paste", (t) => t);
for (const [label, wrap] of Object.entries(shapes)) await line(label, wrap);
console.log(`unwrapped picks: ${plain.join(", ")}`);
await router.close();
model.dispose();
rmSync(dir, { recursive: true, force: true });
