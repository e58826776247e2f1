/**
 * Per-token cost of a live context (src/route/live.ts) against the decode step that produced the
 * token, on the embedded gavel-mini with its projections (W_q, ℓ*), over synthetic unit-key banks.
 *
 * Run (from the package root; the output lands in .cache/, which git ignores):
 *
 *   npx esbuild bench/live-overhead.bench.ts --bundle --platform=node --format=esm --packages=external \
 *     --outfile=.cache/bench/live-overhead.bench.mjs && node .cache/bench/live-overhead.bench.mjs [sizes] [keys] [tokens] [threads] [per-append] [model] [repeats]
 *
 * Defaults: sizes "1000,10000,30000" skills, 16 keys per skill, 64 generated tokens, 2 threads,
 * per-append "1", the embedded gavel-mini ("" for it when repeats follows), 3 repeats of the loops.
 * A model path other than the embedded model's gets random
 * projections (Projections.random: W_q of 256 × nEmbd, seed 0) at ℓ* = floor(2/3 · nLayer), so a
 * random-weight GGUF of a large shape (e.g. scripts/device/live-go.sh's Qwen3-8B) runs too; the
 * model loads with every layer offloaded where the addon has a GPU.
 *
 * The decode step is Model.generate's per-token wall time (greedy, one token per decode), measured
 * in the same process. Per size and per-append b (a host that appends every b tokens, e.g. "1,4,16"),
 * each column per token (divided by b):
 *   - device: where the live accumulators are ("cuda": on the GPU, an append only queues work);
 *   - append call: LiveContext.append's own wall time (median) — on a GPU the enqueue alone;
 *   - append+scores: append then live.scores() (median), which waits for the device: the whole
 *     live step (W_q projection, max-sim over the whole bank, top-k vote, decayed accumulation) when
 *     the scores are read after every append; its overhead against the decode step's median;
 *   - loop plain / loop live / loop live, no wait: the mean per-token wall time of a generate loop
 *     that decodes only, of the same loop appending and reading the scores every b tokens, and of the
 *     same loop reading them with `scores({ wait: false })` (the newest completed append's, never
 *     waiting for the device); the prefill's step left out. The live loops append the prompt's rows
 *     at `onPrompt`, as a host does (LIVE.md), so the context's one-time setup (device buffers,
 *     pinned memory) falls in the prefill. The three loops run back to back, `repeats` times in
 *     turn; each column is the median over the repeats, and the loop overheads are the medians'
 *     relative differences to the plain loop's (device work that overlaps the decode, or competes
 *     with it, shows here). "rows behind" is the mean of tokens − scores.tokens at the no-wait reads
 *     (how many appended rows the scores read did not cover yet);
 *   - read alone: a second live.scores() right after the first (nothing left to wait for): the host's
 *     part of a read (the snapshot divided into g, the typed arrays), per token;
 *   - gate features: `gateScoreFeatures(g)` on the scores read, what `Gate.stepLive` computes before
 *     its dot product.
 */
import { resolve } from "node:path";
import { Model } from "../src/model/Model.js";
import { Projections } from "../src/projections/projections.js";
import { KeyBank } from "../src/bank/key-bank.js";
import { LiveContext } from "../src/route/live.js";
import { gateScoreFeatures } from "../src/route/gate.js";
import type { RouterParts } from "../src/route/parts.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../src/defaults.js";
import { voteK } from "../src/kernels/kernels.js";
import { loadBinding } from "../src/native/binding.js";
import { median, unitRows } from "./data.js";

const sizes = (process.argv[2] ?? "1000,10000,30000").split(",").map(Number);
const keysPer = Number(process.argv[3] ?? 16);
const nTokens = Number(process.argv[4] ?? 64);
const threads = Number(process.argv[5] ?? 2);
const perAppend = (process.argv[6] ?? "1").split(",").map(Number);
const modelPath = process.argv[7] || DEFAULT_MODEL;
const repeats = Number(process.argv[8] ?? 3);
if (!Number.isInteger(repeats) || repeats < 1) throw new Error(`repeats: ${process.argv[8]} is not a positive integer`);
for (const b of perAppend) if (!Number.isInteger(b) || b < 1) throw new Error(`per-append: ${b} is not a positive integer`);

const model = await Model.load(modelPath, { threads, contextSize: 2048 });
const embedded = resolve(modelPath) === resolve(DEFAULT_MODEL);
const proj = embedded
  ? await Projections.load(DEFAULT_PROJECTIONS)
  : await Projections.random(model, { dim: 256, layer: Math.floor((2 * model.info.nLayer) / 3) });
const prompt = "The build fails with a linker error when";
const genOptions = { temperature: 0, maxTokens: nTokens, ignoreEog: true, captureLayer: proj.layer };
const decodeMs: number[] = [];
const rows: Float32Array[] = [];
let t0 = performance.now();
for await (const c of model.generate(prompt, genOptions)) {
  const t = performance.now();
  decodeMs.push(t - t0);
  rows.push(c.state);
  t0 = t;
}
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const decode = median(decodeMs.slice(1));
const nEmbd = model.info.nEmbd;

/**
 * Per-token wall time (mean, the prefill's step left out) of a generate loop that appends the prompt's
 * rows at onPrompt and then, every b tokens, the b buffered ℓ* rows and reads the scores (waiting for
 * the device, or not: what a host with a gate does), or that only decodes (live null). `behind`: the
 * mean rows appended but not covered by the scores read.
 */
