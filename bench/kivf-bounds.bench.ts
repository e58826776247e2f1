/**
 * How far a bound could prune the key IVF on a real bank (the figures behind "what is left" in
 * bench/results/2026-11-29-cpu-kivf2/README.md). Trains the default index, then for sample task rows:
 * - groups: whether q·g + |q|·radius(g) (g a coarse centroid, radius its fine centroids' farthest)
 *   falls below the row's nprobe-th best fine-centroid score, i.e. whether the two-level probe could
 *   skip the group exactly;
 * - lists: whether q·c + |q|·radius(c) (radius: the list's farthest key) falls below the row's k-th
 *   best skill score by exact max-sim (an oracle threshold), i.e. whether an exact search could skip
 *   the list.
 *
 *   npm run bench -- kivf-bounds <bank dir> <queries cache> [--rows 40] [--k 10]
 *
 * Plain float64 loops: slow (a minute or two for 40 rows at 600K keys).
 */
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { KeyBank } from "../src/bank/key-bank.js";
import { KeyIvf, defaultNprobe } from "../src/bank/key-ivf.js";

const argv = process.argv.slice(2);
function flag(name: string, fallback: string): string {
  const i = argv.indexOf(name);
  return i >= 0 ? argv.splice(i, 2)[1] : fallback;
}
const nRows = Number(flag("--rows", "40"));
const K = Number(flag("--k", "10"));
const [bankDir, cachePath] = argv;
if (!bankDir || !cachePath) throw new Error("usage: npm run bench -- kivf-bounds <bank dir> <queries cache> [--rows 40] [--k 10]");
const manifest = JSON.parse(readFileSync(`${bankDir}/manifest.json`, "utf8")) as { header: { dim: number }; entries: { offset: number; nKeys: number }[] };
const dim = manifest.header.dim;
const file = readFileSync(`${bankDir}/keys.bin`);
const bank = new KeyBank(dim);
const skillKeys: Float32Array[] = [];
for (const e of manifest.entries) {
  const k = new Float32Array(file.buffer, file.byteOffset + e.offset * dim * 4, e.nKeys * dim).slice();
  skillKeys.push(k);
  bank.add(k);
}
const index = await KeyIvf.build(bank, {});
const x = index.exportCodes();
const C = x.centroids.length / dim, G = x.groupStart.length - 1;
const dot = (a: Float32Array, ai: number, b: Float32Array, bi: number): number => {
  let s = 0;
  for (let d = 0; d < dim; d++) s += a[ai * dim + d] * b[bi * dim + d];
  return s;
};
const dist = (a: Float32Array, ai: number, b: Float32Array, bi: number): number => {
  let s = 0;
  for (let d = 0; d < dim; d++) s += (a[ai * dim + d] - b[bi * dim + d]) ** 2;
  return Math.sqrt(s);
};
const pct = (v: Float64Array, p: number): string => Array.from(v).sort((a, b) => a - b)[Math.min(v.length - 1, Math.floor(v.length * p))].toFixed(3);
const groupRadius = new Float64Array(G);
for (let g = 0; g < G; g++) for (let c = x.groupStart[g]; c < x.groupStart[g + 1]; c++) groupRadius[g] = Math.max(groupRadius[g], dist(x.centroids, c, x.coarse, g));
const listRadius = new Float64Array(C);
for (let s = 0; s < skillKeys.length; s++) {
  for (let j = 0; j < skillKeys[s].length / dim; j++) {
    const c = x.codes[x.offsets[s] + j];
    listRadius[c] = Math.max(listRadius[c], dist(skillKeys[s], j, x.centroids, c));
  }
}
console.log(`key IVF bounds, real bank ${bankDir}: ${bank.size} skills, ${bank.keys} keys; ${C} centroids, ${G} groups; load ${loadavg()[0].toFixed(2)}, ${new Date().toISOString()}`);
if (G > 0) console.log(`  group radius (fine centroids to their coarse one): p10 ${pct(groupRadius, 0.1)}, p50 ${pct(groupRadius, 0.5)}, max ${pct(groupRadius, 1)}`);
console.log(`  list radius (keys to their centroid): p10 ${pct(listRadius, 0.1)}, p50 ${pct(listRadius, 0.5)}, p90 ${pct(listRadius, 0.9)}, max ${pct(listRadius, 1)}`);
const buf = readFileSync(cachePath);
const hlen = buf.readUInt32LE(0);
const all = new Float32Array(buf.buffer.slice(buf.byteOffset + 4 + hlen, buf.byteOffset + buf.length));
const total = all.length / dim;
const nps = [defaultNprobe(C) / 2, defaultNprobe(C)];
const groupsKept = nps.map(() => 0);
let listsPruned = 0;
for (let r = 0; r < nRows; r++) {
  const i = Math.floor((r * total) / nRows);
  const qn = Math.sqrt(dot(all, i, all, i));
  const fine = Array.from({ length: C }, (_, c) => dot(all, i, x.centroids, c));
  const sorted = [...fine].sort((a, b) => b - a);
  nps.forEach((np, n) => {
    for (let g = 0; g < G; g++) if (dot(all, i, x.coarse, g) + qn * groupRadius[g] >= sorted[np - 1]) groupsKept[n]++;
  });
  const best = skillKeys.map((keys) => {
    let m = -Infinity;
    for (let j = 0; j < keys.length / dim; j++) m = Math.max(m, dot(all, i, keys, j));
    return m;
  });
  const kth = best.filter((v) => v > -Infinity).sort((a, b) => b - a)[K - 1];
  for (let c = 0; c < C; c++) if (fine[c] + qn * listRadius[c] < kth) listsPruned++;
}
nps.forEach((np, n) => console.log(`  nprobe ${np}: groups the bound cannot skip, per row: ${(groupsKept[n] / nRows).toFixed(1)} of ${G}`));
console.log(`  lists an exact search could skip with the oracle k-th best (k ${K}), over ${nRows} rows: ${((100 * listsPruned) / (nRows * C)).toFixed(1)}%`);
bank.dispose();
