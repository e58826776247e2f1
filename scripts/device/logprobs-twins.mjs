// Runs on the GPU machine with the CUDA addon (GAVEL_ADDON=…/gavel.node, from $HOME/gavel after
// gpu-build.sh): Score's log-probs read on the device (logprobsInGraph: true, the CUDA kernel of
// native/src/model/logprobs.cu) against the host path (the full logits copied out, float64
// log-normaliser) on random candidate sets, then both timed on one verdict-shaped call.
//
// Tolerance: both sum exp() in float64 over the same float32 logits, the device per row in a tree
// order, the host in the vector kernel's order: they agree to ~1e-7 nats; the two contexts batch the
// same way, so 1e-4 nats (test/model/logprobs-in-graph.test.ts's, on the CPU) flags any real fault.
// Usage: node scripts/device/logprobs-twins.mjs [model.gguf] (default models/gavel-mini.gguf); ROUNDS=6
import { availableParallelism } from "node:os";
import { Model } from "../../dist/index.js";

const TOL = 1e-4;
const path = process.argv[2] ?? "models/gavel-mini.gguf";
const seed = Number(process.env.GAVEL_TEST_SEED ?? (Date.now() % 2 ** 31));
let state = seed >>> 0;
const rand = () => ((state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 2 ** 32);
const tokens = (n, nVocab) => Int32Array.from({ length: n }, () => 3 + Math.floor(rand() * (nVocab - 3)));

const common = { contextSize: 2560, sequences: 10, kvLayout: "streams", threads: Math.min(16, availableParallelism()), gpuLayers: -1, batchSize: 2048 };
const host = await Model.load(path, { ...common, logprobsInGraph: false });
const device = await Model.load(path, { ...common, logprobsInGraph: true });
const nVocab = host.info.nVocab;
console.log(`${path}: vocab ${nVocab}, seed ${seed}`);
let worst = 0;
let pass = true;
for (let round = 0; round < Number(process.env.ROUNDS ?? 6); round++) {
  const n = 1 + Math.floor(rand() * 9);
  const prefixes = Array.from({ length: n }, () => tokens(1 + Math.floor(rand() * 1500), nVocab));
  const cont = tokens(1 + Math.floor(rand() * 300), nVocab);
  const readIds = tokens(Math.floor(rand() * 4), nVocab);
  // Each pass compared with the host path's same pass: on CUDA a cached prefix changes the batch's
  // shape (the continuation decoded alone), and so llama.cpp's kernels and their float32 rounding,
  // on both paths alike (measured on an H200: cached against cold moved gavel-mini's log-probs by
  // up to 0.21 nats on random tokens, with either path).
  for (const pass_ of ["cold", "cached"]) {
    const want = await host.scoreMany(prefixes, cont, { readIds });
    const got = await device.scoreMany(prefixes, cont, { readIds });
    let d = 0;
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < cont.length; j++) d = Math.max(d, Math.abs(got[i].logprobs[j] - want[i].logprobs[j]));
      for (let j = 0; j < readIds.length; j++) d = Math.max(d, Math.abs(got[i].final[j] - want[i].final[j]));
    }
    worst = Math.max(worst, d);
    const ok = d <= TOL && Number.isFinite(d);
    pass &&= ok;
    console.log(JSON.stringify({ round, pass: pass_, candidates: n, continuation: cont.length, readIds: readIds.length, maxAbsDiff: d, ok }));
  }
}
// one verdict-shaped call, warm, each path
const prefixes = Array.from({ length: 9 }, () => tokens(1792, nVocab));
const cont = tokens(256, nVocab);
for (const [name, m] of [["host", host], ["device", device]]) {
  await m.scoreMany(prefixes, cont, { readIds: [3, 4] });
  const times = [];
  for (let r = 0; r < 5; r++) {
    const t = performance.now();
    await m.scoreMany(prefixes, cont, { readIds: [3, 4] });
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  console.log(`${name}: warm verdict 9 × 1,792 + 256, median of 5: ${times[2].toFixed(1)} ms (runs ${times.map((t) => t.toFixed(1)).join(", ")})`);
}
await host.dispose();
await device.dispose();
console.log(pass ? `device log-probs match the host path within ${TOL} nats (largest ${worst.toExponential(2)})` : `MISMATCH: largest ${worst.toExponential(2)} nats`);
process.exitCode = pass ? 0 : 1;
