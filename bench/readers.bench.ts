/**
 * Readers during a write (issue 17, "readers never blocked"): the latency of `route` and `list` on a
 * bank while another process installs and uninstalls in it, beside the same reads on an idle bank,
 * with the embedded gavel-mini pair and the 24 example skills.
 *
 *   npm run bench -- readers [samples=20]
 *
 * Each sample is one of: a fresh read-only router (open the snapshot, list, route one task, close:
 * what `gavel route` does after loading the model), or a route on a read-only router kept open
 * (which moves to each new commit first). The writer is a child process (this file with --writer)
 * that holds the bank's lock and, in a loop, uninstalls one example skill and installs it again
 * (one commit each). A writer-mode open during the write is tried once, to show the refusal readers
 * no longer get.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { GavelError, Model, Router } from "../src/index.js";
import { defaultModelPaths } from "../src/defaults.js";
import { median } from "./data.js";

const { model: modelPath, projections } = defaultModelPaths();
const examples = resolve("examples", "skills");
const tasks = ["Extract the tables from report.pdf", "Write a Dockerfile for a node app", "Why does my CSS grid overflow?"];

if (process.argv[2] === "--writer") {
  const bankDir = process.argv[3];
  const model = await Model.load(modelPath, { contextSize: 2048, threads: 1 });
  const router = await Router.open(model, { projections, bankDir, create: false });
  const names = readdirSync(examples).sort();
  process.stdout.write("ready\n");
  for (let i = 0; ; i++) {
    const name = names[i % names.length];
    await router.uninstall(name);
    await router.install(join(examples, name), { commitEvery: 1 });
    process.stdout.write(`op ${i}\n`);
  }
}

const samples = Number(process.argv[2] ?? 20);
const bankDir = mkdtempSync(join(tmpdir(), "gavel-readers-bench-"));
const model = await Model.load(modelPath, { contextSize: 2048, threads: 1 });
try {
  const setup = await Router.open(model, { projections, bankDir });
  await setup.install(examples);
  await setup.close();

  type Row = { fresh: number[]; kept: number[]; refused: number; errors: string[] };
  const measure = async (): Promise<Row> => {
    const row: Row = { fresh: [], kept: [], refused: 0, errors: [] };
    const kept = await Router.open(model, { projections, bankDir, readOnly: true });
    for (let i = 0; i < samples; i++) {
      const task = tasks[i % tasks.length];
      try {
        let t = performance.now();
        const r = await Router.open(model, { projections, bankDir, readOnly: true });
        r.list();
        await r.route(task);
        await r.close();
        row.fresh.push(performance.now() - t);
        t = performance.now();
        await kept.route(task);
        kept.list();
        row.kept.push(performance.now() - t);
      } catch (err) {
        if (err instanceof GavelError && err.code === "BANK_LOCKED") row.refused++;
        else row.errors.push(String(err));
      }
    }
    await kept.close();
    return row;
  };

  const idle = await measure();
  const writer = spawn(process.execPath, [process.argv[1], "--writer", bankDir], { stdio: ["ignore", "pipe", "inherit"] });
  let ops = 0;
  await new Promise<void>((ready) => {
    createInterface({ input: writer.stdout! }).on("line", (line) => {
      if (line === "ready") ready();
      else if (line.startsWith("op ")) ops++;
    });
  });
  const opsBefore = ops;
  const t0 = performance.now();
  const busy = await measure();
  const seconds = (performance.now() - t0) / 1000;
  const opsDuring = ops - opsBefore;
  let writerOpen = "opened";
  try {
    await (await Router.open(model, { projections, bankDir, create: false })).close();
  } catch (err) {
    writerOpen = err instanceof GavelError ? err.code : String(err);
  }
  writer.kill("SIGKILL");

  const fmt = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length === 0 ? "–" : `${median(s).toFixed(0)} / ${s[Math.floor(0.9 * (s.length - 1))].toFixed(0)} / ${s[s.length - 1].toFixed(0)}`;
  };
  console.log(`readers on a 24-skill gavel-mini bank, ${samples} samples each (ms: median / p90 / max)`);
  console.log(`| bank | fresh read-only router: open + list + route + close | kept read-only router: route + list | refused (BANK_LOCKED) | other errors |`);
  console.log(`| --- | --- | --- | --- | --- |`);
  console.log(`| idle | ${fmt(idle.fresh)} | ${fmt(idle.kept)} | ${idle.refused} | ${idle.errors.length} |`);
  console.log(`| another process installing (${opsDuring} uninstall + install pairs in ${seconds.toFixed(1)} s) | ${fmt(busy.fresh)} | ${fmt(busy.kept)} | ${busy.refused} | ${busy.errors.length} |`);
  console.log(`a writer's open during the install: ${writerOpen}`);
  for (const e of [...idle.errors, ...busy.errors].slice(0, 5)) console.log(`error: ${e}`);
} finally {
  await model.dispose();
  rmSync(bankDir, { recursive: true, force: true });
}
