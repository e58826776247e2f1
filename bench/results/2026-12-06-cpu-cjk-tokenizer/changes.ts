// The tasks whose gold moved into or out of the top 1 or the top 20 between records-v2 and records-v3, and
// how many tasks have a mostly-CJK skill (over 10% CJK characters) first. Run from the repository root:
//   npx vite-node bench/results/2026-12-06-cpu-cjk-tokenizer/changes.ts > bench/results/2026-12-06-cpu-cjk-tokenizer/changes.txt
import { readFileSync } from "node:fs";
import { loadLibrary } from "../../../lab/eval/io.js";
const D = "bench/results/2026-12-06-cpu-cjk-tokenizer";
const read = (f: string) => readFileSync(`${D}/${f}`, "utf8").trim().split("\n").map((l) => JSON.parse(l));
const a = read("records-v2.jsonl"), b = read("records-v3.jsonl");
const { skills } = await loadLibrary(["../shared/data/swe-skills-bench/skills.jsonl", "../shared/data/skills-mit.jsonl.gz"]);
const byId = new Map(skills.map((s) => [s.id, s]));
const cjk = (id: string) => { const s = byId.get(id); if (!s) return "?"; const t = `${s.name}${s.description}${s.body ?? ""}`; const n = (t.match(/[\p{sc=Han}\p{sc=Hiragana}\p{sc=Katakana}\p{sc=Hangul}]/gu) ?? []).length; return (n / Math.max(1, t.length)).toFixed(2); };
let newCjkTop = 0, oldCjkTop = 0;
for (let k = 0; k < a.length; k++) {
  const x = a[k], y = b[k];
  if (Number(cjk(x.top1)) > 0.1) oldCjkTop++;
  if (Number(cjk(y.top1)) > 0.1) newCjkTop++;
  if (x.rank !== y.rank && (x.rank === 0 || y.rank === 0 || x.rank < 0 || y.rank < 0)) console.log(x.split, x.i, `rank ${x.rank} -> ${y.rank}`, `top1 ${x.top1} (cjk ${cjk(x.top1)}) -> ${y.top1} (cjk ${cjk(y.top1)})`);
}
console.log(`tasks whose top-1 is a mostly-CJK (>10% CJK chars) skill: v2 ${oldCjkTop}, v3 ${newCjkTop}`);
