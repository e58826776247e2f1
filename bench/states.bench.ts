/**
 * Hidden-state throughput by layer: `Model.hiddenStates` stops the graph after the layer asked for
 * (no logits are read), so a shallow ℓ* costs a fraction of a full forward pass.
 *
 *   npm run bench -- states [model.gguf] [tokens] [threads] [layers]
 *
 * Defaults: models/gavel-mini.gguf, 512 tokens (a skill render at the default budget), 2 threads,
 * layers "0,1,<mid>,<last>". Tokens are arbitrary ids (speed does not depend on them). Prints the
 * median of 7 calls per layer.
 */
import { Model } from "../src/index.js";

const path = process.argv[2] ?? "models/gavel-mini.gguf";
const n = Number(process.argv[3] ?? 512);
const threads = Number(process.argv[4] ?? 2);
const model = await Model.load(path, { contextSize: Math.max(2048, n), threads });
const { nLayer, nVocab } = model.info;
const layers = (process.argv[5] ?? `0,1,${Math.floor(nLayer / 2)},${nLayer - 1}`).split(",").map(Number);
const tokens = new Int32Array(n).map((_, i) => 3 + ((i * 7919) % (nVocab - 3)));
await model.hiddenStates(tokens, layers[0]); // warm-up
console.log(`${path}: ${nLayer} layers, ${n} tokens, ${threads} threads`);
console.log("| layer | ms / call (median of 7) | tokens/s |\n| --- | --- | --- |");
for (const layer of layers) {
  const times: number[] = [];
  for (let i = 0; i < 7; i++) {
    const t = performance.now();
    await model.hiddenStates(tokens, layer);
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  const ms = times[3];
  console.log(`| ${layer} | ${ms.toFixed(1)} | ${Math.round((n / ms) * 1000)} |`);
}
await model.dispose();
