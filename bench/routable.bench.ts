/**
 * `Library.routable()`: the handles of the skills a route or a live append may choose, asked for on
 * every glance and every token of a live context. Synthetic skills (1 key each, a short text) are saved
 * and tracked in a fresh bank; then the call is timed with the bank unchanged (the live case), and once
 * right after a change (the walk over every entry it then makes).
 *
 * Run (from the package root; the output lands in .cache/, which git ignores):
 *
 *   npx esbuild bench/routable.bench.ts --bundle --platform=node --format=esm --packages=external \
 *     --outfile=.cache/bench/routable.bench.mjs && node .cache/bench/routable.bench.mjs [sizes]
 *
 * Default sizes: "1000,10000,30000" skills.
 */
import { rmSync } from "node:fs";
import { median } from "./data.js";
import { syntheticLibrary } from "./synthetic-library.js";

const sizes = (process.argv[2] ?? "1000,10000,30000").split(",").map(Number);
console.log("skills\tunchanged bank: routable() (median ms)\tafter a change (ms)");
for (const n of sizes) {
  const { lib, dir } = await syntheticLibrary(n, { disabledEvery: 50, prefix: "gavel-routable-" });
  const ms: number[] = [];
  for (let r = 0; r < 200; r++) {
    const t = performance.now();
    lib.routable();
    ms.push(performance.now() - t);
  }
  await lib.setWarnings(`bench/skills:skills/user-0/skill-0`, ["changed"]);
  const t = performance.now();
  lib.routable();
  const after = performance.now() - t;
  console.log(`${n}\t${median(ms.slice(1)).toFixed(3)}\t${after.toFixed(3)}`);
  await lib.close();
  rmSync(dir, { recursive: true, force: true });
}
