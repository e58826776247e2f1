/**
 * The scorer's log-normaliser: log Σ exp over vocabulary-wide logits rows (kernels::LogSumExp), per
 * instruction set, with its largest error against a float64 logsumexp computed here. (The scalar loop
 * it replaced, std::exp on each float summed in double, is engine_detail.h before commit 8369243;
 * docs/BENCHMARKS.md gives its time from that loop compiled alone.)
 *
 *   npx esbuild bench/logsumexp.bench.ts --bundle --platform=node --format=esm --packages=external \
 *     --outfile=.cache/bench/logsumexp.bench.mjs && node .cache/bench/logsumexp.bench.mjs [vocab] [rows]
 *
 * Defaults: vocab 32000 (gavel-mini) and 151936 (Qwen3), 256 rows each (a verdict has ~2,300).
 */
import { loadBinding } from "../src/native/binding.js";
import { median } from "./data.js";

const binding = loadBinding();
const vocabs = process.argv[2] ? [Number(process.argv[2])] : [32000, 151936];
const rows = Number(process.argv[3] ?? 256);
binding.configure({ kernelIsa: null });
const best = binding.kernelIsa();
const isas = ["generic", "avx2", "avx512"].slice(0, ["generic", "avx2", "avx512"].indexOf(best) + 1);
console.log("vocab\trows\tisa\tms (median of 5)\tns per element\tmax |Δ| vs float64");
for (const nv of vocabs) {
  const data = new Float32Array(nv * rows);
  let s = 12345;
  for (let i = 0; i < data.length; i++) {
    s = (s * 1103515245 + 12345) % 2147483648;
    data[i] = (s / 2147483648) * 20 - 12; // logits in [-12, 8)
  }
  const ref = new Float64Array(rows);
  for (let k = 0; k < rows; k++) {
    const row = data.subarray(k * nv, (k + 1) * nv);
    let mx = -Infinity;
    for (const v of row) mx = Math.max(mx, v);
    let sum = 0;
    for (const v of row) sum += Math.exp(v - mx);
    ref[k] = mx + Math.log(sum);
  }
  for (const isa of isas) {
    loadBinding().configure({ kernelIsa: isa as "generic" | "avx2" | "avx512" });
    const times: number[] = [];
    let out: Float64Array = new Float64Array(0);
    for (let rep = 0; rep < 5; rep++) {
      const t = performance.now();
      out = binding.logSumExp(data, nv);
      times.push(performance.now() - t);
    }
    let d = 0;
    for (let k = 0; k < rows; k++) d = Math.max(d, Math.abs(out[k] - ref[k]));
    const ms = median(times);
    console.log(`${nv}\t${rows}\t${isa}\t${ms.toFixed(2)}\t${((ms * 1e6) / (nv * rows)).toFixed(3)}\t${d.toExponential(2)}`);
  }
}
binding.configure({ kernelIsa: null });
