// Hit@1 of the re-ranked route, task by task, against an earlier run's records (the tasks in both).
// Usage: node compare-picks.mjs NEW_DIR OLD_DIR   (each holding test.jsonl[.gz] and val.jsonl[.gz])
import { existsSync, readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
const read = (dir, split) => {
  const p = `${dir}/${split}.jsonl`;
  const text = existsSync(p) ? readFileSync(p, "utf8") : gunzipSync(readFileSync(`${p}.gz`)).toString();
  return new Map(text.trim().split("\n").map((l) => JSON.parse(l)).map((r) => [r.id, r]));
};
const [now, before] = process.argv.slice(2);
for (const split of ["test", "val"]) {
  const a = read(now, split), b = read(before, split);
  let n = 0, na = 0, nb = 0, picks = 0;
  const gained = [], lost = [];
  for (const [id, r] of a) {
    const o = b.get(id);
    if (!o || r.offDomain) continue;
    n++;
    const right = (x) => x.gold.includes(x.reranked.skill);
    na += right(r); nb += right(o);
    if (r.reranked.skill !== o.reranked.skill) picks++;
    if (right(r) && !right(o)) gained.push(id);
    if (right(o) && !right(r)) lost.push(id);
  }
  console.log(`${split}: ${n} tasks in both; right now ${na}, before ${nb}; picks differing ${picks}; gained ${gained.length} (${gained.join(" ")}); lost ${lost.length} (${lost.join(" ")})`);
}
