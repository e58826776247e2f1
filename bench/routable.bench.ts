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
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Library } from "../src/bank/library.js";
import type { ModelFingerprint } from "../src/model/fingerprint.js";
import { Projections } from "../src/projections/projections.js";
import { skillContentHash } from "../src/skills/index.js";
import { median, unitRows } from "./data.js";

const sizes = (process.argv[2] ?? "1000,10000,30000").split(",").map(Number);
const dim = 16;
const fp: ModelFingerprint = { architecture: "llama", nLayer: 4, nEmbd: 32, nVocab: 256, vocabHash: "ab".repeat(32) };
const projections = await Projections.random(fp, { seed: 1, dim });
console.log("skills\tunchanged bank: routable() (median ms)\tafter a change (ms)");
for (const n of sizes) {
  const dir = mkdtempSync(join(tmpdir(), "gavel-routable-"));
  const lib = await Library.open(dir, projections, { create: true });
  const keys = unitRows(n, dim, 3);
  for (let i = 0; i < n; i++) {
    const id = `bench/skills:skills/user-${i}/skill-${i}`;
    const description = `skill ${i} does task ${i}`, body = `Use it for ${i}.`;
    const k = keys.subarray(i * dim, (i + 1) * dim);
    const skill = { id, name: `skill-${i}`, description, body, meta: {}, contentHash: skillContentHash(id, description, body), source: `${id}/SKILL.md`, warnings: [], disableModelInvocation: i % 50 === 0 };
    await lib.save(skill, { keyTokens: [1], keyPositions: [0], renderTokens: 9, renderCut: { descriptionChars: 1, bodyChars: 1 } }, k);
    lib.track(id, k);
  }
  await lib.commit();
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
