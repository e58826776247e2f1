/**
 * Glance latency over a KeyBank (keys held natively) for synthetic libraries, against the flat
 * `glance` (which copies the whole bank from JS on every call) where that fits in memory.
 *
 * Run (from the package root; the output lands in .cache/, which git ignores):
 *
 *   npx esbuild bench/bank.bench.ts --bundle --platform=node --format=esm --packages=external \
 *     --outfile=.cache/bench/bank.bench.mjs && node .cache/bench/bank.bench.mjs [dims] [sizes] [keys] [tokens]
 *
 * Defaults: dims "128,768", sizes "1000,10000,30000" skills, 30 keys per skill (a compressed bank),
 * 200 query tokens, k = voteK(N), uniform weights. dim 768 × 30K skills holds 2.6 GiB of keys.
 * Set GAVEL_ADDON=/path/to/gavel.node to bench a build other than prebuilds/ or build/Release.
 */
import { loadBinding } from "../src/native/binding.js";
import { glance, voteK } from "../src/kernels/kernels.js";
import { KeyBank } from "../src/bank/key-bank.js";
import { median, unitRows } from "./data.js";

const dims = (process.argv[2] ?? "128,768").split(",").map(Number);
const sizes = (process.argv[3] ?? "1000,10000,30000").split(",").map(Number);
const keysPer = Number(process.argv[4] ?? 30);
const nq = Number(process.argv[5] ?? 200);
/** Largest flat bank (floats) the comparison builds in JS: 10K × 30 × 768. */
const FLAT_LIMIT = 10_000 * 30 * 768;

async function time(runs: number, fn: () => Promise<unknown>): Promise<number> {
  await fn(); // warm-up
  const t: number[] = [];
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    await fn();
    t.push(performance.now() - t0);
  }
  return median(t);
}

async function main() {
  const isa = loadBinding().kernelIsa();
  console.log(`KeyBank.glance: ${keysPer} keys per skill, ${nq} query tokens, k = voteK(N), ${isa}`);
  for (const dim of dims) {
    // Skills are cut from a pool of random unit rows: the speed does not depend on the values.
    const pool = unitRows(4096, dim, 7 + dim);
    const queries = unitRows(nq, dim, 3);
    const bank = new KeyBank(dim);
    const scratch = new Float32Array(keysPer * dim);
    let seed = 12345;
    const next = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed >>> 8;
    };
    for (const N of sizes) {
      const t0 = performance.now();
      while (bank.size < N) {
        for (let j = 0; j < keysPer; j++) {
          const p = next() % 4096;
          scratch.set(pool.subarray(p * dim, (p + 1) * dim), j * dim);
        }
        bank.add(scratch);
      }
      const fill = performance.now() - t0;
      const k = voteK(N);
      const gflop = (2 * nq * bank.keys * dim) / 1e9;
      const runs = gflop > 100 ? 3 : gflop > 10 ? 5 : 9;
      const ms = await time(runs, () => bank.glance(queries, { k }));
      let flatNote = "";
      if (bank.keys * dim <= FLAT_LIMIT) {
        const flat = new Float32Array(bank.keys * dim);
        const offsets = new Int32Array(N + 1);
        // the same keys in the same order (content does not matter for speed; sizes do)
        for (let s = 0; s < N; s++) offsets[s + 1] = offsets[s] + keysPer;
        for (let j = 0; j < bank.keys; j++) flat.set(pool.subarray((j % 4096) * dim, (j % 4096 + 1) * dim), j * dim);
        const flatMs = await time(runs, () => glance(queries, flat, offsets, dim, { k }));
        flatNote = `   flat glance (copies the bank each call): ${flatMs.toFixed(1).padStart(8)} ms`;
      } else {
        flatNote = "   flat glance: skipped (bank too large to also hold in JS)";
      }
      console.log(
        `  dim ${String(dim).padStart(4)}  N ${String(N).padStart(6)}  keys ${String(bank.keys).padStart(8)}` +
          `  bank ${(bank.bytes / 2 ** 20).toFixed(0).padStart(5)} MiB (filled in ${(fill / 1e3).toFixed(1)} s)` +
          `  ${ms.toFixed(1).padStart(8)} ms/glance  ${(gflop / (ms / 1e3)).toFixed(1).padStart(6)} GFLOP/s${flatNote}`,
      );
    }
    bank.clear();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
