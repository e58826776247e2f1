/**
 * The glance index against the exact glance on a REAL bank (an installed library, its projections)
 * and real task statements, over a grid of knobs: top-20 agreement with the exact glance (mean and
 * worst task), same top skill, Hit@1 and R@20 of both, survivors, and where the exact top 20 are lost
 * (stage 1, the centroid probe; stage 2, the maxCandidates cap; or the vote among the survivors).
 *
 *   npm run bench -- glance-index-real <bank> <tasks.jsonl> <library.jsonl[,…]> [--batches 1-5]
 *     [--limit N] [--cache FILE] [--time N] [--nprobe 8,16,…] [--max 128,…,0]
 *     [--budget-s S] [--project-only]
 *
 * `bank`: installed with the embedded default model and projections (gavel install … --context 2048
 * --skill-budget 512). `library`: the JSONL files installed there, read for the accepted ids (a gold,
 * and every entry identical to it in name and description, as lab/eval counts them). The tasks'
 * projected rows are computed once (context 2048, skill budget 512, as the install) and cached in
 * FILE (default /tmp/glance-index-real-queries.bin).
 *
 * Tasks without a gold in the bank are left out (as lab/eval), the rest visited in a fixed stride
 * order (97 · i mod n) so that a `--budget-s` stop still samples every batch.
 *
 * One exact glance per task (every (row, skill) max-sim m); each knob's pruned glance is the exact
 * glance over its survivors, so its vote is recomputed from m over the survivors (the same top-k per
 * row with k of the whole library, in the native vote's order), checked against glancePruned itself
 * on the timed tasks. `--time N`: the first N tasks are also timed, exact vs pruned (median ms;
 * default 3; the index's search is warm from the task's own searches before). `--budget-s S`: no
 * task starts after S seconds of the grid (the figures are then over the tasks done, and say so);
 * `--project-only`: fill the cache and stop.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { defaultModelPaths } from "../src/defaults.js";
import { Model } from "../src/model/Model.js";
import { Projections } from "../src/projections/projections.js";
import { Library } from "../src/bank/library.js";
import { RenderEncoder } from "../src/render/encode.js";
import { encodeQueries } from "../src/route/context.js";
import { type RouterParts, taskBudgets } from "../src/route/parts.js";
import { DEFAULT_NPROBE, defaultMaxCandidates, GlanceIndex, glancePruned, type GlanceIndexKnob } from "../src/bank/glance-index.js";
import { voteK } from "../src/kernels/kernels.js";
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
const limit = Number(flag("--limit", "Infinity"));
const cachePath = flag("--cache", "/tmp/glance-index-real-queries.bin");
const timed = Number(flag("--time", "3"));
const nprobes: (number | "all")[] = flag("--nprobe", "8,16,32,64,all").split(",").map((x) => (x === "all" ? "all" : Number(x)));
const budgetS = Number(flag("--budget-s", "Infinity"));
const projectOnly = argv.includes("--project-only") && argv.splice(argv.indexOf("--project-only"), 1).length > 0;
const caps = flag("--max", "128,256,512,1024,2048,0").split(",").map(Number);
const [bankDir, tasksPath, libraryList] = argv;
if (!bankDir || !tasksPath || !libraryList) {
  console.error("usage: npm run bench -- glance-index-real <bank> <tasks.jsonl> <library.jsonl[,…]> [--batches 1-5] [--limit N] [--cache FILE] [--time N]");
  process.exit(2);
}
const TOP = 20;
const CONTEXT = 2048, SKILL_BUDGET = 512;

interface TaskRows { id: string; queries: Float32Array; weights: Float32Array }

/** The tasks' projected rows, from the cache when it holds these tasks for these projections. */
async function taskRows(projections: Projections, projPath: string, tasks: { id: string; text: string }[]): Promise<TaskRows[]> {
  const key = JSON.stringify({ projPath, layer: projections.layer, dim: projections.dim, CONTEXT, SKILL_BUDGET, ids: tasks.map((t) => t.id) });
  if (existsSync(cachePath)) {
    const buf = readFileSync(cachePath);
    const hlen = buf.readUInt32LE(0);
    const head = JSON.parse(buf.toString("utf8", 4, 4 + hlen)) as { key: string; nq: number[] };
    if (head.key === key) {
      const all = new Float32Array(buf.buffer.slice(buf.byteOffset + 4 + hlen, buf.byteOffset + buf.length));
      let at = 0;
      return tasks.map((t, i) => {
        const n = head.nq[i] * projections.dim;
        const queries = all.slice(at, at + n);
        at += n;
        return { id: t.id, queries, weights: new Float32Array(head.nq[i]).fill(1) };
      });
    }
  }
  const { model: modelPath } = defaultModelPaths();
  const model = await Model.load(modelPath, { contextSize: CONTEXT, threads: 2 });
  const encoder = new RenderEncoder(model, SKILL_BUDGET);
  const parts = { model, projections, encoder, library: undefined as unknown as Library, ...taskBudgets(CONTEXT, SKILL_BUDGET, encoder), keyBudget: SKILL_BUDGET, keep: "end" } as RouterParts;
  const out: TaskRows[] = [];
  const t0 = performance.now();
  for (const t of tasks) {
    const q = await encodeQueries(parts, t.text, false);
    out.push({ id: t.id, queries: q.queries, weights: q.weights });
  }
  await model.dispose();
  console.log(`  projected ${tasks.length} tasks in ${((performance.now() - t0) / 1e3).toFixed(1)} s (cached in ${cachePath})`);
  const head = Buffer.from(JSON.stringify({ key, nq: out.map((r) => r.weights.length) }));
  const len = Buffer.alloc(4);
  len.writeUInt32LE(head.length);
  writeFileSync(cachePath, Buffer.concat([len, head, ...out.map((r) => Buffer.from(r.queries.buffer, r.queries.byteOffset, r.queries.byteLength))]));
  return out;
}

