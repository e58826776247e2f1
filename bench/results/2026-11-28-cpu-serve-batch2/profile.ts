// In-process profile of `gavel serve` under C concurrent clients (clients in a child process): per level, p50/p95,
// the server process's CPU, and the calls and time of the forward passes (Model.hiddenStatesMany) and native glances
// (KeyBank.glance). Run from the package root after `npx tsup`:
//   npx esbuild <this file> --bundle --platform=node --format=esm --packages=external --outfile=.cache/prof.mjs
//   GAVEL_MODEL= GAVEL_PROJECTIONS= GAVEL_BANK= node .cache/prof.mjs run 1,20 glance,route 40
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { openModel } from "../../../src/cli/commands/common.js";
import { Router } from "../../../src/route/index.js";
import { ResidentServer } from "../../../src/serve/server.js";
import { KeyBank } from "../../../src/bank/key-bank.js";
import { Model } from "../../../src/model/Model.js";
import { resolveProjectionsPath } from "../../../src/defaults.js";

const root = resolve(".");
const mode = process.argv[2];
if (mode === "client") {
  const { connect } = await import("../../../src/serve/client.js");
  const [bank, cS, eachS, op] = process.argv.slice(3);
  const tasks = (JSON.parse(readFileSync(join(root, "examples", "demo-tasks.json"), "utf8")) as { task: string }[]).map((t) => t.task);
  const C = Number(cS), each = Number(eachS);
  const cs = await Promise.all(Array.from({ length: C }, () => connect({ bank })));
  const xs: number[] = [];
  await Promise.all(cs.map(async (c, k) => { for (let i = 0; i < each; i++) { const t0 = performance.now(); await c.request(op as "route", { task: tasks[(k * each + i) % tasks.length] }); xs.push(performance.now() - t0); } }));
  for (const c of cs) c.close();
  process.stdout.write(JSON.stringify(xs));
  process.exit(0);
}
const env = { ...process.env, GAVEL_MODEL: "", GAVEL_PROJECTIONS: "", GAVEL_BANK: "" };
const dir = mkdtempSync(join(tmpdir(), "gavel-prof-"));
const bank = join(dir, ".gavel", "bank");
execFileSync(process.execPath, [join(root, "dist/cli/gavel.js"), "install", join(root, "examples", "skills"), "--bank", bank, "--context", "2048"], { env, stdio: "ignore" });
const T: Record<string, { n: number; ms: number }> = {};
const add = (k: string, ms: number) => { (T[k] ??= { n: 0, ms: 0 }); T[k].n++; T[k].ms += ms; };
function wrap(proto: any, name: string, label = name) {
  const f = proto[name];
  proto[name] = async function (...a: unknown[]) { const t = performance.now(); try { return await f.apply(this, a); } finally { add(label, performance.now() - t); } };
}
wrap(KeyBank.prototype, "glance");
wrap(Model.prototype, "hiddenStatesMany");
const model = await openModel({ context: "2048" } as never, { batchSequences: 4 });
const router = await Router.open(model, { projections: resolveProjectionsPath(undefined).path, bankDir: bank });
const { defaultSocketPath } = await import("../../../src/serve/protocol.js"); const socket = defaultSocketPath(bank);
const server = await ResidentServer.start({ router, model, modelPath: "mini", socket });
// route timings
const rr = router.route.bind(router);
(router as any).route = async (c: unknown, o: any) => { const t = performance.now(); const r = await rr(c as never, o); add("router.route", performance.now() - t); add("  glanceMs", r.timings.glanceMs); add("  decide(verdict+lex+abst)", r.timings.totalMs - r.timings.glanceMs); if (r.timings.lexicalMs !== undefined) add("  lexicalMs", r.timings.lexicalMs); add("  verdictMs", r.timings.verdictMs ?? 0); return r; };
function client(C: number, each: number, op: string): Promise<number[]> {
  return new Promise((res, rej) => {
    const ch = spawn(process.execPath, [process.argv[1], "client", bank, String(C), String(each), op], { env, stdio: ["ignore", "pipe", "inherit"] });
    let out = ""; ch.stdout.on("data", (d) => (out += d)); ch.on("close", () => { try { res(JSON.parse(out)); } catch (e) { rej(e); } });
  });
}
const pct = (xs: number[], p: number) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]; };
const levels = (process.argv[3] ?? "1,20").split(",").map(Number);
const ops = (process.argv[4] ?? "glance,route").split(",");
const N = Number(process.argv[5] ?? 40);
await client(1, 3, "route");
for (const op of ops) for (const C of levels) {
  for (const k of Object.keys(T)) delete T[k];
  const each = Math.max(2, Math.ceil(N / C));
  const cpu0 = process.cpuUsage(); const elu0 = performance.eventLoopUtilization(); const t0 = performance.now();
  const xs = await client(C, each, op);
  const wall = performance.now() - t0; const cpu = process.cpuUsage(cpu0); const elu = performance.eventLoopUtilization(elu0);
  console.log(`${op} C=${C} n=${xs.length} p50 ${pct(xs, 50).toFixed(1)} p95 ${pct(xs, 95).toFixed(1)}  wall ${wall.toFixed(0)} ms  server cpu ${( (cpu.user + cpu.system) / 1000).toFixed(0)} ms (${((cpu.user + cpu.system) / 1000 / xs.length).toFixed(2)}/req)  ELU ${elu.utilization.toFixed(2)}`);
  for (const [k, v] of Object.entries(T)) console.log(`   ${k.padEnd(30)} n ${String(v.n).padStart(4)}  mean ${(v.ms / v.n).toFixed(2)} ms  total/req ${(v.ms / xs.length).toFixed(2)}`);
}
await server.shutdown();
await router.close();
await model.dispose();
process.exit(0);
