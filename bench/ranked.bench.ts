/**
 * A route's ranking of the glance's columns (src/route/glance.ts): each column labelled with its
 * skill's id and name, then sorted by g. Labels looked up through the bank's entries on every route
 * (before session 13) against Library.label's cache (kept while the entries and held keys are
 * unchanged). Synthetic skills (1 key each) in a fresh bank; the g values of one real glance.
 *
 *   npm run bench -- ranked [sizes]      (default sizes 1000,10000,30000)
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
console.log("skills\tlabels via the entries + sort (ms, median of 30)\tcached labels + sort (ms)\tfirst route after a change (ms)");
for (const n of sizes) {
  const dir = mkdtempSync(join(tmpdir(), "gavel-ranked-"));
  const lib = await Library.open(dir, projections, { create: true });
  const keys = unitRows(n, dim, 3);
  for (let i = 0; i < n; i++) {
    const id = `bench/skills:skills/user-${i}/skill-${i}`;
    const description = `skill ${i} does task ${i}`, body = `Use it for ${i}.`;
    const k = keys.subarray(i * dim, (i + 1) * dim);
    const skill = { id, name: `skill-${i}`, description, body, meta: {}, contentHash: skillContentHash(id, description, body), source: `${id}/SKILL.md`, warnings: [], disableModelInvocation: false };
    await lib.save(skill, { keyTokens: [1], keyPositions: [0], renderTokens: 9, renderCut: { descriptionChars: 1, bodyChars: 1 } }, k);
    lib.track(id, k);
  }
  await lib.commit();
  const res = await lib.keys.glance(unitRows(20, dim, 5), { k: 10, detail: 0 });
  const byEntries = () =>
    Array.from(res.handles, (h, s) => {
      const id = lib.idOf(h);
      return { column: s, skill: id, name: lib.entry(id).name, g: res.g[s] };
    }).sort((a, b) => b.g - a.g || a.column - b.column);
  const byLabels = () =>
    Array.from(res.handles, (h, s) => {
      const { id, name } = lib.label(h);
      return { column: s, skill: id, name, g: res.g[s] };
    }).sort((a, b) => b.g - a.g || a.column - b.column);
  const time = (f: () => unknown) => {
    const ms: number[] = [];
    for (let r = 0; r < 31; r++) {
      const t = performance.now();
      f();
      ms.push(performance.now() - t);
    }
    return median(ms.slice(1));
  };
  const a = time(byEntries), b = time(byLabels);
  await lib.setWarnings(`bench/skills:skills/user-0/skill-0`, ["changed"]);
  const t = performance.now();
  byLabels();
  const after = performance.now() - t;
  console.log(`${n}\t${a.toFixed(2)}\t${b.toFixed(2)}\t${after.toFixed(2)}`);
  await lib.close();
  rmSync(dir, { recursive: true, force: true });
}
