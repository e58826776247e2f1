/**
 * A route's ranking of the glance's columns (src/route/glance.ts): each column labelled with its
 * skill's id and name, then sorted by g. Three ways: labels looked up through the bank's entries on
 * every route and a comparator sort (the first version); Library.label's cache (kept while the
 * entries and held keys are unchanged) and the comparator sort; and the shipped `rankColumns` (the
 * cache, and `orderByG`'s numeric sort of packed keys). Synthetic skills (1 key each) in a fresh
 * bank; the g values of one real glance. Each way's ranking is checked equal to the first's.
 *
 *   npm run bench -- ranked [sizes]      (default sizes 1000,10000,30000)
 */
import { rmSync } from "node:fs";
import { median, unitRows } from "./data.js";
import { rankColumns } from "../src/route/glance.js";
import { SYNTHETIC_DIM, syntheticLibrary } from "./synthetic-library.js";

const sizes = (process.argv[2] ?? "1000,10000,30000").split(",").map(Number);
console.log("skills\tlabels via the entries + sort (ms, median of 30)\tcached labels + sort (ms)\trankColumns, as shipped (ms)\tfirst route after a change, as shipped (ms)");
for (const n of sizes) {
  const { lib, dir } = await syntheticLibrary(n, { prefix: "gavel-ranked-" });
  const res = await lib.keys.glance(unitRows(20, SYNTHETIC_DIM, 5), { k: 10, detail: 0 });
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
  const shipped = () => rankColumns(lib, res);
  const want = JSON.stringify(byEntries());
  if (JSON.stringify(byLabels()) !== want || JSON.stringify(shipped()) !== want) throw new Error(`${n} skills: the rankings differ`);
  const a = time(byEntries), b = time(byLabels), c = time(shipped);
  await lib.setWarnings(`bench/skills:skills/user-0/skill-0`, ["changed"]);
  const t = performance.now();
  shipped();
  const after = performance.now() - t;
  console.log(`${n}\t${a.toFixed(2)}\t${b.toFixed(2)}\t${c.toFixed(2)}\t${after.toFixed(2)}`);
  await lib.close();
  rmSync(dir, { recursive: true, force: true });
}
