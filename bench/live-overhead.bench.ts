/**
 * Per-token cost of a live context (src/route/live.ts) against the decode step that produced the
 * token, on the embedded gavel-mini with its projections (W_q, ℓ*), over synthetic unit-key banks.
 *
 * Run (from the package root; the output lands in .cache/, which git ignores):
 *
 *   npx esbuild bench/live-overhead.bench.ts --bundle --platform=node --format=esm --packages=external \
 *     --outfile=.cache/bench/live-overhead.bench.mjs && node .cache/bench/live-overhead.bench.mjs [sizes] [keys] [tokens] [threads] [per-append] [model]
 *
 * Defaults: sizes "1000,10000,30000" skills, 16 keys per skill, 64 generated tokens, 2 threads,
 * per-append "1", the embedded gavel-mini. A model path other than the embedded model's gets random
 * projections (Projections.random: W_q of 256 × nEmbd, seed 0) at ℓ* = floor(2/3 · nLayer), so a
 * random-weight GGUF of a large shape (e.g. scripts/device/live-go.sh's Qwen3-8B) runs too; the
 * model loads with every layer offloaded where the addon has a GPU. The decode step is the median of Model.generate's per-token wall time (greedy, one
 * token per decode); the live step is the median of one LiveContext.append of b tokens' ℓ* rows (W_q
 * projection, max-sim over the whole bank, top-k vote, decayed accumulation), divided by b: a host
 * that appends every b tokens (the per-append list, e.g. "1,4,16") pays that per token. The gate's
 * host step is timed beside it, once per append and likewise divided by b: its score features over
 * the live scores (`gateScoreFeatures(live.scores().g)`), what `Gate.stepLive` computes before its
 * dot product.
 */
import { resolve } from "node:path";
import { Model } from "../src/model/Model.js";
import { Projections } from "../src/projections/projections.js";
import { KeyBank } from "../src/bank/key-bank.js";
import { LiveContext } from "../src/route/live.js";
import { gateScoreFeatures } from "../src/route/gate.js";
import type { RouterParts } from "../src/route/parts.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../src/defaults.js";
import { median, unitRows } from "./data.js";

const sizes = (process.argv[2] ?? "1000,10000,30000").split(",").map(Number);
const keysPer = Number(process.argv[3] ?? 16);
const nTokens = Number(process.argv[4] ?? 64);
const threads = Number(process.argv[5] ?? 2);
const perAppend = (process.argv[6] ?? "1").split(",").map(Number);
const modelPath = process.argv[7] ?? DEFAULT_MODEL;
for (const b of perAppend) if (!Number.isInteger(b) || b < 1) throw new Error(`per-append: ${b} is not a positive integer`);

const model = await Model.load(modelPath, { threads, contextSize: 2048 });
const embedded = resolve(modelPath) === resolve(DEFAULT_MODEL);
const proj = embedded
  ? await Projections.load(DEFAULT_PROJECTIONS)
  : await Projections.random(model, { dim: 256, layer: Math.floor((2 * model.info.nLayer) / 3) });
const decodeMs: number[] = [];
const rows: Float32Array[] = [];
let t0 = performance.now();
for await (const c of model.generate("The build fails with a linker error when", { temperature: 0, maxTokens: nTokens, ignoreEog: true, captureLayer: proj.layer })) {
  const t = performance.now();
  decodeMs.push(t - t0);
  rows.push(c.state);
  t0 = t;
}
const decode = median(decodeMs.slice(1));
console.log(
  `model ${model.info.description}${embedded ? "" : " (random projections)"}, nLayer ${model.info.nLayer}, nEmbd ${model.info.nEmbd}, ℓ* ${proj.layer}, dim ${proj.dim}, threads ${threads}, ${rows.length} tokens`,
);
console.log(`decode step (generate, per token, median): ${decode.toFixed(3)} ms`);
console.log("skills\tkeys\ttokens/append\tlive append/token (median ms)\toverhead vs decode\tgate features/token (median ms)");
for (const n of sizes) {
  const bank = new KeyBank(proj.dim);
  const keys = unitRows(n * keysPer, proj.dim, 7);
  const handles = new Int32Array(n);
  for (let s = 0; s < n; s++) handles[s] = bank.add(keys.subarray(s * keysPer * proj.dim, (s + 1) * keysPer * proj.dim));
  const parts = {
    model,
    projections: proj,
    library: { routable: () => handles, keys: bank, idOf: (h: number) => String(h), entry: (id: string) => ({ name: id }) },
  } as unknown as RouterParts;
  for (const b of perAppend) {
    const live = new LiveContext(parts);
    const nEmbd = model.info.nEmbd;
    const ms: number[] = [];
    const gateMs: number[] = [];
    for (let i = 0; i + b <= rows.length; i += b) {
      const chunk = new Float32Array(b * nEmbd);
      for (let j = 0; j < b; j++) chunk.set(rows[i + j], j * nEmbd);
      let t = performance.now();
      await live.append(chunk);
      ms.push((performance.now() - t) / b);
      t = performance.now();
      gateScoreFeatures(live.scores().g);
      gateMs.push((performance.now() - t) / b);
    }
    const m = median(ms.length > 1 ? ms.slice(1) : ms);
    const gm = median(gateMs.length > 1 ? gateMs.slice(1) : gateMs);
    console.log(`${n}\t${n * keysPer}\t${b}\t${m.toFixed(4)}\t${((100 * m) / decode).toFixed(1)}%\t${gm.toFixed(4)}`);
  }
  bank.dispose();
}
await model.dispose();
