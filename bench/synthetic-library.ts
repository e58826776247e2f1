/**
 * A fresh bank of n synthetic skills (one unit key each, a short text), saved, tracked and committed:
 * what the library benches (routable, ranked) measure their bookkeeping on. `disabledEvery`: every
 * k-th skill disables model invocation (0: none). Close the library and remove `dir` after.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Library } from "../src/bank/library.js";
import type { ModelFingerprint } from "../src/model/fingerprint.js";
import { Projections } from "../src/projections/projections.js";
import { skillContentHash } from "../src/skills/index.js";
import { unitRows } from "./data.js";

export const SYNTHETIC_DIM = 16;
const fp: ModelFingerprint = { architecture: "llama", nLayer: 4, nEmbd: 32, nVocab: 256, vocabHash: "ab".repeat(32) };

export async function syntheticLibrary(n: number, options: { disabledEvery?: number; prefix?: string } = {}): Promise<{ lib: Library; dir: string }> {
  const dim = SYNTHETIC_DIM, every = options.disabledEvery ?? 0;
  const projections = await Projections.random(fp, { seed: 1, dim });
  const dir = mkdtempSync(join(tmpdir(), options.prefix ?? "gavel-bench-"));
  const lib = await Library.open(dir, projections, { create: true });
  const keys = unitRows(n, dim, 3);
  for (let i = 0; i < n; i++) {
    const id = `bench/skills:skills/user-${i}/skill-${i}`;
    const description = `skill ${i} does task ${i}`, body = `Use it for ${i}.`;
    const k = keys.subarray(i * dim, (i + 1) * dim);
    const skill = { id, name: `skill-${i}`, description, body, meta: {}, contentHash: skillContentHash(id, description, body), source: `${id}/SKILL.md`, warnings: [], disableModelInvocation: every > 0 && i % every === 0 };
    await lib.save(skill, { keyTokens: [1], keyPositions: [0], renderTokens: 9, renderCut: { descriptionChars: 1, bodyChars: 1 } }, k);
    lib.track(id, k);
  }
  await lib.commit();
  return { lib, dir };
}
