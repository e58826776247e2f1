/**
 * What a bank's manifest costs at library scale: a commit (the manifest rewritten whole, with every
 * entry's key tokens and positions) and reopening the bank (the manifest parsed), for synthetic
 * entries shaped like gavel-mini's over skills-mit (~243 keys kept a skill).
 *
 *   npm run bench -- commit [skills=30000] [keysPerSkill=243]
 *
 * (Node 20 has no `await using`: closes are explicit.) Keys are 4-wide (the manifest, not the keys file, is measured); the bank lives under the OS temp dir.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BankStore, bankHeaderFor } from "../src/bank/index.js";
import type { ModelFingerprint } from "../src/model/fingerprint.js";
import { Projections } from "../src/projections/projections.js";
import { median } from "./data.js";

const [nSkills, keysPer] = [30000, 243].map((d, i) => Number(process.argv[2 + i] ?? d));
const fp: ModelFingerprint = { architecture: "llama", nLayer: 10, nEmbd: 384, nVocab: 32000, vocabHash: "ab".repeat(32) };
const header = bankHeaderFor(await Projections.random(fp, { seed: 1, dim: 4 }));
const dir = mkdtempSync(join(tmpdir(), "gavel-commit-bench-"));
let seed = 7;
const next = (m: number) => {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  return (seed >>> 8) % m;
};
const keys = new Float32Array(keysPer * 4).fill(0.5);
const entry = (i: number) => ({
  id: `owner/repo:skills/skill-number-${i}`,
  name: `skill-number-${i}`,
  description: "Does one thing well, described in a sentence or two of the skill's front matter.",
  contentHash: (i.toString(16) + "0".repeat(64)).slice(0, 64),
  source: `skills-mit.jsonl.gz:${i + 1}`,
  disableModelInvocation: false,
  keyTokens: Array.from({ length: keysPer }, () => next(32000)),
  keyPositions: Array.from({ length: keysPer }, (_, j) => 30 + 2 * j),
  renderTokens: 511,
  renderCut: { descriptionChars: 80, bodyChars: 1800 },
});
try {
  const bank = await BankStore.open(dir, header, { create: true });
  try {
    for (let i = 0; i < nSkills; i++) await bank.put(entry(i), keys);
    const t: number[] = [];
    for (let r = 0; r < 5; r++) {
      await bank.put(entry(r), keys); // one changed skill, as an install's next commit has
      const t0 = performance.now();
      await bank.commit();
      t.push(performance.now() - t0);
    }
    const mb = statSync(join(dir, "manifest.json")).size / 1e6;
    console.log(`commit: ${nSkills} skills × ${keysPer} keys, manifest ${mb.toFixed(1)} MB: ${median(t).toFixed(0)} ms (median of 5)`);
  } finally {
    await bank.close();
  }
  const t0 = performance.now();
  const again = await BankStore.open(dir, header);
  console.log(`reopen: ${(performance.now() - t0).toFixed(0)} ms for ${again.entries().length} entries`);
  await again.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
