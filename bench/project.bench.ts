/**
 * Throughput of projectNormalize (y = normalize(W h), the install-time projection of hidden states
 * into the 768-dim routing space) at several model widths.
 *
 * Run (from the package root; the output lands in .cache/, which git ignores):
 *
 *   npx esbuild bench/project.bench.ts --bundle --platform=node --format=esm --packages=external \
 *     --outfile=.cache/bench/project.bench.mjs && node .cache/bench/project.bench.mjs [inDims] [rows] [outDim]
 *
 * Defaults: inDim "64,1024,5120", 4096 rows, outDim 768. Every instruction set the CPU supports is
 * timed (the kernelIsa setting, GAVEL_KERNEL_ISA, caps the dispatch). Set GAVEL_ADDON to bench another build.
 */
import { loadBinding } from "../src/native/binding.js";
import { projectNormalize } from "../src/kernels/kernels.js";
import { median, randomMatrix } from "./data.js";

const inDims = (process.argv[2] ?? "64,1024,5120").split(",").map(Number);
const rows = Number(process.argv[3] ?? 4096);
const outDim = Number(process.argv[4] ?? 768);

async function main() {
  const best = loadBinding().kernelIsa();
  const isas = ["generic", "avx2", "avx512"].slice(0, ["generic", "avx2", "avx512"].indexOf(best) + 1);
  console.log(`projectNormalize: ${rows} rows → ${outDim}`);
  for (const inDim of inDims) {
    const H = randomMatrix(rows * inDim, 1 + inDim);
    const W = randomMatrix(outDim * inDim, 2 + inDim);
    const gflop = (2 * rows * inDim * outDim) / 1e9;
    for (const isa of isas) {
      loadBinding().configure({ kernelIsa: isa as "generic" | "avx2" | "avx512" });
      const runs = gflop * (isa === "generic" ? 4 : 1) > 20 ? 3 : 7;
      await projectNormalize(H, inDim, W, outDim);
      const t: number[] = [];
      for (let r = 0; r < runs; r++) {
        const t0 = performance.now();
        await projectNormalize(H, inDim, W, outDim);
        t.push(performance.now() - t0);
      }
      const ms = median(t);
      console.log(
        `  inDim ${String(inDim).padStart(5)}  ${isa.padEnd(8)} ${ms.toFixed(1).padStart(8)} ms` +
          `  ${((rows / ms) * 1e3).toFixed(0).padStart(8)} rows/s  ${(gflop / (ms / 1e3)).toFixed(1).padStart(6)} GFLOP/s`,
      );
    }
  }
  loadBinding().configure({ kernelIsa: null });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
