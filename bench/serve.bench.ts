/**
 * Latency of the resident router (`gavel serve`) and of the Claude Code hook over it, warm.
 *
 * Run (from the package root, after `npx tsup`: it spawns dist/cli/gavel.js as a user would):
 *
 *   npm run bench -- serve [runs]
 *
 * Installs examples/skills into a temp bank with the embedded gavel-mini pair (context 2048), starts
 * `gavel serve` on it, and measures, after a warm-up:
 * - the resident route over one socket connection: glance-only (`glance`: first stage + abstention,
 *   no verdict) and full (`route`: with the verdict), p50 / p95;
 * - the hook end to end, spawned with a UserPromptSubmit JSON on stdin, p50 / p95: through the `gavel`
 *   executable (dist/cli/gavel.cjs, package.json "bin", which runs the hook itself from one CommonJS
 *   file), through the CLI module (dist/cli/gavel.js, ESM, its own fast path), and `node -e 0` (node's
 *   own start) for scale, the three interleaved run by run so that they share the machine's load;
 *   the executable with --verdict; with no server running; and through `npx --no gavel` (the
 *   installer's runner where a project has no node_modules/.bin/gavel), at most 10 runs;
 * - the hook while the server is busy: 20 other clients sending `route` back to back (the hook's
 *   default budget), and 200 such clients with `--timeout-ms 1000`; the hook's p50 / p95, how many
 *   runs added context or gave up within the budget, their exit codes, the load average.
 * - concurrency: C clients at once (C = 1, 5, 20, 200; one socket connection each, loopback), each
 *   sending `route` requests one after another (closed loop, distinct tasks), per-request p50 / p95
 *   and the ratio of each p95 to the single client's;
 * - a long task beside control requests: one route of a 3.9 MB task, a `ping` every 250 ms while
 *   it runs (worst and median) and a short route sent 1 s after it.
 *
 * `npm run bench -- serve [runs] hook` runs only the hook warm (beside `node -e 0`), busy, and given a
 * 3 MB prompt (5 runs).
 * `npm run bench -- serve [runs] concurrency [levels] [cli] [serve options]` runs only the last two
 * parts; `levels` (default 1,5,20,200) picks the client counts, `cli` another build's gavel.js (a
 * before/after pair from one checkout; `-` for this one's), `serve options` more options of `gavel
 * serve`, one string (e.g. "--threads 1").
 */
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { connect } from "../src/serve/client.js";

const root = resolve(".");
const runs = Number(process.argv[2] ?? 40);
const only = process.argv[3] ?? "";
const levels = (process.argv[4] ?? "1,5,20,200").split(",").map(Number);
const cli = resolve(process.argv[5] === undefined || process.argv[5] === "-" ? join(root, "dist", "cli", "gavel.js") : process.argv[5]);
/** node's own flags for the server process only (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`, which NODE_OPTIONS refuses) */
const serverNodeArgs = (process.env.BENCH_SERVE_NODE_ARGS ?? "").split(" ").filter((a) => a !== "");
const serveArgs = (process.argv[6] ?? "").split(" ").filter((a) => a !== "");
const env = { ...process.env, GAVEL_MODEL: "", GAVEL_PROJECTIONS: "", GAVEL_BANK: "" };
const tasks = (JSON.parse(readFileSync(join(root, "examples", "demo-tasks.json"), "utf8")) as { task: string }[]).map((t) => t.task);

/** A script of the npm that comes with this node (npx-cli.js: what `npx` runs), run here with this node. */
function npmCli(script: string): string {
  const where = [join(dirname(process.execPath), "..", "lib", "node_modules", "npm", "bin", script), join(dirname(process.execPath), "node_modules", "npm", "bin", script)];
  const found = where.find((p) => existsSync(p));
  if (!found) throw new Error(`npm's ${script} not found beside ${process.execPath}`);
  return found;
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}
const line = (what: string, xs: number[]) => console.log(`  ${what.padEnd(44)} p50 ${pct(xs, 50).toFixed(1).padStart(7)} ms   p95 ${pct(xs, 95).toFixed(1).padStart(7)} ms   (n = ${xs.length})`);

/** Spawns node with args and stdin (in `cwd`); resolves with the wall time (ms), stdout and stderr. */
function timed(args: string[], stdin = "", cwd?: string): Promise<{ ms: number; out: string; err: string; code: number | null }> {
  return new Promise((res, rej) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, args, { env, cwd });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
    child.on("error", rej);
    child.on("close", (code) => res({ ms: performance.now() - t0, out, err, code }));
    child.stdin.end(stdin);
  });
}

