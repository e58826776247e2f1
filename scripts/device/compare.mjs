// record: computes hidden states and scores with the CPU addon into <dir>/cpu-ref.json.
// check:  recomputes them with the addon in $GAVEL_ADDON (the CUDA build) and reports the largest
//         differences and timings, failing beyond the stated tolerances.
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { Model } from "../../dist/index.js";

const [mode, dir] = process.argv.slice(2);
const TOL_LOGPROB = 5e-2; // nats
const TOL_STATE_REL = 1e-2; // max |Δ| / max |h| per layer

const models = [
  { name: "stories260K", file: "stories.gguf", text: "Once upon a time there was a little cat who liked to play in the sun. One day she met a dog." },
  { name: "qwen3-random", file: "qwen3.gguf", text: "<|im_start|>user\nHere is an agent skill (SKILL.md):\nname: pdf\ndescription: Read PDF files.\n\nUse pdftotext.\n\nHere is a user task: extract the tables from report.pdf\n\nDoes this skill provide what that task needs? Answer yes or no:<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n" },
];

async function measure(m) {
  const path = join(dir, m.file);
  if (!existsSync(path)) return null;
  const model = await Model.load(path, { contextSize: 1024, batchSize: 256, sequences: 8 });
  const tokens = model.tokenize(m.text, { special: true, addBos: model.info.addBos });
  const out = { tokens: Array.from(tokens), states: {}, scores: [], timings: {} };
  let t = performance.now();
  for (let layer = 0; layer < model.info.nLayer; layer++) out.states[layer] = Array.from(await model.hiddenStates(tokens, layer));
  out.timings.hiddenStatesAllLayersMs = performance.now() - t;
  const cut = Math.floor(tokens.length / 2);
  const prefixes = [tokens.subarray(0, cut), tokens.subarray(0, cut - 3), tokens.subarray(0, 4)];
  const readIds = new Int32Array([0, 1, 2, 3, 4, 5]);
  t = performance.now();
  const scored = await model.scoreMany(prefixes, tokens.subarray(cut), { readIds });
  out.timings.scoreManyColdMs = performance.now() - t;
  t = performance.now();
  await model.scoreMany(prefixes, tokens.subarray(cut), { readIds });
  out.timings.scoreManyCachedMs = performance.now() - t;
  out.scores = scored.map((s) => ({ logprobs: Array.from(s.logprobs), final: Array.from(s.final) }));
  out.info = model.info;
  await model.dispose();
  return out;
}

const results = {};
for (const m of models) results[m.name] = await measure(m);

if (mode === "record") {
  writeFileSync(join(dir, "cpu-ref.json"), JSON.stringify(results));
  for (const [k, v] of Object.entries(results)) console.log(k, v ? JSON.stringify(v.timings) : "missing");
} else {
  const ref = JSON.parse(readFileSync(join(dir, "cpu-ref.json"), "utf8"));
  let ok = true;
  for (const [name, gpu] of Object.entries(results)) {
    const cpu = ref[name];
    if (!gpu || !cpu) { console.log(`${name}: missing`); continue; }
    let worstState = 0;
    for (const layer of Object.keys(cpu.states)) {
      const a = cpu.states[layer], b = gpu.states[layer];
      let d = 0, s = 0;
      for (let i = 0; i < a.length; i++) { d = Math.max(d, Math.abs(a[i] - b[i])); s = Math.max(s, Math.abs(a[i])); }
      worstState = Math.max(worstState, d / s);
    }
    let worstLp = 0;
    cpu.scores.forEach((c, i) => {
      const g = gpu.scores[i];
      c.logprobs.forEach((v, j) => (worstLp = Math.max(worstLp, Math.abs(v - g.logprobs[j]))));
      c.final.forEach((v, j) => (worstLp = Math.max(worstLp, Math.abs(v - g.final[j]))));
    });
    const pass = worstState <= TOL_STATE_REL && worstLp <= TOL_LOGPROB;
    ok &&= pass;
    console.log(JSON.stringify({ model: name, tokens: cpu.tokens.length, maxRelStateDiff: worstState, maxLogprobDiffNats: worstLp, pass, cpuTimings: cpu.timings, gpuTimings: gpu.timings }));
  }
  console.log(ok ? "GPU matches CPU within tolerances" : "GPU DIFFERS from CPU beyond tolerances");
  process.exitCode = ok ? 0 : 1;
}
