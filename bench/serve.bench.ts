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
 * - the hook end to end: `node dist/cli/gavel.js hook claude-code` spawned with a UserPromptSubmit
 *   JSON on stdin, glance-only and --verdict, p50 / p95;
 * - the same hook from a lean entry (only src/cli/commands/hook.ts and the serve client, bundled
 *   here), for comparison: gavel.ts's fast path for `hook claude-code` imports only that chunk, so
 *   the two should agree within noise;
 * - the hook with no server running, and `node -e 0` (node's own start) for scale.
 */
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { connect } from "../src/serve/client.js";

const root = resolve(".");
const cli = join(root, "dist", "cli", "gavel.js");
const runs = Number(process.argv[2] ?? 40);
const env = { ...process.env, GAVEL_MODEL: "", GAVEL_PROJECTIONS: "", GAVEL_BANK: "" };
const tasks = (JSON.parse(readFileSync(join(root, "examples", "demo-tasks.json"), "utf8")) as { task: string }[]).map((t) => t.task);

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}
const line = (what: string, xs: number[]) => console.log(`  ${what.padEnd(44)} p50 ${pct(xs, 50).toFixed(1).padStart(7)} ms   p95 ${pct(xs, 95).toFixed(1).padStart(7)} ms   (n = ${xs.length})`);

/** Spawns node with args and stdin; resolves with the wall time (ms) and stdout. */
function timed(args: string[], stdin = ""): Promise<{ ms: number; out: string; code: number | null }> {
  return new Promise((res, rej) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, args, { env });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.on("error", rej);
    child.on("close", (code) => res({ ms: performance.now() - t0, out, code }));
    child.stdin.end(stdin);
  });
}

async function series(n: number, f: (i: number) => Promise<number>): Promise<number[]> {
  for (let i = 0; i < 3; i++) await f(i); // warm-up
  const xs: number[] = [];
  for (let i = 0; i < n; i++) xs.push(await f(i));
  return xs;
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), "gavel-serve-bench-"));
  const bank = join(dir, ".gavel", "bank");
  execFileSync(process.execPath, [cli, "install", join(root, "examples", "skills"), "--bank", bank, "--context", "2048"], { env, stdio: "ignore" });
  // the lean hook entry: only the hook module and what it imports
  const lean = join(root, ".cache", "bench", "hook-lean.mjs");
  const leanSrc = join(root, ".cache", "bench", "hook-lean.ts");
  writeFileSync(leanSrc, `import { runClaudeCodeHook } from "../../src/cli/commands/hook.js";\nprocess.exitCode = await runClaudeCodeHook(process.argv.slice(2));\n`);
  execFileSync("npx", ["esbuild", leanSrc, "--bundle", "--platform=node", "--format=esm", "--packages=external", `--outfile=${lean}`, "--log-level=warning"], { stdio: "inherit" });

  console.log(`serve bench: ${cpus().length} × ${cpus()[0]?.model ?? "?"}, node ${process.version}, ${new Date().toISOString()}`);
  console.log(`  bank: examples/skills (24 skills), gavel-mini, context 2048, ${runs} runs each`);
  const noServer = await series(runs, async () => (await timed([cli, "hook", "claude-code"], JSON.stringify({ prompt: tasks[0], cwd: dir }))).ms);
  const server: ChildProcess = spawn(process.execPath, [cli, "serve", "--bank", bank, "--context", "2048"], { env, stdio: ["ignore", "pipe", "inherit"] });
  await new Promise<void>((res) => server.stdout!.on("data", (d: Buffer) => d.toString().includes("listening on") && res()));
  try {
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
    const hookInput = (i: number) => JSON.stringify({ session_id: "bench", transcript_path: "/dev/null", cwd: dir, hook_event_name: "UserPromptSubmit", prompt: tasks[i % tasks.length] });
    let routed = 0;
    const hook = await series(runs, async (i) => {
      const r = await timed([cli, "hook", "claude-code"], hookInput(i));
      if (r.out) routed++;
      return r.ms;
    });
    const hookVerdict = await series(runs, async (i) => (await timed([cli, "hook", "claude-code", "--verdict"], hookInput(i))).ms);
    const hookLean = await series(runs, async (i) => (await timed([lean, "claude-code"], hookInput(i))).ms);
    const nodeBare = await series(runs, async () => (await timed(["-e", "0"])).ms);
    console.log("resident route (one socket connection):");
    line("glance-only (first stage + abstention)", glance);
    line("full (glance + verdict)", full);
    console.log("hook end to end (spawned node, JSON on stdin):");
    line("gavel.js hook claude-code (glance-only)", hook);
    line("gavel.js hook claude-code --verdict", hookVerdict);
    line("lean entry (hook module only), glance-only", hookLean);
    line("gavel.js hook, no server running", noServer);
    line("node -e 0 (node's own start)", nodeBare);
    console.log(`  (the glance-only hook added context for ${routed} of ${runs + 3} prompts; the others abstained)`);
  } finally {
    server.kill("SIGTERM");
    await new Promise((r) => server.on("close", r));
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
