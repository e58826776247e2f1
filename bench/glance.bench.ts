/**
 * Speed of the glance and the cover kernels.
 *
 * Run (from the package root; esbuild comes with tsup; the output lands in .cache/, which git ignores and tsup does not clean):
 *
 *   npx esbuild bench/glance.bench.ts --bundle --platform=node --format=esm --packages=external \
 *     --outfile=.cache/bench/glance.bench.mjs && node .cache/bench/glance.bench.mjs [skills] [keys] [dim] [tokens]
 *
 * Defaults: 1000 skills × 30 keys × dim 768, 200 query tokens, k = voteK(skills), uniform weights.
 * Set GAVEL_ADDON=/path/to/gavel.node to bench a build other than prebuilds/ or build/Release.
 * Every instruction set the CPU supports is timed (the kernelIsa setting, GAVEL_KERNEL_ISA, caps the dispatch).
 */
import { loadBinding } from "../src/native/binding.js";
import { coverFarthestFirst, coverFarthestFirstAsync, glance, voteK } from "../src/kernels/kernels.js";
import { median, unitRows } from "./data.js";

const [nSkills, keysPer, dim, nq] = [1000, 30, 768, 200].map((d, i) => Number(process.argv[2 + i] ?? d));

async function main() {
  const binding = loadBinding();
  const best = binding.kernelIsa();
  const isas = ["generic", "avx2", "avx512"].slice(0, ["generic", "avx2", "avx512"].indexOf(best) + 1);
  const queries = unitRows(nq, dim, 1);
  const bank = unitRows(nSkills * keysPer, dim, 2);
  const offsets = new Int32Array(nSkills + 1).map((_, s) => s * keysPer);
  const k = voteK(nSkills);
  const gflop = (2 * nq * nSkills * keysPer * dim) / 1e9;
  console.log(
    `glance: ${nSkills} skills × ${keysPer} keys × dim ${dim}, ${nq} query tokens, k = ${k} ` +
      `(${gflop.toFixed(2)} GFLOP per call, bank ${((bank.length * 4) / 2 ** 20).toFixed(0)} MiB)`,
  );
  for (const isa of isas) {
    loadBinding().configure({ kernelIsa: isa as "generic" | "avx2" | "avx512" });
    const times: number[] = [];
    const syncTimes: number[] = [];
    const runs = isa === "generic" ? 3 : 7;
    for (let r = 0; r < runs + 1; r++) {
      const t0 = performance.now();
      const p = glance(queries, bank, offsets, dim, { k });
      const t1 = performance.now(); // validation + copies, on the JS thread
      await p;
      const t2 = performance.now();
      if (r > 0) {
        times.push(t2 - t0);
        syncTimes.push(t1 - t0);
      }
    }
    const ms = median(times);
    console.log(
      `  ${isa.padEnd(8)} ${ms.toFixed(1).padStart(8)} ms/call  ${(gflop / (ms / 1e3)).toFixed(1).padStart(6)} GFLOP/s` +
        `  (of which ${median(syncTimes).toFixed(1)} ms on the JS thread: checks + copies)`,
    );
  }
  loadBinding().configure({ kernelIsa: null });

  const coverKeys = 5000;
  const keys = unitRows(coverKeys, dim, 3);
  // Clustered keys compress, so the cover's speed depends on the data: 50 directions + noise.
  const centres = unitRows(50, dim, 4);
  for (let j = 0; j < coverKeys; j++) {
    let norm = 0;
    for (let d = 0; d < dim; d++) {
      const v = centres[(j % 50) * dim + d] + 0.6 * keys[j * dim + d];
      keys[j * dim + d] = v;
      norm += v * v;
    }
    for (let d = 0; d < dim; d++) keys[j * dim + d] /= Math.sqrt(norm);
  }
  for (const eps of [0.5, 0.83]) {
    const t0 = performance.now();
    const kept = coverFarthestFirst(keys, dim, eps);
    const t1 = performance.now();
    console.log(`cover: ${coverKeys} clustered keys × dim ${dim}, eps ${eps}: kept ${kept.length} in ${(t1 - t0).toFixed(1)} ms (${best})`);
    // The same off the JS thread: the event loop keeps turning (ticks counted every 10 ms).
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    const t2 = performance.now();
    const keptAsync = await coverFarthestFirstAsync(keys, dim, eps);
    const t3 = performance.now();
    clearInterval(timer);
    console.log(
      `  async: kept ${keptAsync.length} in ${(t3 - t2).toFixed(1)} ms, ${ticks} timer ticks of 10 ms meanwhile` +
        ` (same result: ${keptAsync.length === kept.length && keptAsync.every((v, i) => v === kept[i])})`,
    );
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
