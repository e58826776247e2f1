/**
 * The states cache's f16 round trip (every skill's and query's states at ℓ* are rounded through f16
 * and written as f16; a hit reads them back): the per-value JavaScript loop the cache used
 * earlier, util/half.ts's bulk loops, and the native kernels (kernels::RoundToHalf and
 * HalfToFloats, F16C on the AVX2 and AVX-512 levels) per instruction set, on one skill's states of
 * each backbone shape (491 tokens, the library's mean render, × nEmbd); then the device glance's
 * host-side query conversion (kernels::FloatsToHalf) at issue 15's query shapes.
 *
 *   npm run bench -- half            (or: npx vite-node bench/half.bench.ts)
 */
import { loadBinding } from "../src/native/binding.js";
import { floatToHalf, fromHalf, halfToFloat, toHalf } from "../src/util/half.js";
import { median } from "./data.js";

const binding = loadBinding();
binding.configure({ kernelIsa: null });
const best = binding.kernelIsa();
const isas = ["generic", "avx2", "avx512"].slice(0, ["generic", "avx2", "avx512"].indexOf(best) + 1);
const SKILLS = 30_544;

function time(run: () => void, reps = 7): number {
  run();
  const ms: number[] = [];
  for (let r = 0; r < reps; r++) {
    const t = performance.now();
    run();
    ms.push(performance.now() - t);
  }
  return median(ms);
}

console.log("shape\tmethod\tms a skill\tns a value\ts for 30,544 skills");
for (const [name, nEmbd] of [["gavel-mini (384)", 384], ["gavel-large (768)", 768], ["8B (4096)", 4096]] as const) {
  const n = 491 * nEmbd;
  const src = new Float32Array(n);
  let s = 12345;
  for (let i = 0; i < n; i++) {
    s = (s * 1103515245 + 12345) % 2147483648;
    src[i] = (s / 2147483648) * 40 - 20;
  }
  const x = new Float32Array(n);
  const half = new Uint16Array(n);
  const rows: [string, () => void][] = [
    ["round trip, per-value JS loop (before)", () => {
      x.set(src);
      for (let i = 0; i < n; i++) {
        half[i] = toHalf(x[i]);
        x[i] = fromHalf(half[i]);
      }
    }],
    ["round trip, util/half.ts bulk", () => {
      floatToHalf(src, half);
      halfToFloat(half, x);
    }],
    ...isas.map((isa): [string, () => void] => [`round trip, native ${isa}`, () => {
      loadBinding().configure({ kernelIsa: isa as "generic" | "avx2" | "avx512" });
      x.set(src);
      binding.roundToHalf(x, half);
    }]),
    ["read back, util/half.ts bulk", () => void halfToFloat(half, x)],
    ...isas.map((isa): [string, () => void] => [`read back, native ${isa}`, () => {
      loadBinding().configure({ kernelIsa: isa as "generic" | "avx2" | "avx512" });
      binding.halfToFloat(half, x);
    }]),
  ];
  for (const [method, run] of rows) {
    const ms = time(run);
    console.log(`${name}\t${method}\t${ms.toFixed(3)}\t${((ms * 1e6) / n).toFixed(2)}\t${((ms * SKILLS) / 1000).toFixed(1)}`);
  }
}
// The device glance's host-side conversion of its queries (kernels::FloatsToHalf; the generic level
// is the scalar loop maxsim.cu ran earlier), at issue 15's two query shapes.
console.log("\nqueries\tisa\tms a glance");
for (const [name, nq, dim] of [["1,300 × 256", 1300, 256], ["239 × 768", 239, 768]] as const) {
  const q = new Float32Array(nq * dim);
  for (let i = 0; i < q.length; i++) q[i] = Math.sin(i) * 0.06; // unit-row-sized values
  const half = new Uint16Array(q.length);
  for (const isa of isas) {
    loadBinding().configure({ kernelIsa: isa as "generic" | "avx2" | "avx512" });
    console.log(`${name}\t${isa}\t${time(() => binding.floatsToHalf(q, half), 21).toFixed(3)}`);
  }
}
binding.configure({ kernelIsa: null });