/** The L best columns of each row of m (nq × N), by m descending then column ascending (TopK's order). */
function rowLeaders(m: Float32Array, nq: number, N: number, L: number): Int32Array {
  const lead = new Int32Array(nq * L).fill(-1);
  const vals = new Float32Array(L);
  for (let i = 0; i < nq; i++) {
    const row = i * N, base = i * L;
    let n = 0;
    for (let s = 0; s < N; s++) {
      const v = m[row + s];
      if (n === L && v <= vals[L - 1]) continue; // a tie keeps the lower column already held
      let j = n < L ? n++ : L - 1;
      while (j > 0 && vals[j - 1] < v) {
        vals[j] = vals[j - 1];
        lead[base + j] = lead[base + j - 1];
        j--;
      }
      vals[j] = v;
      lead[base + j] = s;
    }
  }
  return lead;
}

/**
 * The vote of the exact glance over the columns `alive` marks (k per row among them), from the whole
 * bank's m: g per column (0 for columns not alive), as the native Vote computes it.
 */
function voteOver(m: Float32Array, lead: Int32Array, L: number, nq: number, N: number, w: Float32Array, k: number, alive: Uint8Array, aliveCols: Int32Array): Float64Array {
  const acc = new Float64Array(N);
  let W = 0;
  for (let i = 0; i < nq; i++) W += w[i];
  const pick = new Int32Array(k);
  const pv = new Float32Array(k);
  for (let i = 0; i < nq; i++) {
    if (w[i] === 0) continue;
    const row = i * N;
    let got = 0;
    for (let j = 0; j < L && got < k; j++) {
      const s = lead[i * L + j];
      if (s >= 0 && alive[s]) pick[got++] = s;
    }
    if (got < k && got < aliveCols.length) {
      // fewer than k alive among the row's leaders: the row's top k over the alive columns
      got = 0;
      for (const s of aliveCols) {
        const v = m[row + s];
        if (got === k && v <= pv[k - 1]) continue;
        let j = got < k ? got++ : k - 1;
        while (j > 0 && pv[j - 1] < v) {
          pv[j] = pv[j - 1];
          pick[j] = pick[j - 1];
          j--;
        }
        pv[j] = v;
        pick[j] = s;
      }
    }
    for (let j = 0; j < got; j++) acc[pick[j]] += w[i] * m[row + pick[j]];
  }
  for (let s = 0; s < N; s++) acc[s] = Math.fround(acc[s] / W);
  return acc;
}

