/**
 * The first stage g + βB under each recorded glance variant (row weights / vote share), from
 * scripts/select/weights-records.ts's records: for each variant and each β of a grid (B = BM25 / T − log Z at the
 * records' T), Hit@1 of the fused ranking, and the glance alone's Hit@1 / R@20 and the re-ranker's
 * pool recall (the glance's best 20 ∪ BM25's best 20), per records file.
 *
 *   npx vite-node scripts/select/weights-fit.ts -- A.jsonl.gz[,B.jsonl.gz…] [--betas 0,0.01,…]
 *
 * A fused ranking is taken over the records' candidates; a task whose best candidate does not clear
 * the bound of every skill left out (g floor + β · (BM25 floor / T − log Z)) is counted in `open`
 * (its figure could differ by one; the table's Hit@1 counts it as recorded).
 */
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";

interface Cand { skill: string; g: number[]; s: number }
interface Rec { id: string; batch: string; size: number; gold: string[]; logZ: number; T: number; variants: string[]; floors: number[]; cand: Cand[] }
type Old = Omit<Rec, "variants" | "cand"> & { variants?: string[]; cand: (Cand & { gu?: number; gi?: number })[] };

const argv = process.argv.slice(2).filter((a) => a !== "--");
const opt = (n: string, d: string): string => { const i = argv.indexOf(n); return i >= 0 ? argv.splice(i, 2)[1] : d; };
const betas = opt("--betas", "0,0.005,0.01,0.02,0.05,0.1,0.2,0.5,1,2,5,1e9").split(",").map(Number);
const files = (argv[0] ?? "").split(",").filter(Boolean);
if (files.length === 0) throw new Error("usage: weights-fit.ts A.jsonl.gz[,B…] [--betas …]");

// records written before variants: g (uniform) and g (idf) at the paper's vote size
const upgrade = (r: Old): Rec => (r.variants ? (r as Rec) : { ...r, variants: ["uniform/0", "idf/0"], cand: r.cand.map((c) => ({ skill: c.skill, s: c.s, g: [c.gu ?? 0, c.gi ?? 0] })) });
const read = (f: string): Rec[] => gunzipSync(readFileSync(f)).toString().split("\n").filter(Boolean).map((l) => upgrade(JSON.parse(l) as Old));
const rank = (r: Rec, score: (c: Cand) => number): Cand[] => [...r.cand].sort((a, b) => score(b) - score(a) || (a.skill < b.skill ? -1 : 1));
const f3 = (x: number): string => x.toFixed(3);

for (const f of files) {
  const recs = read(f);
  const n = recs.length;
  console.log(`\n${f}: ${n} tasks, ${recs[0]?.size} skills`);
  const bm = recs.filter((r) => r.gold.includes(rank(r, (c) => c.s)[0].skill)).length;
  console.log(`  BM25 (k1 3, b 1) Hit@1 ${f3(bm / n)}`);
  for (const [fl, name] of (recs[0]?.variants ?? []).entries()) {
    let h1 = 0, r20 = 0, pool = 0;
    for (const r of recs) {
      const byG = rank(r, (c) => c.g[fl]);
      if (r.gold.includes(byG[0].skill)) h1++;
      if (byG.slice(0, 20).some((c) => r.gold.includes(c.skill))) r20++;
      const p = new Set([...byG.slice(0, 20), ...rank(r, (c) => c.s).slice(0, 20)].map((c) => c.skill));
      if (r.gold.some((g) => p.has(g))) pool++;
    }
    const fused = betas.map((beta) => {
      let hit = 0, open = 0;
      for (const r of recs) {
        const score = (c: Cand): number => (beta >= 1e9 ? c.s : c.g[fl] + beta * (c.s / r.T - r.logZ));
        const best = rank(r, score)[0];
        const sFloor = r.floors[r.floors.length - 1];
        const bound = beta >= 1e9 ? sFloor : r.floors[fl] + beta * (sFloor / r.T - r.logZ);
        if (score(best) <= bound) open++;
        if (r.gold.includes(best.skill)) hit++;
      }
      return `β ${beta >= 1e9 ? "∞" : beta}: ${f3(hit / n)}${open ? ` (open ${open})` : ""}`;
    });
    console.log(`  ${name}: glance Hit@1 ${f3(h1 / n)}, R@20 ${f3(r20 / n)}, pool recall ${f3(pool / n)}; g + βB Hit@1 — ${fused.join(", ")}`);
  }
}
