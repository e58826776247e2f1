/**
 * The addon in several worker threads of one process: each thread is a Node environment of its own,
 * and the addon keeps its JavaScript references (the error class, the NativeGeneration constructor)
 * per environment. Four workers load the addon, each hands it its own error class, and each throws
 * native failures in a loop while the others do: every failure arrives as that worker's own class
 * with its code, and the process lives (a reference shared across threads aborted it with V8's
 * "Entering the V8 API without proper locking").
 */
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { addonStatus, loadBinding } from "../../src/native/binding.js";
import { Model } from "../../src/model/Model.js";
import { generateSettings } from "../../src/model/generate.js";
import { loadParams } from "../../src/model/load-options.js";
import { needsShared, SHARED, storiesPath } from "../helpers/paths.js";

const WORKER = `
const { parentPort, workerData } = require("node:worker_threads");
const b = require(workerData.file);
class WorkerError extends Error {
  constructor(message, code) { super(message); this.code = code; this.tag = workerData.tag; }
}
b.setErrorClass(WorkerError);
let own = 0;
for (let i = 0; i < 3000; i++) {
  try { new b.NativeKeyIvf(0); } catch (e) {
    if (e instanceof WorkerError && e.tag === workerData.tag && e.code === "INVALID_ARGUMENT") own++;
  }
}
parentPort.postMessage(own);
`;

const MAIN = `
const { Worker } = require("node:worker_threads");
const file = process.argv[1];
const runs = [0, 1, 2, 3].map((tag) => new Promise((resolve, reject) => {
  const w = new Worker(${JSON.stringify(WORKER)}, { eval: true, workerData: { file, tag } });
  w.once("message", resolve);
  w.once("error", reject);
}));
Promise.all(runs).then((r) => console.log(JSON.stringify(r)), (e) => { console.error(e); process.exit(3); });
`;

describe("the addon in worker threads", () => {
  it("gives each worker its own error class, and the process lives", () => {
    loadBinding();
    const file = addonStatus()!.file;
    // a deadline only against a hang: the run takes about a second
    const r = spawnSync(process.execPath, ["-e", MAIN, file], { encoding: "utf8", timeout: 120_000 });
    expect(r.stderr).not.toMatch(/FATAL ERROR/);
    expect(r.signal).toBeNull();
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([3000, 3000, 3000, 3000]);
  });
});

// Two workers, each with a NativeModel of its own over the stories260K model, run greedy generations
// (NativeGeneration: prefill, then one append per token) at the same time, several rounds each: both
// produce the tokens Model.generate gives on the main thread, and the process lives.
const GEN_WORKER = `
const { parentPort, workerData: w } = require("node:worker_threads");
const b = require(w.file);
class WorkerError extends Error { constructor(message, code) { super(message); this.code = code; } }
b.setErrorClass(WorkerError);
(async () => {
  const m = new b.NativeModel();
  await m.load(w.model, w.load);
  const runs = [];
  for (let round = 0; round < w.rounds; round++) {
    const gen = m.generation(w.layer, w.params);
    let step = await gen.append(Int32Array.from(w.prompt));
    const tokens = [];
    for (let i = 0; i < w.maxTokens && !gen.isEog(step.next); i++) {
      const t = step.next;
      step = await gen.append(Int32Array.of(t));
      tokens.push(t);
    }
    await gen.close();
    runs.push(tokens);
  }
  m.dispose();
  parentPort.postMessage(runs);
})().catch((e) => parentPort.postMessage({ error: String((e && e.stack) || e), code: e && e.code }));
`;

const GEN_MAIN = `
const { Worker } = require("node:worker_threads");
const data = JSON.parse(process.argv[1]);
const runs = [0, 1].map(() => new Promise((resolve, reject) => {
  const w = new Worker(${JSON.stringify(GEN_WORKER)}, { eval: true, workerData: data });
  w.once("message", resolve);
  w.once("error", reject);
}));
Promise.all(runs).then((r) => console.log(JSON.stringify(r)), (e) => { console.error(e); process.exit(3); });
`;

describe.skipIf(needsShared("stories260K for generations in two worker threads", SHARED.stories))("NativeGeneration in two worker threads at once", () => {
  it("each worker's model generates what the main thread's does, and the process lives", async () => {
    const maxTokens = 24;
    const model = await Model.load(storiesPath, { contextSize: 256, threads: 1 });
    let expected: number[];
    let prompt: number[];
    const { nLayer, nVocab } = model.info;
    try {
      prompt = Array.from(model.tokenize("Once upon a time, there was a little", { addBos: true }));
      const it = model.generate(prompt, { temperature: 0, maxTokens });
      let r = await it.next();
      while (!r.done) r = await it.next();
      expected = Array.from(r.value.tokens);
    } finally {
      await model.dispose();
    }
    expect(expected.length).toBeGreaterThan(4);
    const s = generateSettings({ temperature: 0, maxTokens }, nLayer, nVocab);
    const data = {
      file: addonStatus()!.file,
      model: storiesPath,
      load: { ...loadParams({ threads: 1 }, 256, false), batchSequences: 0, flashAttention: 0, kvF16: false, logprobsInGraph: false },
      layer: s.layer,
      params: s.params,
      prompt,
      maxTokens,
      rounds: 4,
    };
    // a deadline only against a hang: the run takes a few seconds
    const r = spawnSync(process.execPath, ["-e", GEN_MAIN, JSON.stringify(data)], { encoding: "utf8", timeout: 120_000 });
    expect(r.stderr).not.toMatch(/FATAL ERROR/);
    expect(r.signal).toBeNull();
    expect(r.status).toBe(0);
    const runs = JSON.parse(r.stdout) as unknown[];
    expect(runs).toEqual([Array(4).fill(expected), Array(4).fill(expected)]);
  }, 180_000);
});
