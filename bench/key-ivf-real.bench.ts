/**
 * Feasibility of a per-row inverted file over token KEYS (issue 36 item 1) on a REAL bank: each task
 * row scores the key centroids, probes its `nprobe` best lists, takes the EXACT max-sim of every skill
 * over the keys it found there (a skill's score = the max over its found keys), keeps the row's top k
 * skills among them and votes as the exact glance does. Simulated exactly from the exact glance's
 * per-(row, skill) max-sim m and argmax (a skill whose best key lies in a probed list scores m; one
 * whose best key does not is scored here over its keys in the probed lists, in float32), so no scan
 * runs: the cost is reported as the share of key rows the probed lists hold.
 *
 *   npm run bench -- key-ivf-real <bank> <tasks.jsonl> <library.jsonl[,…]> --cache FILE
 *     [--batches 1-5] [--tasks 60] [--centroids 256,1024,4096] [--nprobe 1,2,4,8,16,32,64]
 *     [--adaptive 0.1,0.2,… --cap 1024]
 *
 * `--adaptive δ,…`: also a per-row stop, after p lists once the row's k-th found score (bounded below
 * by the skills whose best key it found) reaches the next list's centroid score + δ, p ≤ --cap.
 *
 * The tasks' projected rows come from glance-index-real's cache (same key: its --project-only run
 * fills it). Tasks without a gold in the bank are left out, the rest visited in the same stride order
 * (97 · i mod n), the first `--tasks` of it.
 *
 * Also the certificate: a row's k-th best score v_k is final once every list not probed is bounded
 * below it; with unit rows, keys and centroids, a key k in list c satisfies
 * ⟨q, k⟩ ≤ cos(max(∠(q, c) − α_c, 0)), α_c the widest angle of a key of c from c. The lists that must
 * be probed for an exact row are those whose bound reaches v_k (computed from the exact m): their keys
 * are the certificate's cost.
 */
import { readFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { KeyBank } from "../src/bank/key-bank.js";
import { glance, voteK } from "../src/kernels/kernels.js";
import { loadBinding } from "../src/native/binding.js";
import { acceptedIds, libraryIndex } from "../lab/eval/metrics.js";
import { loadTasks, selectTasks } from "../lab/eval/tasks.js";
import { loadLibrary } from "../lab/eval/io.js";
import { median } from "./data.js";

const argv = process.argv.slice(2);
function flag(name: string, fallback: string): string {
  const i = argv.indexOf(name);
  return i >= 0 ? argv.splice(i, 2)[1] : fallback;
}
const batches = flag("--batches", "1-5");
const cachePath = flag("--cache", "/tmp/glance-index-real-queries.bin");
const nTasks = Number(flag("--tasks", "60"));
const centroidCounts = flag("--centroids", "256,1024,4096").split(",").map(Number);
const nprobes = flag("--nprobe", "1,2,4,8,16,32,64").split(",").map(Number);
// adaptive probing: a row stops after p lists once its k-th found score (bounded below by the skills
// whose best key it found) reaches the next list's centroid score + δ, within 1 … --cap lists
const deltas = flag("--adaptive", "").split(",").filter((x) => x !== "").map(Number);
const adaptCap = Number(flag("--cap", "1024"));
const [bankDir, tasksPath, libraryList] = argv;
if (!bankDir || !tasksPath || !libraryList) {
  console.error("usage: npm run bench -- key-ivf-real <bank> <tasks.jsonl> <library.jsonl[,…]> --cache FILE [--tasks N] [--centroids …] [--nprobe …]");
  process.exit(2);
}
const TOP = 20;
const D = 256;

interface Binding {
  ivfKMeans: (x: Float32Array, dim: number, c: number, iters: number) => Promise<{ centroids: Float32Array; codes: Int32Array; scores: Float32Array }>;
  ivfSampleRows: (n: number, count: number, seed: number) => Int32Array;
}

/** Columns of the `n` best g (g descending, column ascending). */
function topCols(g: ArrayLike<number>, n: number): number[] {
  const cols: number[] = [];
  for (let s = 0; s < g.length; s++) cols.push(s);
  cols.sort((a, b) => g[b] - g[a] || a - b);
  return cols.slice(0, n);
}

/** For each row of x (nq × n): the columns by value descending, column ascending. */
function rowOrder(x: Float32Array, nq: number, n: number): Int32Array {
  const out = new Int32Array(nq * n);
  const key = new Float64Array(n);
  const f = new Float32Array(1);
  const u = new Uint32Array(f.buffer);
  for (let i = 0; i < nq; i++) {
    for (let s = 0; s < n; s++) {
      f[0] = x[i * n + s];
      // a float's bits made order-preserving as an unsigned integer, then descending, then the column
      const b = u[0] & 0x80000000 ? ~u[0] >>> 0 : (u[0] | 0x80000000) >>> 0;
      key[s] = (0xffffffff - b) * 32768 + s;
    }
    key.sort();
    for (let s = 0; s < n; s++) out[i * n + s] = key[s] % 32768;
  }
  return out;
}

async function main() {
  const bin = loadBinding() as unknown as Binding;
  const manifest = JSON.parse(readFileSync(`${bankDir}/manifest.json`, "utf8")) as { header: { dim: number; layer: number }; entries: { id: string; offset: number; nKeys: number }[] };
  if (manifest.header.dim !== D) throw new Error(`dim ${manifest.header.dim}, expected ${D}`);
  const entries = manifest.entries;
  const N = entries.length;
  const offsets = new Int32Array(N + 1);
  for (let s = 0; s < N; s++) offsets[s + 1] = offsets[s] + entries[s].nKeys;
  const K = offsets[N];
  const file = readFileSync(`${bankDir}/keys.bin`);
  const keys = new Float32Array(K * D);
  const bank = new KeyBank(D);
  for (let s = 0; s < N; s++) {
    const e = entries[s];
    const src = new Float32Array(file.buffer, file.byteOffset + e.offset * D * 4, e.nKeys * D);
    keys.set(src, offsets[s] * D);
    bank.add(keys.subarray(offsets[s] * D, offsets[s + 1] * D));
  }
  const skillOfKey = new Int32Array(K);
  for (let s = 0; s < N; s++) skillOfKey.fill(s, offsets[s], offsets[s + 1]);

  // the tasks, in glance-index-real's cache and order
  const tasks = selectTasks(await loadTasks(tasksPath), { batches });
  const lib = libraryIndex((await loadLibrary(libraryList.split(","))).skills);
  const accepted = tasks.map((t) => acceptedIds(t.gold_skill_ids, lib));
  const buf = readFileSync(cachePath);
  const hlen = buf.readUInt32LE(0);
  const head = JSON.parse(buf.toString("utf8", 4, 4 + hlen)) as { key: string; nq: number[] };
  const ids = (JSON.parse(head.key) as { ids: string[] }).ids;
  if (ids.join("\n") !== tasks.map((t) => t.id).join("\n")) throw new Error("the cache holds other tasks");
  const all = new Float32Array(buf.buffer.slice(buf.byteOffset + 4 + hlen, buf.byteOffset + buf.length));
  const starts: number[] = [];
  let at = 0;
  for (const nq of head.nq) { starts.push(at); at += nq * D; }
  const keep = tasks.map((_, i) => i).filter((i) => accepted[i].size > 0);
  const order = keep.map((_, j) => keep[(j * 97) % keep.length]).slice(0, nTasks);
  const k = voteK(N);
  console.log(`key IVF on a real bank: ${bankDir}, ${N} skills, ${K} keys, dim ${D}, ℓ${manifest.header.layer}, vote k ${k}; ${order.length} of ${keep.length} scorable tasks (batches ${batches}); ` +
    `${cpus().length} cores (${cpus()[0]?.model}), ${loadBinding().kernelIsa()}, load ${loadavg().map((x) => x.toFixed(1)).join(" ")}, node ${process.version}, ${new Date().toISOString()}`);

  // the key IVFs: spherical k-means (the glance index's training: sample 32 × C rows, 8 Lloyd steps), every key assigned
  interface Ivf { C: number; codes: Int32Array; size: Int32Array; alpha: Float64Array; trainS: number; angStart: Int32Array; ang: Float64Array }
  const ivfs: Ivf[] = [];
  for (const C of centroidCounts) {
    const t0 = performance.now();
    const sample = bin.ivfSampleRows(K, Math.min(K, 32 * C), 1);
    const x = new Float32Array(sample.length * D);
    sample.forEach((r, j) => x.set(keys.subarray(r * D, r * D + D), j * D));
    const { centroids } = await bin.ivfKMeans(x, D, C, 8);
    const withKeys = new Float32Array((C + K) * D);
    withKeys.set(centroids, 0);
    withKeys.set(keys, C * D);
    const assigned = await bin.ivfKMeans(withKeys, D, C, 0); // iters 0: the centroids are x's first C rows
    const codes = assigned.codes.slice(C);
    const size = new Int32Array(C);
    const minCos = new Float64Array(C).fill(1);
    for (let r = 0; r < K; r++) {
      size[codes[r]]++;
      minCos[codes[r]] = Math.min(minCos[codes[r]], assigned.scores[C + r]);
    }
    const alpha = Float64Array.from(minCos, (c) => Math.acos(Math.max(-1, Math.min(1, c))));
    // each key's angle from its centroid, per list ascending (the per-key bound's thresholds)
    const angStart = new Int32Array(C + 1);
    for (let c = 0; c < C; c++) angStart[c + 1] = angStart[c] + size[c];
    const ang = new Float64Array(K);
    const fill = angStart.slice(0, C);
    for (let r = 0; r < K; r++) ang[fill[codes[r]]++] = Math.acos(Math.max(-1, Math.min(1, assigned.scores[C + r])));
    for (let c = 0; c < C; c++) ang.subarray(angStart[c], angStart[c + 1]).sort();
    const cosAll = Float64Array.from(assigned.scores.subarray(C)).sort();
    console.log(`  C ${C}: a key's cosine to its centroid: median ${cosAll[K >> 1].toFixed(3)}, p10 ${cosAll[Math.floor(K * 0.1)].toFixed(3)}, p90 ${cosAll[Math.floor(K * 0.9)].toFixed(3)}`);
    const trainS = (performance.now() - t0) / 1e3;
    const sorted = [...size].sort((a, b) => b - a);
    const deg = (a: number) => (a * 180 / Math.PI).toFixed(0);
    const alphas = [...alpha].sort((a, b) => a - b);
    console.log(`  C ${C}: trained and assigned in ${trainS.toFixed(1)} s; list sizes median ${median(sorted)}, largest ${sorted[0]} (${(sorted[0] / K * 100).toFixed(2)}% of keys), ` +
      `10 largest ${(sorted.slice(0, 10).reduce((a, b) => a + b, 0) / K * 100).toFixed(1)}%; list radius α median ${deg(median(alphas))}°, min ${deg(alphas[0])}°, max ${deg(alphas[C - 1])}°`);
    ivfs.push({ C, codes, size, alpha, trainS, angStart, ang });
    (centroidsOf as Map<number, Float32Array>).set(C, centroids);
  }

  interface Cell { share: number[]; top1: number; hit1: number; r20: number; scanned: number[]; rowsExact: number[]; dots: number; lists: number; rows: number }
  const cells = new Map<string, Cell>();
  const cert = new Map<number, { scanned: number[]; lists: number[]; rowScanned: number[]; keyScanned: number[]; oracleScanned: number[]; oracleLists: number[] }>();
  const vks: number[] = [], tops: number[] = [];
  const exact = { hit1: 0, r20: 0, ms: [] as number[] };
  let checkDiff = -1;
  const t0 = performance.now();
  for (const [ti, idx] of order.entries()) {
    const nq = head.nq[idx];
    const q = all.subarray(starts[idx], starts[idx] + nq * D);
    const w = new Float32Array(nq).fill(1);
    const acc = accepted[idx];
    const t1 = performance.now();
    const res = await bank.glance(q, { weights: w, k });
    exact.ms.push(performance.now() - t1);
    const m = res.m, argmax = res.argmax;
    const want = topCols(res.g, TOP);
    const wantSet = new Set(want);
    exact.hit1 += acc.has(entries[want[0]].id) ? 1 : 0;
    exact.r20 += want.some((c) => acc.has(entries[c].id)) ? 1 : 0;
    const ord = rowOrder(m, nq, N);
    // the row's k-th best m (the certificate's threshold) and its exact top-k set
    const vk = new Float32Array(nq);
    for (let i = 0; i < nq; i++) vk[i] = m[i * N + ord[i * N + k - 1]];
    for (let i = 0; i < nq; i += 7) { vks.push(vk[i]); tops.push(m[i * N + ord[i * N]]); }
    for (const ivf of ivfs) {
      const C = ivf.C;
      const cents = centroidsOf.get(C)!;
      const offC = new Int32Array(C + 1);
      for (let c = 0; c <= C; c++) offC[c] = c;
      const S = (await glance(q, cents, offC, D, { k: 1 })).m; // nq × C: ⟨q_i, c⟩
      const cOrd = rowOrder(S, nq, C);
      const rank = new Int32Array(C);
      // certificate
      const ce = cert.get(C) ?? { scanned: [], lists: [], rowScanned: [], keyScanned: [], oracleScanned: [], oracleLists: [] };
      cert.set(C, ce);
      let certRows = 0, certLists = 0;
      for (let i = 0; i < nq; i++) {
        let lists = 0, rows = 0;
        for (let c = 0; c < C; c++) {
          const beta = Math.acos(Math.max(-1, Math.min(1, S[i * C + c])));
          const ub = beta > ivf.alpha[c] ? Math.cos(beta - ivf.alpha[c]) : 1;
          if (ub + 1e-5 >= vk[i]) { lists++; rows += ivf.size[c]; }
        }
        // per-key bound: a key at angle a from its centroid needs scoring only when β − a < acos(v_k)
        const theta = Math.acos(Math.max(-1, Math.min(1, vk[i] - 1e-5)));
        let need = 0;
        for (let c = 0; c < C; c++) {
          const beta = Math.acos(Math.max(-1, Math.min(1, S[i * C + c])));
          const lo = ivf.angStart[c], hi = ivf.angStart[c + 1];
          // keys with angle > beta − theta (ascending: the first such by bisection)
          let a = lo, b = hi;
          while (a < b) { const mid = (a + b) >> 1; if (ivf.ang[mid] > beta - theta) b = mid; else a = mid + 1; }
          need += hi - a;
        }
        ce.keyScanned.push(need / K);
        // the oracle: probing (in centroid order) just far enough to reach every true top-k skill's best key
        for (let r = 0; r < C; r++) rank[cOrd[i * C + r]] = r;
        let rmax = 0;
        for (let j = 0; j < k; j++) {
          const s = ord[i * N + j];
          const a = argmax[i * N + s];
          if (a >= 0) rmax = Math.max(rmax, rank[ivf.codes[offsets[s] + a]]);
        }
        let orows = 0;
        for (let r = 0; r <= rmax; r++) orows += ivf.size[cOrd[i * C + r]];
        ce.oracleScanned.push(orows / K);
        ce.oracleLists.push(rmax + 1);
        certRows += rows;
        certLists += lists;
        ce.rowScanned.push(rows / K);
      }
      ce.scanned.push(certRows / nq / K);
      ce.lists.push(certLists / nq);
      const variants: { key: string; pRow: Int32Array }[] = [];
      for (const p of nprobes) if (p <= C) variants.push({ key: `${C}/${p}`, pRow: new Int32Array(nq).fill(p) });
      if (deltas.length > 0) {
        const cap = Math.min(C, adaptCap);
        const pRows = deltas.map(() => new Int32Array(nq));
        const bucketStart = new Int32Array(cap + 1);
        const byRho = new Int32Array(N);
        const rho = new Int32Array(N);
        const held = new Int32Array(k);
        for (let i = 0; i < nq; i++) {
          for (let r = 0; r < C; r++) rank[cOrd[i * C + r]] = r;
          // rho[j]: the probe rank of the list holding the best key of the j-th skill by m
          bucketStart.fill(0);
          for (let j = 0; j < N; j++) {
            const s = ord[i * N + j];
            const a = argmax[i * N + s];
            rho[j] = a >= 0 ? rank[ivf.codes[offsets[s] + a]] : C;
            if (rho[j] < cap) bucketStart[rho[j] + 1]++;
          }
          for (let r = 0; r < cap; r++) bucketStart[r + 1] += bucketStart[r];
          const fillAt = bucketStart.slice(0, cap);
          for (let j = 0; j < N; j++) if (rho[j] < cap) byRho[fillAt[rho[j]]++] = j;
          for (const [di, d] of deltas.entries()) {
            // after p lists: the k smallest positions j with rho < p; L = m at the k-th of them
            let got = 0, p = 1;
            for (; ; p++) {
              for (let b = bucketStart[p - 1]; b < bucketStart[p]; b++) {
                const j = byRho[b];
                if (got === k && j >= held[k - 1]) continue;
                let jj = got < k ? got++ : k - 1;
                while (jj > 0 && held[jj - 1] > j) { held[jj] = held[jj - 1]; jj--; }
                held[jj] = j;
              }
              if (p >= cap) break;
              if (got === k && m[i * N + ord[i * N + held[k - 1]]] >= S[i * C + cOrd[i * C + p]] + d) break;
            }
            pRows[di][i] = p;
          }
        }
        deltas.forEach((d, di) => variants.push({ key: `${C}/a${d}`, pRow: pRows[di] }));
      }
      for (const { key, pRow } of variants) {
        const cell = cells.get(key) ?? { share: [], top1: 0, hit1: 0, r20: 0, scanned: [], rowsExact: [], dots: 0, lists: 0, rows: 0 };
        cells.set(key, cell);
        const g = new Float64Array(N);
        let W = 0, scanned = 0, exactRows = 0;
        const topS = new Int32Array(k), topV = new Float32Array(k);
        for (let i = 0; i < nq; i++) {
          W += w[i];
          const p = pRow[i];
          for (let r = 0; r < C; r++) rank[cOrd[i * C + r]] = r;
          for (let r = 0; r < p; r++) scanned += ivf.size[cOrd[i * C + r]];
          cell.lists += p;
          let got = 0;
          const qi = i * D;
          for (let j = 0; j < N; j++) {
            const s = ord[i * N + j];
            const ub = m[i * N + s];
            if (got === k && (ub < topV[k - 1] || (ub === topV[k - 1] && s > topS[k - 1]))) break;
            const a = argmax[i * N + s];
            let v: number;
            if (a >= 0 && rank[ivf.codes[offsets[s] + a]] < p) v = ub;
            else {
              v = -Infinity;
              for (let r = offsets[s]; r < offsets[s + 1]; r++) {
                if (rank[ivf.codes[r]] >= p) continue;
                let d = 0;
                const kr = r * D;
                for (let t = 0; t < D; t++) d = Math.fround(d + Math.fround(q[qi + t] * keys[kr + t]));
                cell.dots++;
                if (d > v) v = d;
              }
              if (v === -Infinity) continue;
              v = Math.fround(v);
            }
            if (got === k && (v < topV[k - 1] || (v === topV[k - 1] && s > topS[k - 1]))) continue;
            let jj = got < k ? got++ : k - 1;
            while (jj > 0 && (topV[jj - 1] < v || (topV[jj - 1] === v && topS[jj - 1] > s))) {
              topV[jj] = topV[jj - 1];
              topS[jj] = topS[jj - 1];
              jj--;
            }
            topV[jj] = v;
            topS[jj] = s;
          }
          let same = got === k;
          for (let j = 0; j < got; j++) {
            g[topS[j]] += w[i] * topV[j];
            if (topS[j] !== ord[i * N + j]) same = false;
          }
          if (same) exactRows++;
        }
        for (let s = 0; s < N; s++) g[s] = Math.fround(g[s] / W);
        if (pRow[0] === C && pRow.every((x) => x === C) && checkDiff < 0) {
          checkDiff = 0;
          for (let s = 0; s < N; s++) checkDiff = Math.max(checkDiff, Math.abs(g[s] - res.g[s]));
          console.log(`  check: nprobe = all reproduces the exact g to ${checkDiff.toExponential(2)}`);
        }
        const got = topCols(g, TOP);
        cell.share.push(got.filter((c) => wantSet.has(c)).length / TOP);
        cell.top1 += got[0] === want[0] ? 1 : 0;
        cell.hit1 += acc.has(entries[got[0]].id) ? 1 : 0;
        cell.r20 += got.some((c) => acc.has(entries[c].id)) ? 1 : 0;
        cell.scanned.push(scanned / nq / K);
        cell.rowsExact.push(exactRows / nq);
        cell.rows += nq;
      }
    }
    if ((ti + 1) % 10 === 0) console.log(`  … ${ti + 1}/${order.length} tasks, ${((performance.now() - t0) / 1e3).toFixed(0)} s, load ${loadavg()[0].toFixed(1)}`);
  }
  const n = order.length;
  const f = (x: number) => (x / n).toFixed(3);
  const mean = (a: number[]) => a.reduce((x, y) => x + y, 0) / a.length;
  console.log(`\n  exact glance: Hit@1 ${f(exact.hit1)}, R@20 ${f(exact.r20)}; ${median(exact.ms).toFixed(0)} ms median (m of every column); task rows median ${median(order.map((i) => head.nq[i]))}`);
  console.log("");
  console.log("| centroids | nprobe | top-20 agreement | worst task | same top-1 | Hit@1 | R@20 | rows whose top k is exact | key rows scanned (mean share) |");
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
  for (const ivf of ivfs) for (const p of [...nprobes, ...deltas.map((d) => `a${d}`)]) {
    const c = cells.get(`${ivf.C}/${p}`);
    if (!c) continue;
    const label = typeof p === "number" ? String(p) : `adaptive δ ${p.slice(1)} (≤ ${Math.min(ivf.C, adaptCap)}; mean ${(c.lists / c.rows).toFixed(1)} lists)`;
    console.log(`| ${ivf.C} | ${label} | ${mean(c.share).toFixed(3)} | ${Math.min(...c.share).toFixed(2)} | ${f(c.top1)} | ${f(c.hit1)} | ${f(c.r20)} | ${mean(c.rowsExact).toFixed(3)} | ${(mean(c.scanned) * 100).toFixed(2)}% |`);
  }
  console.log("");
  vks.sort((a, b) => a - b);
  tops.sort((a, b) => a - b);
  console.log(`  a row's best m: median ${tops[tops.length >> 1].toFixed(3)}; its k-th best m (v_k): median ${vks[vks.length >> 1].toFixed(3)}, p10 ${vks[Math.floor(vks.length * 0.1)].toFixed(3)}, p90 ${vks[Math.floor(vks.length * 0.9)].toFixed(3)}`);
  console.log("| centroids | certificate: lists to probe per row (mean) | key rows scanned (mean share) | per row: median / p90 / max share | per-key bound (v_k known): keys to score, mean share |");
  console.log("| --- | --- | --- | --- | --- |");
  for (const ivf of ivfs) {
    const ce = cert.get(ivf.C)!;
    const rs = [...ce.rowScanned].sort((a, b) => a - b);
    const q90 = rs[Math.floor(rs.length * 0.9)];
    console.log(`| ${ivf.C} | ${mean(ce.lists).toFixed(1)} of ${ivf.C} | ${(mean(ce.scanned) * 100).toFixed(1)}% | ${(median(rs) * 100).toFixed(1)}% / ${(q90 * 100).toFixed(1)}% / ${(rs[rs.length - 1] * 100).toFixed(1)}% | ${(mean(ce.keyScanned) * 100).toFixed(1)}% |`);
  }
  console.log("");
  console.log("| centroids | oracle stop: lists probed per row, median / p90 / max | key rows scanned, mean share | per row: median / p90 |");
  console.log("| --- | --- | --- | --- |");
  for (const ivf of ivfs) {
    const ce = cert.get(ivf.C)!;
    const ol = [...ce.oracleLists].sort((a, b) => a - b);
    const os = [...ce.oracleScanned].sort((a, b) => a - b);
    const p90 = (a: number[]) => a[Math.floor(a.length * 0.9)];
    console.log(`| ${ivf.C} | ${median(ol)} / ${p90(ol)} / ${ol[ol.length - 1]} | ${(mean(os) * 100).toFixed(1)}% | ${(median(os) * 100).toFixed(1)}% / ${(p90(os) * 100).toFixed(1)}% |`);
  }
  console.log(`\n  load at the end ${loadavg().map((x) => x.toFixed(1)).join(" ")}; ${((performance.now() - t0) / 1e3).toFixed(0)} s`);
  bank.dispose();
}

const centroidsOf = new Map<number, Float32Array>();

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
