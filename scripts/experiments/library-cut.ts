// Per-library calibration of abstention's cut, replayed: over each library of the given record files,
// (the mean lines at the end pool all given files; the rule reads the four small shapes alone)
// the shipped model's score (the logit of p(off-domain)) of every record; the library's own cut is
// the model's, lowered so that at most k of the library's reference prompts (the hand-written
// prompts of batches 1–5) would load a skill. Reports, per file and k, the in-domain requests declined
// (fitting and held-out batches) and the held-out prompts (batches 6–10) that load a skill.
//
// `--small-band`: score every record with the by-size model's small band (a logistic) whatever the
// library's size, the model's own decision kept: the cut's score past the small band's edge.
//
// Usage: npx vite-node scripts/experiments/library-cut.ts -- R/tiny-3-5.jsonl.gz … [--k 0,1,2,3,4] [--small-band]
import { readFileSync } from "node:fs";
import { readPerQuery } from "../../lab/eval/io.js";
import { batchNumber } from "../../lab/eval/tasks.js";
import { replayAbstention } from "../../lab/eval/abstention-fit.js";
import { Projections } from "../../src/index.js";
import { decideAbstention } from "../../src/route/abstention.js";
import { bandFor } from "../../src/projections/abstention-model.js";
const argv = process.argv.slice(2).filter((a) => a !== "--");
const kAt = argv.indexOf("--k");
const ks = kAt >= 0 ? argv.splice(kAt, 2)[1].split(",").map(Number) : [0, 1, 2, 3, 4];
const smallAt = argv.indexOf("--small-band");
const smallBand = smallAt >= 0 && argv.splice(smallAt, 1).length > 0;
const c = JSON.parse(readFileSync("bench/results/2026-11-28-h200-default/selection.json", "utf8")).l1.chosen;
const ruling = { alpha: c.alpha, gamma: c.gamma, delta: c.delta, beta: c.beta, maxShortlist: 20, lexicalTemperature: c.T };
const model = (await Projections.load("models/gavel-mini.projections.gguf")).abstention!;
type Row = { z: number; abstain: boolean; off: boolean; fit: boolean };
const total: Record<string, number[]> = {};
for (const file of argv) {
  const libs = new Map<string, Row[]>();
  for (const r of await readPerQuery(file)) {
    const x = replayAbstention(r as never, ruling);
    if (!x) continue;
    const lib = r.id.includes("@") ? r.id.slice(r.id.indexOf("@") + 1) : "-";
    const d = decideAbstention(model, x.features);
    const scored = smallBand && model.kind === "bySize" ? decideAbstention(model.small, x.features) : d;
    (libs.get(lib) ?? libs.set(lib, []).get(lib)!).push({ z: smallBand ? scored.score : bandFor(model, x.features.logN).kind === "threshold" ? -d.score : d.score, abstain: d.abstain, off: r.offDomain === true, fit: (batchNumber((r as { batch?: string }).batch) ?? 0) <= 5 });
  }
  const line: string[] = [];
  for (const k of [-1, ...ks]) {
    let inFitN = 0, inFitD = 0, inHeldN = 0, inHeldD = 0, offHeldN = 0, offHeldP = 0, offFitN = 0, offFitP = 0;
    for (const rows of libs.values()) {
      const ref = rows.filter((r) => r.off && r.fit).map((r) => r.z).sort((a, b) => a - b);
      // the library's cut: the k+1-th lowest reference score; a record at or above it abstains
      const t = k >= 0 && k < ref.length ? ref[k] : Infinity;
      for (const r of rows) {
        const a = r.abstain || r.z >= t;
        if (!r.off && r.fit) { inFitN++; if (a) inFitD++; }
        if (!r.off && !r.fit) { inHeldN++; if (a) inHeldD++; }
        if (r.off && r.fit) { offFitN++; if (!a) offFitP++; }
        if (r.off && !r.fit) { offHeldN++; if (!a) offHeldP++; }
      }
    }
    line.push(`k ${k < 0 ? "model" : k}: in declined fit ${inFitD}/${inFitN} held ${inHeldD}/${inHeldN}; prompts through fit ${offFitP}/${offFitN} held ${offHeldP}/${offHeldN} (${(offHeldP / offHeldN).toFixed(3)})`);
    const T = (total[k] ??= [0, 0, 0, 0]); T[0] += (inFitD + inHeldD) / (inFitN + inHeldN); T[1] += offHeldP / offHeldN; T[2]++;
  }
  console.log(`${file.split("/").pop()} (${libs.size} libraries)\n  ${line.join("\n  ")}`);
}
for (const [k, T] of Object.entries(total)) console.log(`k ${k}: mean over files, in declined ${(T[0] / T[2]).toFixed(3)}, held prompts through ${(T[1] / T[2]).toFixed(3)}`);
