/**
 * A bank of N skills for the route's latency at sizes no real library here reaches (issue 36's 100K):
 * real texts, synthetic keys. The lexical expert, the re-ranker and the verdict read the texts, so the
 * texts are the benchmark library's (../shared/data: the SWE-Skills-Bench golds, then the public
 * skills, routable ones only), taken in turn and, past the library's end, again under new ids
 * (`<id>#2`, `#3`, …: the same words and text file, so BM25's document frequencies grow with the copies). The keys
 * are topic keys (bench/topic-keys.ts: token directions plus noise, as the key IVF's synthetic benches
 * use), `--keys` a skill, at the embedded projections' dim, their key tokens the draws' token ids (the
 * idf row weights read them). Installing 100K skills for real would take ~7 h on two cores
 * (docs/BENCHMARKS.md, "Install"), and the glance's cost follows the keys' count and layout, not their
 * meaning; with keys unrelated to the texts, g says nothing about the task, so what the route picks
 * is not a quality figure.
 *
 * The bank is written with float32 keys as an install writes them; then a router (keyType `--key-type`,
 * default f16) opens it and an install of nothing new (the first skill again) brings its key IVF up to date, as `gavel install`
 * does (trained and written from GAVEL_KEY_IVF_FROM routable skills). Also writes `--tasks-out` (a
 * prompts file for route-prompts: the first `--tasks` test statements, batches 6-10).
 *
 *   npm run bench -- scale-bank <dir> --skills 100000 [--keys 200] [--key-type f16] [--noise-pool 65536]
 *     [--tasks 20 --tasks-out tasks.json]
 *   GAVEL_KEY_TYPE=f16 npm run bench -- route-prompts <dir> examples/demo-tasks.json,examples/everyday-tasks.json,tasks.json
 */
import { existsSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join, resolve } from "node:path";
import { Library } from "../src/bank/library.js";
import { defaultModelPaths } from "../src/defaults.js";
import { Model } from "../src/model/Model.js";
import { Projections } from "../src/projections/projections.js";
import { Router } from "../src/route/Router.js";
import { loadLibrary } from "../lab/eval/io.js";
import { loadTasks, selectTasks } from "../lab/eval/tasks.js";
import { TopicKeys } from "./topic-keys.js";

const argv = process.argv.slice(2);
function flag(name: string, fallback: string): string {
  const i = argv.indexOf(name);
  return i >= 0 ? argv.splice(i, 2)[1] : fallback;
}
const n = Number(flag("--skills", "100000"));
const keysPer = Number(flag("--keys", "200"));
const keyType = flag("--key-type", "f16") as "f32" | "f16";
const noisePool = Number(flag("--noise-pool", "65536"));
const nTasks = Number(flag("--tasks", "20"));
const tasksOut = flag("--tasks-out", "");
const dir = argv[0];
if (!dir || !Number.isInteger(n) || n < 1 || !Number.isInteger(keysPer) || keysPer < 1 || (keyType !== "f32" && keyType !== "f16")) {
  console.error("usage: npm run bench -- scale-bank <dir> --skills N [--keys 200] [--key-type f16|f32] [--noise-pool 65536] [--tasks 20 --tasks-out F]");
  process.exit(2);
}
if (existsSync(join(dir, "manifest.json"))) {
  console.error(`${dir} already holds a bank: give a new folder`);
  process.exit(2);
}
const shared = resolve("..", "shared", "data");
const secs = (t0: number) => ((performance.now() - t0) / 1000).toFixed(1);

async function main(): Promise<void> {
  console.log(`scale bank: ${n} skills × ${keysPer} keys, ${keyType} in memory; ${cpus().length} cores (${cpus()[0]?.model}), load ${loadavg().map((x) => x.toFixed(2)).join(" ")}, node ${process.version}, ${new Date().toISOString()}`);
  const { model: modelPath, projections: projPath } = defaultModelPaths();
  const projections = await Projections.load(projPath);
  const dim = projections.dim;
  const { skills } = await loadLibrary([join(shared, "swe-skills-bench", "skills.jsonl"), join(shared, "skills-mit.jsonl.gz")]);
  const texts = skills.filter((s) => !s.disableModelInvocation);
  const tk = new TopicKeys(dim, 8192, noisePool);
  tk.topics(n);
  const lib = await Library.open(dir, projections, { create: true });
  const keys = new Float32Array(keysPer * dim);
  const positions = Array.from({ length: keysPer }, (_, j) => j);
  let t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const s = texts[i % texts.length];
    const copy = Math.floor(i / texts.length);
    const id = copy === 0 ? s.id : `${s.id}#${copy + 1}`;
    const skill = copy === 0 ? s : { ...s, id }; // a copy shares its original's text (stored by content hash)
    const toks = tk.skill(keysPer, keys);
    await lib.save(skill, { keyTokens: Array.from(toks), keyPositions: positions, renderTokens: 512, renderCut: { descriptionChars: s.description.length, bodyChars: (s.body ?? "").length } }, keys);
    if ((i + 1) % 10_000 === 0) {
      await lib.commit();
      console.log(`  ${i + 1} skills written (${secs(t0)} s)`);
    }
  }
  await lib.commit();
  await lib.close();
  console.log(`bank written: ${n} skills (${texts.length} distinct texts), ${n * keysPer} keys, in ${secs(t0)} s`);
  const model = await Model.load(modelPath, { contextSize: 2048 });
  try {
    t0 = performance.now();
    const router = await Router.open(model, { projections, bankDir: dir, keyType });
    console.log(`opened (${keyType} keys): ${secs(t0)} s, ${JSON.stringify(router.stats())}, RSS ${(process.memoryUsage().rss / 2 ** 30).toFixed(2)} GiB`);
    t0 = performance.now();
    const again = await router.install([texts[0]]); // installed already: nothing encoded, the index follows
    if (again.unchanged.length !== 1) throw new Error(`the re-install encoded something: ${JSON.stringify(again)}`);
    console.log(`key IVF brought up to date by an install of nothing new: ${secs(t0)} s; ${existsSync(join(dir, "key-ivf.bin")) ? "key-ivf.bin written" : "no key-ivf.bin (below GAVEL_KEY_IVF_FROM)"}`);
    await router.close();
  } finally {
    await model.dispose();
  }
  if (tasksOut) {
    const tasks = selectTasks(await loadTasks(join(shared, "swe-skills-bench", "tasks.jsonl")), { batches: "6-10", limit: nTasks });
    writeFileSync(tasksOut, JSON.stringify(tasks.map((t) => ({ task: t.text })), null, 1) + "\n");
    console.log(`wrote ${tasks.length} test statements to ${tasksOut}`);
  }
}

await main();