async function series(n: number, f: (i: number) => Promise<number>): Promise<number[]> {
  for (let i = 0; i < 3; i++) await f(i); // warm-up
  const xs: number[] = [];
  for (let i = 0; i < n; i++) xs.push(await f(i));
  return xs;
}

/** C clients at once, `each` routes each (closed loop): every request's latency in ms. */
async function concurrent(bank: string, clients: number, each: number, op: "route" | "glance"): Promise<number[]> {
  const cs = await Promise.all(Array.from({ length: clients }, () => connect({ bank })));
  const xs: number[] = [];
  try {
    await Promise.all(
      cs.map(async (c, k) => {
        for (let i = 0; i < each; i++) {
          const t0 = performance.now();
          await c.request(op, { task: tasks[(k * each + i) % tasks.length] });
          xs.push(performance.now() - t0);
        }
      }),
    );
  } finally {
    for (const c of cs) c.close();
  }
  return xs;
}

/** The concurrency table: p50/p95 at 1, 5, 20 and 200 clients, and each p95 against one client's. */
async function concurrencyTable(bank: string, op: "route" | "glance") {
  console.log(`concurrency, \`${op}\` (one socket connection per client, each sending one request after another):`);
  await concurrent(bank, 1, 3, op); // warm-up
  let single = NaN;
  for (const c of levels) {
    const each = Math.max(2, Math.ceil(runs / c));
    const xs = await concurrent(bank, c, each, op);
    if (c === 1) single = pct(xs, 95);
    console.log(`  ${String(c).padStart(3)} clients × ${String(each).padStart(2)}   p50 ${pct(xs, 50).toFixed(1).padStart(8)} ms   p95 ${pct(xs, 95).toFixed(1).padStart(8)} ms   p95 / one client's ${(pct(xs, 95) / single).toFixed(2).padStart(6)}   (n = ${xs.length}; load average ${loadavg()[0].toFixed(2)})`);
  }
}

/**
 * The hook while the server is busy: `clients` other connections send `route` requests back to back
 * (closed loop) the whole time, and the hook (`hookArgs` after `gavel`) runs `n` times one after
 * another. Prints the hook's p50 / p95, how many runs added context, abstained or gave up within their
 * budget ("no answer within"), every exit code seen, the busy clients' own route p50, and the load.
 */
async function busyHook(bank: string, bin: string, label: string, hookArgs: string[], input: (i: number) => string, clients: number, n: number) {
  const cs = await Promise.all(Array.from({ length: clients }, () => connect({ bank })));
  let stop = false;
  const busy: number[] = [];
  const loops = cs.map(async (c, k) => {
    for (let i = 0; !stop; i++) {
      const t0 = performance.now();
      await c.request("route", { task: tasks[(k + i) % tasks.length] }).catch(() => undefined);
      busy.push(performance.now() - t0);
    }
  });
  const load0 = loadavg()[0];
  try {
    await new Promise((r) => setTimeout(r, 1000)); // the loop under way
    let added = 0;
    let gaveUp = 0;
    const codes = new Set<number | null>();
    let call = 0;
    const nodeBare: number[] = [];
    const xs = await series(n, async (i) => {
      const r = await timed([bin, ...hookArgs], input(i));
      nodeBare.push((await timed(["-e", "0"])).ms); // node's own start on the machine as busy
      if (call++ >= 3) {
        // series' first 3 calls are its warm-up
        if (r.out) added++;
        if (/no answer within/.test(r.err)) gaveUp++;
      }
      codes.add(r.code);
      return r.ms;
    });
    line(`${label}, ${clients} busy clients`, xs);
    line("node -e 0, same runs", nodeBare.slice(3));
    console.log(`    added context ${added}, gave up within the budget ${gaveUp}, nothing added otherwise ${n - added - gaveUp}; exit codes ${[...codes].join(",")}; the busy clients' route p50 ${pct(busy, 50).toFixed(1)} ms (n = ${busy.length}); load average ${load0.toFixed(2)} → ${loadavg()[0].toFixed(2)}`);
  } finally {
    stop = true;
    await Promise.all(loops);
    for (const c of cs) c.close();
  }
}

/**
 * A 3.9 MB task routed beside control requests: a `ping` every 250 ms on another connection while it
 * runs (their worst and median latency), and a short route sent 1 s after it (its latency).
 */