/** Columns of the `n` best g (g descending, column ascending), only among alive ones. */
function topCols(g: ArrayLike<number>, n: number, alive?: Uint8Array): number[] {
  const cols: number[] = [];
  for (let s = 0; s < g.length; s++) if (!alive || alive[s]) cols.push(s);
  cols.sort((a, b) => g[b] - g[a] || a - b);
  return cols.slice(0, n);
}

interface Cell { knob: Required<GlanceIndexKnob>; share: number[]; searchMs: number[]; survivorCodes: number[]; top1: number; hit1: number; r20: number; survivors: number[]; stage1: number[]; lost1: number; lost2: number; lost3: number; ms: number[] }

async function main() {
  const { projections: projPath } = defaultModelPaths();
  const projections = await Projections.load(projPath);
  const library = await Library.openSnapshot(bankDir, projections);
  const bank = library.keys;
  const N = bank.size;
  const handles = bank.handles();
  const colOf = new Map<number, number>();
  handles.forEach((h, c) => colOf.set(h, c));
  const tasks = selectTasks(await loadTasks(tasksPath), { batches, limit });
  const lib = libraryIndex((await loadLibrary(libraryList.split(","))).skills);
  const accepted = tasks.map((t) => acceptedIds(t.gold_skill_ids, lib));
  console.log(`glance index on a real bank: ${bankDir}, ${N} skills, ${bank.keys} keys, dim ${bank.dim}, ℓ${projections.layer}; ${tasks.length} tasks (batches ${batches}); ` +
    `${cpus().length} cores (${cpus()[0]?.model}), ${loadBinding().kernelIsa()}, load ${loadavg().map((x) => x.toFixed(1)).join(" ")}, node ${process.version}, ${new Date().toISOString()}`);
  const all = await taskRows(projections, projPath, tasks);
  if (projectOnly) return;
  // as lab/eval: a task with no gold in the bank cannot be scored and is left out
  // visited in a fixed stride order (97 · i mod n), so that a budget stop still samples every batch
  const keep = all.map((_, i) => i).filter((i) => accepted[i].size > 0);
  const order = keep.map((_, j) => keep[(j * 97) % keep.length]);
  if (new Set(order).size !== order.length) order.splice(0, order.length, ...keep);
  const rows = order.map((i) => all[i]);
  const acceptedOf = order.map((i) => accepted[i]);
  console.log(`  ${rows.length} of ${all.length} tasks have a gold in the bank`);
  const nqs = rows.map((r) => r.weights.length);
  console.log(`  task rows: median ${median(nqs)}, min ${Math.min(...nqs)}, max ${Math.max(...nqs)}`);

  let t0 = performance.now();
  const index = await GlanceIndex.build(bank);
  const st = index.stats();
  console.log(`  index: ${st.centroids} centroids over ${st.rows} key rows, trained in ${((performance.now() - t0) / 1e3).toFixed(1)} s, ${(st.bytes / 2 ** 20).toFixed(1)} MiB ` +
    `(${(st.bytes / bank.bytes).toFixed(3)}× the ${(bank.bytes / 2 ** 20).toFixed(0)} MiB bank), mean key-centroid sim ${st.trainMeanSim.toFixed(3)}`);
  // how the skills spread over the centroids: distinct codes a skill holds, skills a centroid lists
  const ex = index.exportCodes();
  const perSkill: number[] = [];
  const codesOf = new Map<number, number>();
  const listLen = new Int32Array(st.centroids);
  for (let i = 0; i < ex.handles.length; i++) {
    perSkill.push(ex.offsets[i + 1] - ex.offsets[i]);
    codesOf.set(ex.handles[i], ex.offsets[i + 1] - ex.offsets[i]);
    for (let j = ex.offsets[i]; j < ex.offsets[i + 1]; j++) listLen[ex.codes[j]]++;
  }
  const lens = [...listLen].sort((a, b) => b - a);
  console.log(`  spread: a skill holds median ${median(perSkill)} distinct centroids (${(median(perSkill) / st.centroids * 100).toFixed(1)}% of them); a centroid lists median ${median(lens)} skills ` +
    `(${(median(lens) / N * 100).toFixed(1)}% of the library), the 10 largest ${(lens.slice(0, 10).reduce((a, b) => a + b, 0) / 10 / N * 100).toFixed(0)}% on average`);

  const k = voteK(N);
  const knobs: Required<GlanceIndexKnob>[] = [];
  for (const nprobe of nprobes) for (const maxCandidates of caps) knobs.push({ nprobe, maxCandidates });
  const defaultKnob: Required<GlanceIndexKnob> = { nprobe: DEFAULT_NPROBE, maxCandidates: defaultMaxCandidates(N) };
  if (!knobs.some((kn) => kn.nprobe === defaultKnob.nprobe && kn.maxCandidates === defaultKnob.maxCandidates)) knobs.push(defaultKnob);
  const cells: Cell[] = knobs.map((knob) => ({ knob, share: [], searchMs: [], survivorCodes: [], top1: 0, hit1: 0, r20: 0, survivors: [], stage1: [], lost1: 0, lost2: 0, lost3: 0, ms: [] }));
  const exact = { hit1: 0, r20: 0, ms: [] as number[], ms0: [] as number[], probed: new Map<string, number[]>() };
  const L = 64;
  let checked = 0, mismatched = 0;
  t0 = performance.now();
  let n = 0;
  for (const [ti, task] of rows.entries()) {
    if ((performance.now() - t0) / 1e3 > budgetS) {
      console.log(`  stopped after ${ti} of ${rows.length} tasks: --budget-s ${budgetS} spent (the figures below are over those ${ti})`);
      break;
    }
    n++;
    const nq = task.weights.length;
    const acc = acceptedOf[ti];
    const t1 = performance.now();
    const res = await bank.glance(task.queries, { weights: task.weights, k });
    exact.ms.push(performance.now() - t1);
    const m = res.m;
    if (ti < timed) {
      const t2 = performance.now();
      await bank.glance(task.queries, { weights: task.weights, k, detail: 0 }); // as a route runs it
      exact.ms0.push(performance.now() - t2);
    }
    const want = topCols(res.g, TOP);
    const idOfCol = (c: number) => library.idOf(handles[c]);
    exact.hit1 += acc.has(idOfCol(want[0])) ? 1 : 0;
    exact.r20 += want.some((c) => acc.has(idOfCol(c))) ? 1 : 0;
    const lead = rowLeaders(m, nq, N, L);
    const stage1Of = new Map<string, Uint8Array>();
    for (const np of nprobes) {
      const s1 = await index.candidates(bank, task.queries, { weights: task.weights, nprobe: np, maxCandidates: 0 });
      const set = new Uint8Array(N);
      for (const h of s1.handles) set[colOf.get(h)!] = 1;
      stage1Of.set(String(np), set);
      const pr = exact.probed.get(String(np)) ?? [];
      pr.push(s1.probed);
      exact.probed.set(String(np), pr);
    }
    for (const cell of cells) {
      const search = await index.candidates(bank, task.queries, { weights: task.weights, ...cell.knob });
      const alive = new Uint8Array(N);
      const aliveCols = Int32Array.from(search.handles, (h) => colOf.get(h)!);
      for (const c of aliveCols) alive[c] = 1;
      const g = voteOver(m, lead, L, nq, N, task.weights, k, alive, aliveCols);
      const got = topCols(g, TOP, alive);
      const gotSet = new Set(got);
      cell.share.push(want.filter((c) => gotSet.has(c)).length / TOP);
      cell.top1 += got[0] === want[0] ? 1 : 0;
      cell.hit1 += got.length > 0 && acc.has(idOfCol(got[0])) ? 1 : 0;
      cell.r20 += got.some((c) => acc.has(idOfCol(c))) ? 1 : 0;
      cell.survivors.push(search.survivors);
      cell.stage1.push(search.stage1);
      cell.searchMs.push(search.probeMs + search.stage1Ms + search.stage2Ms);
      if (search.survivors < N) cell.survivorCodes.push(median([...search.handles].map((h) => codesOf.get(h) ?? 0)));
      const s1 = stage1Of.get(String(cell.knob.nprobe))!;
      for (const c of want) {
        if (gotSet.has(c)) continue;
        if (!s1[c]) cell.lost1++;
        else if (!alive[c]) cell.lost2++;
        else cell.lost3++;
      }
      if (ti < timed) {
        // the real pruned glance: timed, and its top 20 checked against the recomputed vote
        const t2 = performance.now();
        const real = await glancePruned(bank, index, task.queries, { weights: task.weights, ...cell.knob, detail: 0 });
        cell.ms.push(performance.now() - t2);
        const realTop = topCols(real.g, TOP).map((c) => colOf.get(real.handles[c])!);
        checked++;
        if (realTop.join() !== got.join()) mismatched++;
      }
    }
    if ((ti + 1) % 25 === 0) console.log(`  … ${ti + 1}/${rows.length} tasks, ${((performance.now() - t0) / 1e3).toFixed(0)} s, load ${loadavg()[0].toFixed(1)}`);
  }
  const f = (x: number) => (x / n).toFixed(3);
  console.log(`  vote recomputed from m vs glancePruned on the ${Math.min(timed, n)} timed tasks: ${checked - mismatched}/${checked} top-20 lists identical`);
  console.log(`  stage 1 probes (distinct centroids a task's rows reach, median): ` + nprobes.map((np) => `nprobe ${np}: ${median(exact.probed.get(String(np))!)}`).join(", "));
  console.log(`  exact glance: Hit@1 ${f(exact.hit1)}, R@20 ${f(exact.r20)}; ${median(exact.ms0).toFixed(1)} ms median over the ${exact.ms0.length} timed tasks as a route runs it (detail 0), ` +
    `${median(exact.ms).toFixed(1)} ms over all ${n} with m of every column; load ${loadavg()[0].toFixed(1)}`);
  console.log(`  survivors' distinct centroids (median of the per-task medians, capped knobs): ` +
    cells.filter((c) => c.survivorCodes.length).map((c) => `${String(c.knob.nprobe)}/${c.knob.maxCandidates}: ${median(c.survivorCodes)}`).join(", ") + ` (library: ${median(perSkill)})`);
  console.log("");
  console.log("| nprobe | maxCandidates | top-20 agreement | worst task | same top-1 | Hit@1 | R@20 | stage 1 (median) | survivors (median) | exact top 20 lost at stage 1 / stage 2 / vote | search ms | pruned ms (exact ms) |");
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
  for (const c of cells) {
    const mean = c.share.reduce((a, b) => a + b, 0) / n;
    const isDefault = c.knob.nprobe === defaultKnob.nprobe && c.knob.maxCandidates === defaultKnob.maxCandidates;
    const lost = [c.lost1, c.lost2, c.lost3].map((x) => (x / (n * TOP)).toFixed(3)).join(" / ");
    const ms = c.ms.length ? `${median(c.ms).toFixed(1)} (${median(exact.ms0).toFixed(1)})` : "";
    console.log(`| ${String(c.knob.nprobe)} | ${c.knob.maxCandidates === 0 ? "0 (no cap)" : c.knob.maxCandidates}${isDefault ? " (default)" : ""} | ${mean.toFixed(3)} | ${Math.min(...c.share).toFixed(2)} | ${f(c.top1)} | ${f(c.hit1)} | ${f(c.r20)} | ${median(c.stage1)} | ${median(c.survivors)} | ${lost} | ${median(c.searchMs).toFixed(1)} | ${ms} |`);
  }
  console.log(`\n  (lost: share of the exact top-20 entries, over all tasks; exact Hit@1 ${f(exact.hit1)}, R@20 ${f(exact.r20)}; load at the end ${loadavg().map((x) => x.toFixed(1)).join(" ")})`);
  await library.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
