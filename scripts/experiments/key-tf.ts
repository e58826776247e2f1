// Experiment (not part of the package): skill-side term frequency in the glance's vote.
//
// At ℓ1 a key is mostly its token, and the ε-cover merges a skill's repeated tokens into one key, so
// the glance never learns how often a skill uses a word; BM25 (k1 3, b 1) leans on exactly that. Here
// each key j of skill s gets the count tf of its token (`keyTokens[j]`) in the skill's text (`full`:
// name, description and body; `cut`: their first 1,536 tokens, what the keys are read from) and a
// weight h(tf): BM25's saturation `tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen))` or `1 + λ·ln tf`.
// A variant either selects each row's top k by m (the shipped vote) and credits w_i·m·h, or selects
// and credits by m·h ("sel mh": the same as scaling each key by h, the max then taken over scaled
// keys only where the argmax is kept; the replay uses the exact glance's argmax key).
//
// Replayed from one exact glance per task (every (row, skill) m and its argmax key, `tokenScores`),
// with the route's own rows, idf weights and vote size k. `base` equals the route's glance (checked
// against its top 5 when the glance runs).
//
// Usage: npx vite-node scripts/experiments/key-tf.ts -- BANK TASKS.jsonl [--batches 1-5] [--limit N]
//          [--sample N] [--only REGEX] [--cache DIR] [--records OUT.jsonl]
//   BANK: installed with the embedded pair as `gavel install` does (the bank's texts are read);
//   --sample N visits N tasks in the stride order 97·i mod n (every batch sampled); --cache DIR keeps each task's m/argmax (nq × N × 8 bytes) for reruns; --records writes each
//   task's gold rank under every variant.
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { defaultModelPaths } from "../../src/defaults.js";
import { Model } from "../../src/model/Model.js";
import { Projections } from "../../src/projections/projections.js";
import { Library } from "../../src/bank/library.js";
import { RenderEncoder } from "../../src/render/encode.js";
import { encodeQueries } from "../../src/route/context.js";
import { glanceLibrary } from "../../src/route/glance.js";
import { type RouterParts, taskBudgets } from "../../src/route/parts.js";
import { loadTasks, selectTasks } from "../../lab/eval/tasks.js";
import { acceptedIds, libraryIndex } from "../../lab/eval/metrics.js";

const argv = process.argv.slice(2).filter((a) => a !== "--");
const opt = (n: string, d: string): string => { const i = argv.indexOf(n); return i >= 0 ? argv.splice(i, 2)[1] : d; };
const batches = opt("--batches", "1-5");
const limit = Number(opt("--limit", "Infinity"));
const sample = Number(opt("--sample", "Infinity"));
const only = opt("--only", "");
const cacheDir = opt("--cache", "");
const recordsPath = opt("--records", "");
const [bankDir, tasksPath] = argv;
if (!bankDir || !tasksPath) throw new Error("usage: key-tf.ts BANK TASKS.jsonl [--batches 1-5] [--limit N] [--only REGEX] [--cache DIR] [--records OUT.jsonl]");

const paths = defaultModelPaths();
const projections = await Projections.load(paths.projections);
const library = await Library.openSnapshot(bankDir, projections);
const model = await Model.load(paths.model, { contextSize: 2048 });
const encoder = new RenderEncoder(model, 512);
const parts = { model, projections, encoder, library, ...taskBudgets(2048, 512, encoder), keep: "end" } as unknown as RouterParts;
const manifest = JSON.parse(readFileSync(`${bankDir}/manifest.json`, "utf8")) as { entries: { id: string; name: string; description: string }[] };
// a gold counts through any bank entry of the same name and description, as lab/eval counts it
const inBank = libraryIndex(manifest.entries);