async function loopMs(live: LiveContext | null, b: number, wait = true): Promise<{ ms: number; behind: number }> {
  const steps: number[] = [];
  const behind: number[] = [];
  let pending: Float32Array[] = [];
  let prompted: Promise<void> | undefined;
  const options = live === null ? genOptions : { ...genOptions, onPrompt: (states: Float32Array) => void (prompted = live.append(states)) };
  let t = performance.now();
  for await (const c of model.generate(prompt, options)) {
    if (live !== null) {
      if (prompted !== undefined) {
        await prompted;
        prompted = undefined;
      }
      pending.push(c.state);
      if (pending.length === b) {
        const chunk = new Float32Array(b * nEmbd);
        pending.forEach((r, j) => chunk.set(r, j * nEmbd));
        pending = [];
        await live.append(chunk);
        const read = live.scores({ wait });
        behind.push(live.tokens - read.tokens);
        gateScoreFeatures(read.g);
      }
    }
    const now = performance.now();
    steps.push(now - t);
    t = now;
  }
  return { ms: mean(steps.slice(1)), behind: behind.length > 0 ? mean(behind) : 0 };
}

/**
 * The live context's scores against the CPU accumulator's (NativeLive with device "cpu": the CPU
 * glance's kernels, float32) over the same rows: max |Δg| and how many of the CPU's top 10 are in
 * the context's top 10. On a GPU the context's follow the device glance's contract (f16 queries and
 * keys), so they differ by about f16's rounding.
 */
async function twin(bank: KeyBank, live: LiveContext): Promise<string> {
  const cpu = new (loadBinding().NativeLive)(bank._native, proj.wq, nEmbd, proj.dim, "cpu");
  const all = new Float32Array(rows.length * nEmbd);
  rows.forEach((r, i) => all.set(r, i * nEmbd));
  const appended = live.tokens;
  await cpu.append(all.subarray(0, appended * nEmbd), null, voteK(bank.size));
  const out = `${live.device} vs cpu over ${appended} rows: ${compare()}`;
  cpu.dispose();
  return out;
  function compare(): string {
    const a = live.scores().g, c = cpu.scores().g;
    let d = 0;
    for (let s = 0; s < a.length; s++) d = Math.max(d, Math.abs(a[s] - c[s]));
    const top = (g: Float64Array) => Array.from(g.keys()).sort((x, y) => g[y] - g[x] || x - y).slice(0, 10);
    const ct = new Set(top(c));
    return `max |Δg| ${d.toExponential(2)}, top-10 overlap ${top(a).filter((x) => ct.has(x)).length}/10`;
  }
}
const twins: string[] = [];

console.log(
  `model ${model.info.description}${embedded ? "" : " (random projections)"}, nLayer ${model.info.nLayer}, nEmbd ${nEmbd}, ℓ* ${proj.layer}, dim ${proj.dim}, threads ${threads}, ${rows.length} tokens`,
);
console.log(`decode step (generate, per token): median ${decode.toFixed(3)} ms, mean ${mean(decodeMs.slice(1)).toFixed(3)} ms`);
console.log(
  "skills\tkeys\ttokens/append\tdevice\tappend call/token\tappend+scores/token\toverhead vs decode\tloop plain/token\tloop live/token\tloop overhead\tloop no-wait/token\tno-wait overhead\trows behind\tread alone/token\tgate features/token",
);
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
    const callMs: number[] = [];
    const ms: number[] = [];
    const gateMs: number[] = [];
    const readMs: number[] = [];
    for (let i = 0; i + b <= rows.length; i += b) {
      const chunk = new Float32Array(b * nEmbd);
      for (let j = 0; j < b; j++) chunk.set(rows[i + j], j * nEmbd);
      let t = performance.now();
      await live.append(chunk);
      const called = performance.now();
      const { g } = live.scores(); // on a device: waits for the queued append
      const read = performance.now();
      live.scores();
      readMs.push((performance.now() - read) / b);
      callMs.push((called - t) / b);
      ms.push((read - t) / b);
      t = performance.now();
      gateScoreFeatures(g);
      gateMs.push((performance.now() - t) / b);
    }
    if (b === perAppend[0]) twins.push(`${n}: ${await twin(bank, live)}`);
    const drop = (xs: number[]) => (xs.length > 1 ? xs.slice(1) : xs);
    const m = median(drop(ms));
    // the same loop as a host runs it: plain decode, decode with the live context read waiting, and
    // read without waiting, back to back, `repeats` times in turn (medians)
    const plains: number[] = [], lives: number[] = [], noWaits: number[] = [], behinds: number[] = [];
    for (let r = 0; r < repeats; r++) {
      plains.push((await loopMs(null, b)).ms);
      for (const wait of [true, false]) {
        const loopLive = new LiveContext(parts);
        const { ms: loopT, behind } = await loopMs(loopLive, b, wait);
        loopLive.dispose();
        if (wait) lives.push(loopT);
        else {
          noWaits.push(loopT);
          behinds.push(behind);
        }
      }
    }
    const plain = median(plains), withLive = median(lives), noWait = median(noWaits);
    console.log(
      [
        n,
        n * keysPer,
        b,
        live.device,
        median(drop(callMs)).toFixed(4),
        m.toFixed(4),
        `${((100 * m) / decode).toFixed(1)}%`,
        plain.toFixed(4),
        withLive.toFixed(4),
        `${((100 * (withLive - plain)) / plain).toFixed(1)}%`,
        noWait.toFixed(4),
        `${((100 * (noWait - plain)) / plain).toFixed(1)}%`,
        mean(behinds).toFixed(2),
        median(drop(readMs)).toFixed(4),
        median(drop(gateMs)).toFixed(4),
      ].join("\t"),
    );
    live.dispose();
  }
  bank.dispose();
}
for (const t of twins) console.log(`twin ${t}`);
await model.dispose();
