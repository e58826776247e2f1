// Which routes of the default-route records (test and validation, 2026-12-06 on one H100) hold a
// changed skill (changed-ids.txt) as their pick or in their shortlist (the verdict's candidates, first 5;
// an off-domain prompt's record holds its pick alone).
//   node bench/results/2026-12-06-cpu-surrogate-cut-count/shortlists.mjs
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
const here = new URL(".", import.meta.url);
const changed = new Set(readFileSync(new URL("changed-ids.txt", here), "utf8").split("\n").filter(Boolean));
for (const split of ["test", "val"]) {
  const rows = gunzipSync(readFileSync(new URL(`../2026-12-06-h100-route-current/${split}.jsonl.gz`, here))).toString("utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
  const hits = [];
  for (const r of rows) {
    // an off-domain prompt's record holds its pick alone
    if (r.offDomain && changed.has(r.skill)) hits.push(`${r.id} (off-domain): ${r.skill}`);
    for (const k of ["reranked", "firstStage", "rerankedNoAbstain"]) {
      const x = r[k];
      if (!x) continue;
      const ids = [x.skill, ...(x.shortlist ?? [])].filter((id) => changed.has(id));
      if (ids.length) hits.push(`${r.id} ${k}: ${[...new Set(ids)].join(", ")}`);
    }
  }
  console.log(`${split}: ${rows.length} records, ${hits.length} routes with a changed skill as pick or in the shortlist${hits.map((h) => `\n  ${h}`).join("")}`);
}
