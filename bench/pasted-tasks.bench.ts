/**
 * Requests with a paste: each in-domain task of bench/routing-tasks.ts, and the demo's two off-domain
 * prompts, wrapped in pasted material (neutral service log lines, a Node.js stack trace, functions
 * without a fence, a shell session (the request after a blank line, or right under the last command's
 * output), pytest's report, npm's error log, Go and Rust panics, a unified
 * diff, compiler diagnostics), some with the request after the paste and some before it, all short
 * enough to be read whole. Each is routed over the example skills with the embedded default pair and default
 * options; prints how many go to the skill written for them (or, off-domain, are declined), and the
 * unwrapped tasks as a check that nothing changes without a paste, and each shape's picks task by task.
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
import { logs, routingTasks } from "./routing-tasks.js";

const root = resolve(".");
const all = routingTasks(root);
const model = await Model.load(DEFAULT_MODEL);
const dir = mkdtempSync(join(tmpdir(), "gavel-paste-"));
const router = await Router.open(model, { projections: DEFAULT_PROJECTIONS, bankDir: dir });
await router.install(join(root, "examples", "skills"));

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

// The shapes of the 2026-12-05 audit (bench/results/2026-12-05-cpu-paste-shapes/decision.txt): a shell session, pytest's report, npm's error
// log, a Go panic, a Rust panic with its backtrace, a unified diff, compiler diagnostics.
const SHELL = [
  "$ make deploy",
  "./scripts/check-env.sh",
  "checking environment... ok",
  "uploading build artifacts",
  "upload: dist/app.tar.gz to s3://releases/app/1.4.2/app.tar.gz",
  "$ ssh app-1 systemctl status app",
  "app.service - App server",
  "   Loaded: loaded (/etc/systemd/system/app.service; enabled)",
  "   Active: failed (Result: exit-code) since Fri 2026-12-04 22:14:03 UTC; 3min ago",
  "  Process: 4121 ExecStart=/usr/bin/node /srv/app/server.js (code=exited, status=1/FAILURE)",
  " Main PID: 4121 (code=exited, status=1/FAILURE)",
  "$ curl -sS http://app-1:8080/health",
  "curl: (7) Failed to connect to app-1 port 8080 after 3 ms: Connection refused",
].join("\n");

const PYTEST = [
  "============================= test session starts ==============================",
  "platform linux -- Python 3.11.4, pytest-7.4.0, pluggy-1.2.0",
  "rootdir: /srv/app",
  "collected 12 items",
  "",
  "tests/test_orders.py ..F.........                                        [100%]",
  "",
  "=================================== FAILURES ===================================",
  "_____________________________ test_order_total ______________________________",
  "",
  "    def test_order_total():",
  "        order = make_order(items=3)",
  ">       assert order.total == 30",
  "E       assert 27 == 30",
  "E        +  where 27 = <Order id=7>.total",
  "",
  "tests/test_orders.py:14: AssertionError",
  "=========================== short test summary info ============================",
  "FAILED tests/test_orders.py::test_order_total - assert 27 == 30",
  "========================= 1 failed, 11 passed in 0.42s =========================",
].join("\n");

const NPM = [
  "npm error code ERESOLVE",
  "npm error ERESOLVE unable to resolve dependency tree",
  "npm error",
  "npm error While resolving: web-app@1.4.2",
  "npm error Found: left-pad@1.3.0",
  "npm error node_modules/left-pad",
  "npm error   left-pad@\"^1.3.0\" from the root project",
  "npm error",
  "npm error Could not resolve dependency:",
  "npm error peer left-pad@\"^2.0.0\" from pad-utils@4.1.0",
  "npm error node_modules/pad-utils",
  "npm error   pad-utils@\"^4.1.0\" from the root project",
  "npm error",
  "npm error A complete log of this run can be found in: /home/ci/.npm/_logs/2026-12-05T01_12_44_219Z-debug-0.log",
].join("\n");

const GO_PANIC = [
  "panic: runtime error: index out of range [5] with length 3",
  "",
  "goroutine 1 [running]:",
  "main.(*Queue).Pop(0xc000012080)",
  "\t/home/dev/app/queue.go:41 +0x1d4",
  "main.drain(0xc000012080, 0x5)",
  "\t/home/dev/app/main.go:27 +0x65",
  "main.main()",
  "\t/home/dev/app/main.go:12 +0x2a",
  "",
  "goroutine 18 [chan receive]:",
  "main.worker(0xc00001c0c0)",
  "\t/home/dev/app/worker.go:19 +0x48",
  "created by main.main in goroutine 1",
  "\t/home/dev/app/main.go:10 +0x1b",
  "exit status 2",
].join("\n");

const RUST_PANIC = [
  "thread 'main' panicked at src/queue.rs:41:18:",
  "index out of bounds: the len is 3 but the index is 5",
  "stack backtrace:",
  "   0: rust_begin_unwind",
  "             at /rustc/90b35a6239c3d8bdabc530a6a0816f7ff89a0aaf/library/std/src/panicking.rs:645:5",
  "   1: core::panicking::panic_fmt",
  "             at /rustc/90b35a6239c3d8bdabc530a6a0816f7ff89a0aaf/library/core/src/panicking.rs:72:14",
  "   2: core::panicking::panic_bounds_check",
  "             at /rustc/90b35a6239c3d8bdabc530a6a0816f7ff89a0aaf/library/core/src/panicking.rs:208:5",
  "   3: app::queue::Queue::pop",
  "             at ./src/queue.rs:41:18",
  "   4: app::main",
  "             at ./src/main.rs:12:5",
  "note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.",
].join("\n");

const DIFF = [
  "diff --git a/src/queue.js b/src/queue.js",
  "index 3b18e51..a9c4f02 100644",
  "--- a/src/queue.js",
  "+++ b/src/queue.js",
  "@@ -12,9 +12,11 @@ class Queue {",
  "   pop() {",
  "-    if (this.items.length === 0) return undefined;",
  "-    const item = this.items.shift();",
  "+    if (this.items.length === 0) {",
  "+      return undefined;",
  "+    }",
  "+    const item = this.items[this.head++];",
  "     this.size--;",
  "     return item;",
  "   }",
  " ",
  "   peek() {",
].join("\n");

const COMPILER = [
  "src/queue.ts(41,18): error TS2322: Type 'string' is not assignable to type 'number'.",
  "src/queue.ts(57,3): error TS2554: Expected 1 arguments, but got 2.",
  "src/main.ts(12,5): error TS2345: Argument of type 'undefined' is not assignable to parameter of type 'Item'.",
  "error[E0308]: mismatched types",
  " --> src/queue.rs:41:18",
  "  |",
  "41 |     let size: u32 = self.items.len();",
  "  |               ---   ^^^^^^^^^^^^^^^^ expected `u32`, found `usize`",
  "  |               |",
  "  |               expected due to this",
  "queue.c:12:3: error: implicit declaration of function 'pop_item' [-Wimplicit-function-declaration]",
  "queue.c:27:10: warning: unused variable 'head' [-Wunused-variable]",
  "queue.c:33:1: error: expected ';' before '}' token",
].join("\n");

const shapes: Record<string, (task: string) => string> = {
  "20 log lines, request after": (t) => `Here are the logs from last night:\n${logs(20)}\n\n${t}`,
  "40 log lines, request before": (t) => `${t}\n\nFor context, the logs from last night:\n${logs(40)}`,
  "stack trace, request after": (t) => `I got this:\n\n${STACK}\n\n${t}`,
  "stack trace in a fence, request before": (t) => `${t}\n\nThe error, for reference:\n\`\`\`\n${STACK}\n\`\`\``,
  "Python function without a fence, request after": (t) => `This is the module I am working on:\n\n${PYTHON}\n${t}`,
  "TypeScript function without a fence, request before": (t) => `${t}\n\nHere is some of the code:\n${TYPESCRIPT}`,
  "shell session, request after": (t) => `This is what I ran:\n${SHELL}\n\n${t}`,
  "shell transcript, request right under its output": (t) => `This is what I ran:\n${SHELL}\n${t}`,
  "pytest report, request before": (t) => `${t}\n\nThe test run, for reference:\n${PYTEST}`,
  "npm error log, request after": (t) => `npm install fails in CI:\n${NPM}\n\n${t}`,
  "Go panic, request after": (t) => `The service crashed with:\n${GO_PANIC}\n\n${t}`,
  "Rust panic with a backtrace, request before": (t) => `${t}\n\nIt also panics at start-up:\n${RUST_PANIC}`,
  "unified diff, request after": (t) => `My change so far:\n${DIFF}\n\n${t}`,
  "compiler diagnostics, request before": (t) => `${t}\n\nThe build says:\n${COMPILER}`,
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
// each shape's pick per task, in the tasks' order, for a record-by-record comparison of two runs
const records: string[] = [];
for (const [label, wrap] of Object.entries(shapes)) records.push(`picks ${label}: ${(await line(label, wrap)).join(", ")}`);
console.log(`unwrapped picks: ${plain.join(", ")}`);
for (const r of records) console.log(r);
await router.close();
model.dispose();
rmSync(dir, { recursive: true, force: true });
