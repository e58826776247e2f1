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
