/**
 * The verdict's scoring pass by KV layout and attention settings: `scoreMany` of one continuation
 * (task + question) over N candidate prefixes, cold (cache cleared) and warm (prefixes cached). The
 * KV cache is one pool ("unified": each continuation token's attention runs over every cached
 * candidate's cells, the others masked) or one stream per sequence ("streams": its own prefix only).
 *
 *   npm run bench -- verdict [key=value…]
 *
 * Keys (defaults): model (models/gavel-mini.gguf), n (9 candidates), prefix (2000 tokens), cont (250),
 * threads (2), rounds (3), layouts (unified,streams), settings (exact: f32 KV, no flash attention;
 * "fast": f16 KV + flash attention; a comma list; "+host" / "+graph" after one sets where the
 * log-probs are reduced, ModelLoadOptions.logprobsInGraph, default host), gpuLayers (-1), batch (512), drift (0; 1: also
 * print the log-prob drift of every other setting against the first, same layout).
 * Tokens are arbitrary ids (speed does not depend on them). Prints the median over rounds (each
 * round a cold then a warm call per configuration, configurations interleaved) and the largest
 * |difference| of log-probs between layouts of one setting (they must agree within float32
 * rounding on f32 weights; requantized Q8_0 activations spread it, see test/model/score-layout.test.ts).
 */
import { Model, type ScoreResult } from "../src/index.js";

const args = new Map(process.argv.slice(2).map((a) => a.split("=") as [string, string]));
const arg = (k: string, d: string) => args.get(k) ?? d;
const path = arg("model", "models/gavel-mini.gguf");
const n = Number(arg("n", "9"));
const prefixLen = Number(arg("prefix", "2000"));
const contLen = Number(arg("cont", "250"));
const threads = Number(arg("threads", "2"));
const rounds = Number(arg("rounds", "3"));
const gpuLayers = Number(arg("gpuLayers", "-1"));
const batchSize = Number(arg("batch", "512"));
const layouts = arg("layouts", "unified,streams").split(",") as ("unified" | "streams")[];
const settings = arg("settings", "exact").split(",");
const drift = arg("drift", "0") === "1";
const perRequest = prefixLen + contLen;

/** A setting: exact | fast | fa, optionally +host or +graph (where Score's log-probs are reduced). */
function settingOptions(s: string): { flashAttention: boolean; kvCacheType: "f32" | "f16"; logprobsInGraph: boolean } {
  const [base, reduce] = s.split("+");
  const logprobsInGraph = reduce === "graph";
  if (reduce !== undefined && reduce !== "graph" && reduce !== "host") throw new Error(`unknown reduction ${reduce} (host, graph)`);
  if (base === "exact") return { flashAttention: false, kvCacheType: "f32", logprobsInGraph };
  if (base === "fast") return { flashAttention: true, kvCacheType: "f16", logprobsInGraph };
  if (base === "fa") return { flashAttention: true, kvCacheType: "f32", logprobsInGraph };
  throw new Error(`unknown setting ${s} (exact, fast, fa; +host or +graph)`);
}

async function open(layout: "unified" | "streams", setting: string): Promise<Model> {
  // unified: one pool for every candidate at once; streams: one stream per candidate (+ scratch)
  const contextSize = layout === "unified" ? n * perRequest + 256 : perRequest;
  return Model.load(path, { contextSize, sequences: n + 1, kvLayout: layout, threads, gpuLayers, batchSize: Math.min(batchSize, contextSize), ...settingOptions(setting) });
}

const probe = await Model.load(path, { contextSize: 256, sequences: 2, threads, gpuLayers });
const nVocab = probe.info.nVocab;
const desc = `${probe.info.architecture}, ${probe.info.nLayer} layers, nEmbd ${probe.info.nEmbd}, vocab ${nVocab}`;
await probe.dispose();
const tok = (seed: number, len: number) => new Int32Array(len).map((_, i) => 3 + ((seed * 104729 + i * 7919) % (nVocab - 3)));
const prefixes = Array.from({ length: n }, (_, c) => tok(c + 1, prefixLen));
const cont = tok(999, contLen);
const readIds = [3, 4];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
function maxDiff(a: ScoreResult[], b: ScoreResult[]): number {
  let d = 0;
  for (let i = 0; i < a.length; i++) {
    for (let j = 0; j < a[i].logprobs.length; j++) d = Math.max(d, Math.abs(a[i].logprobs[j] - b[i].logprobs[j]));
    for (let j = 0; j < a[i].final.length; j++) d = Math.max(d, Math.abs(a[i].final[j] - b[i].final[j]));
  }
  return d;
}
/** The verdict's L per candidate: the mean log-prob of the continuation. */
const meanL = (r: ScoreResult[]) => r.map((x) => x.logprobs.reduce((s, v) => s + v, 0) / x.logprobs.length);

console.log(`${path} (${desc}): ${n} candidates × ${prefixLen}-token prefixes, ${contLen}-token continuation, ${threads} threads, gpuLayers ${gpuLayers}, batch ${batchSize}, ${rounds} rounds`);
console.log("| layout | setting | cold s (median) | warm s (median) | cold runs | warm runs |\n| --- | --- | --- | --- | --- | --- |");
const outs = new Map<string, ScoreResult[]>();
for (const setting of settings) {
  const models = new Map<string, Model>();
  for (const l of layouts) models.set(l, await open(l, setting));
  const cold = new Map<string, number[]>(layouts.map((l) => [l, []]));
  const warm = new Map<string, number[]>(layouts.map((l) => [l, []]));
  for (let r = 0; r < rounds; r++) {
    for (const l of layouts) {
      const m = models.get(l)!;
      await m.clearCache();
      let t = performance.now();
      outs.set(`${l}/${setting}`, await m.scoreMany(prefixes, cont, { readIds }));
      cold.get(l)!.push((performance.now() - t) / 1000);
      t = performance.now();
      await m.scoreMany(prefixes, cont, { readIds });
      warm.get(l)!.push((performance.now() - t) / 1000);
    }
  }
  for (const l of layouts) {
    const c = cold.get(l)!, w = warm.get(l)!;
    console.log(`| ${l} | ${setting} | ${median(c).toFixed(3)} | ${median(w).toFixed(3)} | ${c.map((x) => x.toFixed(2)).join(", ")} | ${w.map((x) => x.toFixed(2)).join(", ")} |`);
  }
  for (let i = 1; i < layouts.length; i++) {
    const d = maxDiff(outs.get(`${layouts[0]}/${setting}`)!, outs.get(`${layouts[i]}/${setting}`)!);
    console.log(`max |${layouts[0]} − ${layouts[i]}| log-prob (${setting}): ${d.toExponential(2)} nats`);
  }
  for (const m of models.values()) await m.dispose();
}
if (drift) {
  for (const l of layouts) {
    const ref = outs.get(`${l}/${settings[0]}`)!;
    for (const s of settings.slice(1)) {
      const got = outs.get(`${l}/${s}`)!;
      const dl = Math.max(...meanL(ref).map((v, i) => Math.abs(v - meanL(got)[i])));
      console.log(`drift ${s} vs ${settings[0]} (${l}): max |Δ log-prob| ${maxDiff(ref, got).toExponential(2)} nats, max |Δ L| (mean over the continuation) ${dl.toExponential(2)} nats`);
    }
  }
}