// Every skill's keys' token counts, flattened by skill (handle order).
const handles = library.routable();
const N = handles.length;
const posOf = new Map<number, number>();
handles.forEach((h, i) => posOf.set(h, i));
const off = new Int32Array(N + 1);
const tfFull: number[] = [], tfCut: number[] = [];
const lenFull = new Float64Array(N), lenCut = new Float64Array(N);
const t0 = Date.now();
const counted: { full: Map<number, number>; cut: Map<number, number>; len: number }[] = new Array(N);
for (let s0 = 0; s0 < N; s0 += 64) {
  // 64 skills' texts read and tokenized at once (the tokenizer runs off the JS thread)
  await Promise.all(Array.from({ length: Math.min(64, N - s0) }, async (_, d) => {
    const text = await library.text(library.entry(library.idOf(handles[s0 + d])));
    const toks = await model.tokenizeAsync(`${text.name}\n${text.description}\n${text.body}`);
    const full = new Map<number, number>(), cut = new Map<number, number>();
    toks.forEach((t, i) => { full.set(t, (full.get(t) ?? 0) + 1); if (i < 1536) cut.set(t, (cut.get(t) ?? 0) + 1); });
    counted[s0 + d] = { full, cut, len: toks.length };
  }));
}
for (let s = 0; s < N; s++) {
  const { full, cut, len } = counted[s];
  for (const t of library.entry(library.idOf(handles[s])).keyTokens) { tfFull.push(Math.max(1, full.get(t) ?? 1)); tfCut.push(Math.max(1, cut.get(t) ?? 1)); }
  off[s + 1] = tfFull.length;
  lenFull[s] = len;
  lenCut[s] = Math.min(1536, len);
}
const mean = (a: Float64Array) => a.reduce((x, y) => x + y, 0) / a.length;
console.log(`key-tf: ${bankDir}, ${N} skills, ${off[N]} keys; token counts in ${((Date.now() - t0) / 1000).toFixed(1)} s; mean length ${mean(lenFull).toFixed(0)} (full), ${mean(lenCut).toFixed(0)} (cut); ` +
  `${cpus().length} cores (${cpus()[0]?.model}), load ${loadavg().map((x) => x.toFixed(1)).join(" ")}, node ${process.version}, ${new Date().toISOString()}`);

interface Variant { name: string; h: Float32Array | null; selectByH: boolean }
const variants: Variant[] = [{ name: "base", h: null, selectByH: false }];
function add(name: string, selectByH: boolean, f: (s: number, j: number) => number): void {
  const h = new Float32Array(off[N]);
  for (let s = 0; s < N; s++) for (let j = off[s]; j < off[s + 1]; j++) h[j] = f(s, j);
  variants.push({ name, h, selectByH });
}
const want = only ? new RegExp(only) : null;
for (const src of ["full", "cut"] as const) {
  const tf = src === "full" ? tfFull : tfCut, len = src === "full" ? lenFull : lenCut, avg = mean(len);
  for (const k1 of [0.6, 1.2, 2, 3]) for (const b of [0.5, 0.75, 1]) for (const sel of [true, false]) {
    const name = `${src} bm25 k1 ${k1} b ${b} sel ${sel ? "mh" : "m"}`;
    if (!want || want.test(name)) add(name, sel, (s, j) => (tf[j] * (k1 + 1)) / (tf[j] + k1 * (1 - b + (b * len[s]) / avg)));
  }
  for (const lam of [0.1, 0.25, 0.5]) for (const sel of [true, false]) {
    const name = `${src} 1+${lam}ln(tf) sel ${sel ? "mh" : "m"}`;
    if (!want || want.test(name)) add(name, sel, (_s, j) => 1 + lam * Math.log(tf[j]));
  }
}
console.log(`${variants.length} variants: ${variants.map((v) => v.name).join("; ")}`);

