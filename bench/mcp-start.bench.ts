/**
 * How long an MCP client waits for `gavel mcp`: from spawning it (stdio, through the SDK's own client)
 * to its `initialize` answer, and to the answer of its first `search_skills`, with no `gavel serve`
 * running (the model loads in the MCP process) and with one running (the MCP process loads no model).
 *
 *   npx tsup && npm run bench -- mcp-start [runs]      (default 5 runs a mode, after one warm-up)
 *
 * Installs examples/skills into a temp bank with the embedded gavel-mini pair (context 2048), as
 * bench/serve.bench.ts does. Needs dist/cli/gavel.js (the CLI as built) and the SDK (a devDependency).
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const root = resolve("."); // npm run bench runs it from the repository root
const cli = join(root, "dist", "cli", "gavel.js");
const runs = Number(process.argv[2] ?? 5);
const task = "Turn the product photos into WebP thumbnails";

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

async function once(bank: string): Promise<{ init: number; search: number }> {
  const t0 = performance.now();
  const client = new Client({ name: "mcp-start-bench", version: "1" });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [cli, "mcp", "--bank", bank, "--context", "2048"], stderr: "ignore" }));
  const init = performance.now() - t0;
  const r = await client.callTool({ name: "search_skills", arguments: { task, k: 3 } });
  const search = performance.now() - t0;
  if (r.isError || (r.structuredContent as { chosen?: string }).chosen !== "image-resizing") throw new Error(`unexpected answer: ${JSON.stringify(r).slice(0, 300)}`);
  await client.close();
  return { init, search };
}

async function mode(label: string, bank: string) {
  await once(bank); // warm-up (page cache)
  const xs: { init: number; search: number }[] = [];
  const load0 = loadavg()[0];
  for (let i = 0; i < runs; i++) xs.push(await once(bank));
  const f = (k: "init" | "search") => `p50 ${pct(xs.map((x) => x[k]), 50).toFixed(0)} ms, max ${Math.max(...xs.map((x) => x[k])).toFixed(0)} ms`;
  console.log(`${label}: initialize ${f("init")}; first search_skills answered ${f("search")} (${runs} runs, load ${load0.toFixed(1)} → ${loadavg()[0].toFixed(1)})`);
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), "gavel-mcp-start-"));
  const bank = join(dir, "bank");
  let server: ChildProcess | undefined;
  try {
    execFileSync(process.execPath, [cli, "install", join(root, "examples", "skills"), "--bank", bank, "--context", "2048"], { stdio: "ignore" });
    console.log(`mcp-start bench: ${cpus().length} × ${cpus()[0]?.model ?? "?"}, node ${process.version}, ${new Date().toISOString()}`);
    console.log("  bank: examples/skills (24 skills), gavel-mini, context 2048; `gavel mcp` over stdio under the SDK's client");
    await mode("no gavel serve (the model loads in gavel mcp)", bank);
    server = spawn(process.execPath, [cli, "serve", "--bank", bank, "--context", "2048"], { stdio: ["ignore", "pipe", "ignore"] });
    await new Promise<void>((res) => server!.stdout!.on("data", (d: Buffer) => d.toString().includes("listening on") && res()));
    await mode("gavel serve running (gavel mcp answers through it)", bank);
  } finally {
    server?.kill("SIGTERM");
    if (server) await new Promise((res) => server!.once("exit", res));
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
