// The lexical expert alone (BM25 over bm25Tokens, k1 3, b 1 as shipped) over the benchmark's library
// (SWE-Skills-Bench's golds mixed into the public skills, scripts/lexical/bench-splits.ts): Hit@1 and
// R@20 on validation (batches 1-5) and test (6-10), and each task's top-1 and gold rank written as
// JSON lines, so two tokenizers' records can be compared task by task.
//
// Usage: npx vite-node scripts/lexical/expert-records.ts -- --out FILE [--k1 3] [--b 1]
//        npx vite-node scripts/lexical/expert-records.ts -- --compare OLD NEW
import { readFileSync, writeFileSync } from "node:fs";
import { benchSplits } from "./bench-splits.js";
import { Bm25Index } from "../../src/lexical/bm25.js";
import { TOKENIZER_VERSION } from "../../src/lexical/postings.js";

interface Row { split: string; i: number; top1: string; rank: number }
const args = process.argv.slice(2).filter((a) => a !== "--");
const opt = (n: string) => { const i = args.indexOf(n); return i >= 0 ? args[i + 1] : undefined; };

function summary(rows: Row[], label: string): void {
  for (const split of ["validation", "test"]) {
    const r = rows.filter((x) => x.split === split);
    const hit1 = r.filter((x) => x.rank === 0).length, r20 = r.filter((x) => x.rank >= 0).length;
    console.log(`${label} ${split} (${r.length}) Hit@1 ${(hit1 / r.length).toFixed(3)} (${hit1}) R@20 ${(r20 / r.length).toFixed(3)} (${r20})`);
  }
}

const cmp = args.indexOf("--compare");
if (cmp >= 0) {
  const read = (f: string) => readFileSync(f, "utf8").trim().split("\n").map((l) => JSON.parse(l) as Row);
  const [a, b] = [read(args[cmp + 1]), read(args[cmp + 2])];
  summary(a, "old"); summary(b, "new");
  for (const split of ["validation", "test"]) {
    const pairs = a.filter((x) => x.split === split).map((x) => [x, b.find((y) => y.split === split && y.i === x.i)!] as const);
    const top1 = pairs.filter(([x, y]) => x.top1 !== y.top1).length;
    const hitGain = pairs.filter(([x, y]) => x.rank !== 0 && y.rank === 0).length, hitLoss = pairs.filter(([x, y]) => x.rank === 0 && y.rank !== 0).length;
    const rank = pairs.filter(([x, y]) => x.rank !== y.rank).length;
    console.log(`${split}: top-1 changed on ${top1} of ${pairs.length} tasks; Hit@1 gained ${hitGain}, lost ${hitLoss}; gold's rank (top 20) changed on ${rank}`);
  }
} else {
  const out = opt("--out");
  if (!out) throw new Error("--out FILE");
  const k1 = Number(opt("--k1") ?? 3), b = Number(opt("--b") ?? 1);
  const t0 = Date.now();
  const { routable, splits } = await benchSplits();
  const t1 = Date.now();
  const index = new Bm25Index(routable.map((s) => ({ id: s.id, name: s.name, description: s.description, body: s.body })), { k1, b });
  const t2 = Date.now();
  const rows: Row[] = [];
  for (const [split, ts] of Object.entries(splits)) {
    ts.forEach((t, i) => {
      const hits = index.search(t.text, 20);
      rows.push({ split, i, top1: hits[0]?.id ?? "", rank: hits.findIndex((h) => t.accepted.has(h.id)) });
    });
  }
  const t3 = Date.now();
  writeFileSync(out, rows.map((r) => JSON.stringify(r)).join("\n") + "\n");
  console.log(`tokenizer v${TOKENIZER_VERSION}: ${routable.length} skills; load ${((t1 - t0) / 1000).toFixed(1)} s, index ${((t2 - t1) / 1000).toFixed(1)} s, ${rows.length} queries ${((t3 - t2) / 1000).toFixed(1)} s; k1 ${k1}, b ${b}`);
  summary(rows, `v${TOKENIZER_VERSION}`);
}
