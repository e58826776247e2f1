// Compares two route runs' per-task records (route-rerank-real.bench.ts --records), split by split:
// picks, shortlists and the largest difference of each read-out (g, B, L, V, R) and abstention logit.
// Usage: node scripts/device/compare-records.mjs NEW_DIR OLD_DIR   (each holding test.jsonl[.gz] and val.jsonl[.gz]; a split
// missing from either is skipped)
import { existsSync, readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
const read = (dir, split) => {
  const p = `${dir}/${split}.jsonl`;
  const text = existsSync(p) ? readFileSync(p, "utf8") : gunzipSync(readFileSync(`${p}.gz`)).toString();
  return new Map(text.trim().split("\n").map((l) => JSON.parse(l)).map((r) => [r.id, r]));
};
const [now, before] = process.argv.slice(2);
for (const split of ["test", "val"]) {
  const has = (dir) => [`${dir}/${split}.jsonl`, `${dir}/${split}.jsonl.gz`].some(existsSync);
  if (!has(now) || !has(before)) { console.log(`${split}: no records in ${has(now) ? before : now}`); continue; }
  const a = read(now, split), b = read(before, split);
  let pickDiff = 0, slDiff = 0, n = 0, abs = 0, offDiff = 0;
  const maxd = [0, 0, 0, 0, 0];
  for (const [id, r] of a) {
    const o = b.get(id);
    if (!o) continue;
    n++;
    if (r.offDomain) { if (r.skill !== o.skill || r.abstained !== o.abstained) offDiff++; continue; }
    for (const k of ["reranked", "firstStage", "rerankedNoAbstain"]) {
      if (!r[k] || !o[k]) continue;
      if (r[k].skill !== o[k].skill) pickDiff++;
      if (JSON.stringify(r[k].shortlist) !== JSON.stringify(o[k].shortlist)) slDiff++;
      if (r[k].abstention != null) abs = Math.max(abs, Math.abs(r[k].abstention - o[k].abstention));
      r[k].read.forEach((row, i) => row.forEach((v, j) => {
        const w = o[k].read[i]?.[j];
        if (v != null && w != null) maxd[j] = Math.max(maxd[j], Math.abs(v - w));
      }));
    }
  }
  console.log(`${split}: ${n} records in both (${a.size} / ${b.size}); pick differences ${pickDiff}, shortlist differences ${slDiff}, off-domain decisions differing ${offDiff}; largest |Δ| g ${maxd[0].toExponential(2)}, B ${maxd[1].toExponential(2)}, L ${maxd[2].toExponential(2)}, V ${maxd[3].toExponential(2)}, R ${maxd[4].toExponential(2)}, abstention logit ${abs.toExponential(2)}`);
}
