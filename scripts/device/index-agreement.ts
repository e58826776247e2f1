/**
 * The glance index against the exact glance on a real bank, from two `gavel eval --methods glance`
 * record files of the same tasks (train-full.sh INDEX=1: val-glance.jsonl, then val-glance-index.jsonl
 * with GAVEL_GLANCE_INDEX=on): per task, the share of the exact top 20 found in the pruned top 20 and
 * whether the top skill is the same; both glances' Hit@1 and R@20.
 *
 * Usage: npx vite-node scripts/device/index-agreement.ts -- <exact.jsonl[.gz]> <pruned.jsonl[.gz]>
 */
import { readPerQuery } from "../../lab/eval/io.js";

const [exactPath, prunedPath] = process.argv.slice(2).filter((a) => a !== "--");
if (!exactPath || !prunedPath) throw new Error("usage: index-agreement.ts <exact records> <pruned records>");
const exact = await readPerQuery(exactPath);
const pruned = new Map((await readPerQuery(prunedPath)).map((r) => [r.id, r]));
const top = (r: { glance?: { skill: string }[] }, k = 20) => (r.glance ?? []).slice(0, k).map((c) => c.skill);
let n = 0, overlap = 0, sameTop = 0, hitE = 0, hitP = 0, rE = 0, rP = 0, worst = 1;
for (const e of exact) {
  const p = pruned.get(e.id);
  if (!p) continue;
  const te = top(e), tp = new Set(top(p));
  const share = te.length ? te.filter((s) => tp.has(s)).length / te.length : 1;
  n++; overlap += share; worst = Math.min(worst, share);
  if (te[0] !== undefined && te[0] === top(p)[0]) sameTop++;
  if (e.accepted.includes(te[0])) hitE++;
  if (p.accepted.includes(top(p)[0])) hitP++;
  if (te.some((s) => e.accepted.includes(s))) rE++;
  if (top(p).some((s) => p.accepted.includes(s))) rP++;
}
const f = (x: number) => (x / n).toFixed(3);
console.log(`${n} tasks in both files`);
console.log(`top-20 agreement ${f(overlap)} (worst task ${worst.toFixed(2)}), same top skill ${f(sameTop)}`);
console.log(`Hit@1 exact ${f(hitE)} pruned ${f(hitP)}; R@20 exact ${f(rE)} pruned ${f(rP)}`);
