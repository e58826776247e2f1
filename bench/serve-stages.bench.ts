/**
 * Where a route's time goes, in process and through the resident router, and whether the verdict's
 * prefix cache hits (docs/SERVE.md, "The verdict's prefix cache").
 *
 * Run: npm run bench -- serve-stages [rounds] [clients] [delta] [threads]
 *
 * Installs examples/skills into a temp bank with the embedded gavel-mini pair (context 2048), then
 * routes the 24 tasks of bench/routing-tasks.ts `rounds` times over (default 3; the first round is a
 * warm-up and is not counted):
 * - in process: Router.route on a model loaded as `gavel route` loads it;
 * - through a server: a ResidentServer in this process (the model loaded as `gavel serve` loads it),
 *   one client on its socket sending the routes one after another, then `clients` clients at once
 *   (default 20; 0: none), each sending every task.
 * For each: per-route wall p50 / p95, the route's own timings (glance, lexical expert, verdict,
 * total; the rest of the wall is the protocol, the reply and the client), how many routes ran the
 * verdict, on how many candidates, and the model's prefix cache counters (hits, misses) over them.
 *
 * gavel-mini's Δ is ~3e-7, so over 24 skills its routes shortlist one skill and run no verdict;
 * `delta` (e.g. 0.05) routes with that Δ instead (Projections.withCalibration), so that the verdict
 * runs and its prefix cache is exercised. `threads`: the model's CPU threads (default: every core).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Model } from "../src/model/Model.js";
import { Router } from "../src/route/index.js";
import type { RouteResult } from "../src/route/types.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../src/defaults.js";
import { Projections } from "../src/projections/projections.js";
import { routingTasks } from "./routing-tasks.js";
import { ResidentServer } from "../src/serve/server.js";
import { connect } from "../src/serve/client.js";
import { SERVE_BATCH_SEQUENCES } from "../src/cli/commands/serve.js";

const root = resolve(".");
const rounds = Number(process.argv[2] ?? 3);
const clients = Number(process.argv[3] ?? 20);
const delta = process.argv[4] === undefined || process.argv[4] === "-" ? undefined : Number(process.argv[4]);
const threads = process.argv[5] === undefined ? undefined : Number(process.argv[5]);
const tasks = routingTasks(root).map((t) => t.task);

function pct(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}
const ms = (x: number) => `${x.toFixed(1)} ms`;

interface Sample {
  wall: number;
  r: Pick<RouteResult, "verdict" | "shortlist" | "timings">;
}

function report(what: string, xs: Sample[], cache: { hits: number; misses: number }) {
  const ran = xs.filter((x) => x.r.verdict === "ran");
  const col = (f: (x: Sample) => number | undefined, sub = xs) => {
    const v = sub.map(f).filter((n): n is number => typeof n === "number");
    return `${ms(pct(v, 50))} / ${ms(pct(v, 95))}`;
  };
  console.log(`${what} (n = ${xs.length}; load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}):`);
  console.log(`  wall                         p50 / p95 ${col((x) => x.wall)}`);
  console.log(`  route's own total            p50 / p95 ${col((x) => x.r.timings.totalMs)}`);
  console.log(`  glance (pass + glance)       p50 / p95 ${col((x) => x.r.timings.glanceMs)}`);
  console.log(`  lexical expert               p50 / p95 ${col((x) => x.r.timings.lexicalMs)}`);
  console.log(`  verdict, routes that ran it  p50 / p95 ${col((x) => x.r.timings.verdictMs, ran)}`);
  console.log(`  the rest (abstention, ruling, flags)   ${col((x) => x.r.timings.totalMs - x.r.timings.glanceMs - (x.r.timings.lexicalMs ?? 0) - x.r.timings.verdictMs)}`);
  console.log(`  wall − route's total (protocol, reply) ${col((x) => x.wall - x.r.timings.totalMs)}`);
  console.log(`  verdict ran in ${ran.length} of ${xs.length} routes, on ${ran.map((x) => x.r.shortlist.length).join(",") || "-"} candidates`);
  console.log(`  prefix cache: ${cache.hits} hits, ${cache.misses} misses over them`);
}

function cacheDelta(model: Model, before: { hits: number; misses: number }) {
  const s = model.cacheStats();
  return { hits: s.hits - before.hits, misses: s.misses - before.misses };
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), "gavel-serve-stages-"));
  const bankDir = join(dir, "bank");
  console.log(`serve-stages bench: ${cpus().length} × ${cpus()[0]?.model ?? "?"}, node ${process.version}, ${new Date().toISOString()}, ${rounds} rounds of ${tasks.length} tasks (the first a warm-up), Δ ${delta ?? "as trained"}, threads ${threads ?? "default"}`);
  const base = await Projections.load(DEFAULT_PROJECTIONS);
  const projections = delta === undefined ? base : base.withCalibration({ delta });
  try {
    {
      // in process, as `gavel route` loads the model (also builds the bank)
      const model = await Model.load(DEFAULT_MODEL, { contextSize: 2048, threads });
      const router = await Router.open(model, { projections, bankDir, create: true });
      await router.install(join(root, "examples", "skills"));
      const xs: Sample[] = [];
      let c0 = model.cacheStats();
      for (let k = 0; k < rounds; k++) {
        if (k === 1) c0 = model.cacheStats();
        for (const t of tasks) {
          const t0 = performance.now();
          const r = await router.route(t);
          if (k > 0) xs.push({ wall: performance.now() - t0, r });
        }
      }
      report("in process (Router.route, model as `gavel route` loads it)", xs, cacheDelta(model, c0));
      await router.close();
      await model.dispose();
    }
    // through a server, as `gavel serve` loads the model
    const model = await Model.load(DEFAULT_MODEL, { contextSize: 2048, threads, batchSequences: SERVE_BATCH_SEQUENCES });
    const router = await Router.open(model, { projections, bankDir, create: false });
    const socket = join(dir, "serve.sock");
    const server = await ResidentServer.start({ router, model, modelPath: DEFAULT_MODEL, socket });
    try {
      const c = await connect({ bank: bankDir, socket });
      const xs: Sample[] = [];
      let c0 = model.cacheStats();
      for (let k = 0; k < rounds; k++) {
        if (k === 1) c0 = model.cacheStats();
        for (const t of tasks) {
          const t0 = performance.now();
          const r = (await c.request("route", { task: t })) as Sample["r"];
          if (k > 0) xs.push({ wall: performance.now() - t0, r });
        }
      }
      c.close();
      report("through the server, one client", xs, cacheDelta(model, c0));
      if (clients === 0) return;
      const cs = await Promise.all(Array.from({ length: clients }, () => connect({ bank: bankDir, socket })));
      const ys: Sample[] = [];
      const c1 = model.cacheStats();
      await Promise.all(
        cs.map(async (cl, i) => {
          for (let j = 0; j < tasks.length; j++) {
            const t0 = performance.now();
            const r = (await cl.request("route", { task: tasks[(i + j) % tasks.length] })) as Sample["r"];
            ys.push({ wall: performance.now() - t0, r });
          }
        }),
      );
      for (const cl of cs) cl.close();
      report(`through the server, ${clients} clients at once`, ys, cacheDelta(model, c1));
    } finally {
      await server.shutdown();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