async function longTaskProbe(bank: string) {
  const big = (tasks.join(" ") + " ").repeat(Math.ceil(3_900_000 / (tasks.join(" ").length + 1))).slice(0, 3_900_000);
  const [a, b, c] = await Promise.all([connect({ bank }), connect({ bank }), connect({ bank })]);
  try {
    const t0 = performance.now();
    let running = true;
    const longRun = a.request("route", { task: big }).then(
      () => ({ ms: performance.now() - t0, outcome: "ok" }),
      (e: Error & { code?: string }) => ({ ms: performance.now() - t0, outcome: e.code ?? e.message }),
    );
    void longRun.finally(() => (running = false));
    const pings: number[] = [];
    const pinging = (async () => {
      while (running) {
        const t = performance.now();
        await b.request("ping");
        pings.push(performance.now() - t);
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    await new Promise((r) => setTimeout(r, 1000));
    const t1 = performance.now();
    const s = await c.request("route", { task: tasks[0] }).then(() => performance.now() - t1);
    const l = await longRun;
    await pinging;
    console.log("a 3.9 MB task beside control requests:");
    console.log(`  route of the 3.9 MB task: ${l.ms.toFixed(0)} ms (${l.outcome})`);
    console.log(`  pings every 250 ms meanwhile: worst ${Math.max(...pings).toFixed(1)} ms, p50 ${pct(pings, 50).toFixed(1)} ms (n = ${pings.length})`);
    console.log(`  short route sent 1 s after it: ${s.toFixed(1)} ms`);
  } finally {
    for (const x of [a, b, c]) x.close();
  }
}

/** The hook given a 3 MB prompt (the issue's case: 22-118 s, past Claude Code's 10 s), 5 runs: wall time and what it said. */
async function bigPromptHook(bin: string, dir: string) {
  const big = (tasks.join(" ") + " ").repeat(Math.ceil(3_000_000 / (tasks.join(" ").length + 1))).slice(0, 3_000_000);
  const input = JSON.stringify({ session_id: "bench", transcript_path: "/dev/null", cwd: dir, hook_event_name: "UserPromptSubmit", prompt: big });
  const xs: number[] = [];
  let said = "";
  const codes = new Set<number | null>();
  for (let i = 0; i < 5; i++) {
    const r = await timed([bin, "hook", "claude-code"], input);
    xs.push(r.ms);
    codes.add(r.code);
    said = r.err.trim() || r.out.slice(0, 120);
  }
  console.log(`hook given a 3 MB prompt (load average ${loadavg()[0].toFixed(2)}):`);
  line("gavel hook claude-code, 3 MB prompt", xs);
  console.log(`    max ${Math.max(...xs).toFixed(1)} ms; exit codes ${[...codes].join(",")}; it said: ${said.slice(0, 200)}`);
}

/** The hook with a busy server: 20 clients at the default budget, 200 clients with a 1 s budget. */
async function busyHooks(bank: string, bin: string, input: (i: number) => string) {
  console.log("hook end to end while other clients keep the server busy (closed loops of `route`):");
  await busyHook(bank, bin, "gavel hook claude-code", ["hook", "claude-code"], input, 20, Math.min(runs, 20));
  await busyHook(bank, bin, "gavel hook claude-code --timeout-ms 1000", ["hook", "claude-code", "--timeout-ms", "1000"], input, 200, Math.min(runs, 20));
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), "gavel-serve-bench-"));
  const bank = join(dir, ".gavel", "bank");
  execFileSync(process.execPath, [cli, "install", join(root, "examples", "skills"), "--bank", bank, "--context", "2048"], { env, stdio: "ignore" });
  // the `gavel` executable beside the CLI module, linked into the project as npm links a "bin" (for npx)
  const bin = join(dirname(cli), "gavel.cjs");
  mkdirSync(join(dir, "node_modules", ".bin"), { recursive: true });
  symlinkSync(bin, join(dir, "node_modules", ".bin", "gavel"));

  console.log(`serve bench: ${cpus().length} × ${cpus()[0]?.model ?? "?"}, node ${process.version}, ${new Date().toISOString()}`);
  console.log(`  bank: examples/skills (24 skills), gavel-mini, context 2048, ${runs} runs each`);
  const noServer = only === "concurrency" || only === "hook" ? [] : await series(runs, async () => (await timed([bin, "hook", "claude-code"], JSON.stringify({ prompt: tasks[0], cwd: dir }))).ms);
  const server: ChildProcess = spawn(process.execPath, [...serverNodeArgs, cli, "serve", "--bank", bank, "--context", "2048", ...serveArgs], { env, stdio: ["ignore", "pipe", "inherit"] });
  await new Promise<void>((res) => server.stdout!.on("data", (d: Buffer) => d.toString().includes("listening on") && res()));
  try {
    if (only === "concurrency") {
      console.log(`serve bench (concurrency): ${cpus().length} × ${cpus()[0]?.model ?? "?"}, node ${process.version}, ${new Date().toISOString()}, ${runs} requests per level, ${cli}${serveArgs.length ? ` serve ${serveArgs.join(" ")}` : ""}, load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
      await longTaskProbe(bank);
      await concurrencyTable(bank, "glance");
      await concurrencyTable(bank, "route");
      return;
    }
    const hookInput = (i: number) => JSON.stringify({ session_id: "bench", transcript_path: "/dev/null", cwd: dir, hook_event_name: "UserPromptSubmit", prompt: tasks[i % tasks.length] });
    if (only === "hook") {
      // the hook alone: warm and idle (beside node's own start, interleaved), then with a busy server
      console.log(`serve bench (hook): ${cpus().length} × ${cpus()[0]?.model ?? "?"}, node ${process.version}, ${new Date().toISOString()}, ${runs} runs each, load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
      const nodeBare: number[] = [];
      let routed = 0;
      const hook = await series(runs, async (i) => {
        const r = await timed([bin, "hook", "claude-code"], hookInput(i));
        if (r.out) routed++;
        nodeBare.push((await timed(["-e", "0"])).ms);
        return r.ms;
      });
      nodeBare.splice(0, 3);
      console.log(`hook end to end, warm server, nothing else asking it (load average at the end ${loadavg()[0].toFixed(2)}):`);
      line("gavel hook claude-code (glance-only)", hook);
      line("node -e 0 (node's own start, same runs)", nodeBare);
      console.log(`  (added context for ${routed} of ${runs + 3} prompts; the others abstained)`);
      await busyHooks(bank, bin, hookInput);
      await bigPromptHook(bin, dir);
      return;
    }
    const c = await connect({ bank });
    const glance = await series(runs, async (i) => {
      const t0 = performance.now();
      await c.request("glance", { task: tasks[i % tasks.length] });
      return performance.now() - t0;
    });
    const full = await series(runs, async (i) => {
      const t0 = performance.now();
      await c.request("route", { task: tasks[i % tasks.length] });
      return performance.now() - t0;
    });
    c.close();
    let routed = 0;
    const hookCli: number[] = [];
    const nodeBare: number[] = [];
    const hook = await series(runs, async (i) => {
      const r = await timed([bin, "hook", "claude-code"], hookInput(i));
      if (r.out) routed++;
      hookCli.push((await timed([cli, "hook", "claude-code"], hookInput(i))).ms);
      nodeBare.push((await timed(["-e", "0"])).ms);
      return r.ms;
    });
    hookCli.splice(0, 3); // series' warm-up runs
    nodeBare.splice(0, 3);
    const hookVerdict = await series(runs, async (i) => (await timed([bin, "hook", "claude-code", "--verdict"], hookInput(i))).ms);
    const npxRuns = Math.min(runs, 10);
    const hookNpx = await series(npxRuns, async (i) => (await timed([npmCli("npx-cli.js"), "--no", "gavel", "hook", "claude-code"], hookInput(i), dir)).ms);
    console.log("resident route (one socket connection):");
    line("glance-only (first stage + abstention)", glance);
    line("full (glance + verdict)", full);
    console.log("hook end to end (spawned node, JSON on stdin):");
    line("gavel hook claude-code (glance-only)", hook);
    line("gavel.js hook claude-code (the CLI module)", hookCli);
    line("node -e 0 (node's own start, same runs)", nodeBare);
    line("gavel hook claude-code --verdict", hookVerdict);
    line("gavel hook, no server running", noServer);
    line("npx --no gavel hook claude-code", hookNpx);
    console.log(`  (the glance-only hook added context for ${routed} of ${runs + 3} prompts; the others abstained)`);
    await busyHooks(bank, bin, hookInput);
  } finally {
    server.kill("SIGTERM");
    await new Promise((r) => server.on("close", r));
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