const chosen = selectTasks(await loadTasks(tasksPath), { batches, limit });
// --sample N: N tasks visited in the stride order 97·i mod n, so that every batch is sampled
const tasks = Number.isFinite(sample) && chosen.length % 97 !== 0 ? chosen.map((_, i) => chosen[(i * 97) % chosen.length]).slice(0, sample) : chosen;
const hit1 = new Array(variants.length).fill(0), r20 = new Array(variants.length).fill(0), r50 = new Array(variants.length).fill(0);
let n = 0, rowsSeen = 0;
const t1 = Date.now();
for (const t of tasks) {
  const gold = acceptedIds(t.gold_skill_ids, inBank);
  if (gold.size === 0) continue;
  const cf = cacheDir ? `${cacheDir}/${t.id.replace(/[^a-zA-Z0-9_-]/g, "_")}.bin` : "";
  let m: Float32Array, am: Int32Array, w: Float32Array, cols: Int32Array, k: number, top5 = "";
  if (cf && existsSync(cf)) {
    const buf = readFileSync(cf);
    const hl = buf.readUInt32LE(0);
    const head = JSON.parse(buf.toString("utf8", 4, 4 + hl)) as { nq: number; C: number; k: number };
    let at = 4 + hl;
    const take = (bytes: number) => { const x = buf.buffer.slice(buf.byteOffset + at, buf.byteOffset + at + bytes); at += bytes; return x; };
    m = new Float32Array(take(head.nq * head.C * 4)); am = new Int32Array(take(head.nq * head.C * 4)); w = new Float32Array(take(head.nq * 4)); cols = new Int32Array(take(head.C * 4)); k = head.k;
  } else {
    const q = await encodeQueries(parts, t.text, false);
    const r = await glanceLibrary(parts, async () => q, undefined, undefined, true);
    m = r.res.m!; am = r.res.argmax!; w = q.weights; cols = r.res.handles; k = r.k;
    top5 = r.ranked.slice(0, 5).map((x) => x.skill).join();
    if (cf) {
      mkdirSync(cacheDir, { recursive: true });
      const head = Buffer.from(JSON.stringify({ nq: w.length, C: cols.length, k }));
      const len = Buffer.alloc(4);
      len.writeUInt32LE(head.length);
      writeFileSync(cf, Buffer.concat([len, head, ...[m, am, w, cols].map((x) => Buffer.from(x.buffer, x.byteOffset, x.byteLength))]));
    }
  }
  const C = cols.length, nq = w.length;
  const keyBase = Int32Array.from(cols, (h) => off[posOf.get(h)!]);
  const goldCol = new Set<number>();
  for (let c = 0; c < C; c++) if (gold.has(library.idOf(cols[c]))) goldCol.add(c);
  const gs = variants.map(() => new Float64Array(C));
  const pick = new Int32Array(k), sc = new Float64Array(C), tmp = new Float64Array(C);
  // each row's top k by sc (ties to the lower column, as the native vote), into pick; returns how many
  const selectTop = (): number => {
    if (k >= C) { for (let c = 0; c < C; c++) pick[c] = c; return C; }
    tmp.set(sc);
    const kth = nthLargest(tmp, k);
    let got = 0;
    for (let c = 0; c < C; c++) if (sc[c] > kth) pick[got++] = c;
    for (let c = 0; c < C && got < k; c++) if (sc[c] === kth) pick[got++] = c;
    return got;
  };
  const byM = new Int32Array(k);
  for (let i = 0; i < nq; i++) {
    const row = i * C;
    for (let c = 0; c < C; c++) sc[c] = m[row + c];
    const gotM = selectTop();
    byM.set(pick.subarray(0, gotM));
    rowsSeen++;
    variants.forEach((v, vi) => {
      const g = gs[vi], h = v.h;
      if (!h) { for (let j = 0; j < gotM; j++) g[byM[j]] += w[i] * m[row + byM[j]]; return; }
      const hOf = (c: number): number => { const j = am[row + c]; return j >= 0 ? h[keyBase[c] + j] : 1; };
      if (!v.selectByH) { for (let j = 0; j < gotM; j++) g[byM[j]] += w[i] * m[row + byM[j]] * hOf(byM[j]); return; }
      for (let c = 0; c < C; c++) { const j = am[row + c]; sc[c] = j >= 0 ? m[row + c] * h[keyBase[c] + j] : m[row + c]; }
      const got = selectTop();
      for (let j = 0; j < got; j++) g[pick[j]] += w[i] * sc[pick[j]];
    });
  }
  const ranks: number[] = [];
  variants.forEach((v, vi) => {
    const g = gs[vi];
    const order = Array.from({ length: C }, (_, c) => c).sort((a, b) => g[b] - g[a] || a - b);
    if (vi === 0 && top5) {
      const mine = order.slice(0, 5).map((c) => library.idOf(cols[c])).join();
      if (mine !== top5) console.log(`  ${t.id}: the base replay's top 5 differs from the route's glance: ${mine} / ${top5}`);
    }
    const r = order.findIndex((c) => goldCol.has(c));
    ranks.push(r);
    if (r === 0) hit1[vi]++;
    if (r >= 0 && r < 20) r20[vi]++;
    if (r >= 0 && r < 50) r50[vi]++;
  });
  if (recordsPath) appendFileSync(recordsPath, JSON.stringify({ id: t.id, batch: t.batch, rows: nq, k, ranks }) + "\n");
  n++;
  if (n % 20 === 0) console.log(`  ${n} tasks (${((Date.now() - t1) / n / 1000).toFixed(2)} s a task); base ${(hit1[0] / n).toFixed(3)} / ${(r20[0] / n).toFixed(3)}`);
}
console.log(`${N} skills, ${n} tasks (batches ${batches}); ${rowsSeen} task rows`);
console.log("Hit@1  R@20   R@50   variant");
variants.map((v, i) => ({ v, i })).sort((a, b) => r20[b.i] - r20[a.i] || hit1[b.i] - hit1[a.i])
  .forEach(({ v, i }) => console.log(`${(hit1[i] / n).toFixed(3)}  ${(r20[i] / n).toFixed(3)}  ${(r50[i] / n).toFixed(3)}  ${v.name}`));
await library.close();
await model.dispose();

/** The n-th largest value of a (1-based), reordering a (Hoare's quickselect). */
function nthLargest(a: Float64Array, nth: number): number {
  let lo = 0, hi = a.length - 1;
  const target = nth - 1;
  while (lo < hi) {
    const p = a[(lo + hi) >> 1];
    let i = lo, j = hi;
    while (i <= j) {
      while (a[i] > p) i++;
      while (a[j] < p) j--;
      if (i <= j) { const x = a[i]; a[i] = a[j]; a[j] = x; i++; j--; }
    }
    if (target <= j) hi = j;
    else if (target >= i) lo = i;
    else return a[target];
  }
  return a[target];
}
