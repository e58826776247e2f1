/**
 * The key IVF glance (src/bank/key-ivf.ts, native/src/kivf) against the exact glance, in the same
 * run: glance ms (medians), top-20 agreement and same top-1, share of (row, key) pairs scored, index
 * memory against the bank's, training time, and the incremental cost of one skill installed.
 *
 *   npm run bench -- kivf synth [--skills 10000,100000] [--keys 200,30] [--nq 200,20] [--tasks 5] [--prune off,on] [--i8 off,on]
 *     [--nprobe d,64,512] [--pgroups d,flat,12] [--centroids 0] [--reps 3] [--keytype f32|f16] [--noise-pool 0] [--k 0]
 *   npm run bench -- kivf real <bank dir> <queries cache> [--tasks 20] [--nprobe …] [--pgroups …] [--centroids 8192]
 *
 * `--keys` pairs with `--skills` (one value: every size). `d` in --nprobe is the default (centroids
 * / 16); `all` probes every list (the exact glance through the index: checked equal bit for bit).
 * `--pgroups` (two-level indexes): the coarse groups a row scores the fine centroids of to pick its
 * lists (`flat`: every centroid scored, the default); each nprobe runs with each. `--prune off,on`:
 * each setting also with the list bound (flat probe only; `all` with it is still checked bit for bit).
 * `--i8 off,on`: each setting also with the int8 list codes (flat probe; the first such glance codes
 * every key, reported apart).
 * `--leave-out N`: the bank's first N skills take no part in any glance (as skills with
 * disable-model-invocation in a route): the exact glance over the others (KeyBank.glance's `handles`)
 * against the key IVF's over them (KeyIvf.glance's `handles`).
 * `--k K`: every glance (exact and IVF) votes over each row's K best skills instead of the paper's
 * voteK (the route's vote share gives K = round(0.01·N), at most 1,024: 306 at 30.6K skills, 1,000 at 100K).
 *
 * Synthetic banks (dim 256, float32 keys by default, as a KeyBank's): a vocabulary of V = 8,192 token directions; N/50 topics, each
 * favouring 64 of the tokens; a skill's keys are tokens (70% from its topic's, 30% from anywhere)
 * plus noise (cos ≈ 0.9 to the token), as shallow-layer keys sit near their token's identity
 * (`--noise-pool P`: a key's noise is one of P vectors drawn once, for a faster fill at 1M skills). A task:
 * 60% of its rows near the tokens of one target skill's keys, 40% near random tokens; uniform weights.
 *
 * The real bank: a bank folder (manifest.json + keys.bin, float32, dim 256) and the task rows
 * cached by glance-index-real (a JSON header of per-task row counts, then the rows); the tasks are
 * visited in stride order (97 · i mod n), uniform weights.
 */
import { closeSync, openSync, readFileSync, readSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { KeyBank } from "../src/bank/key-bank.js";
import { KeyIvf, defaultNprobe } from "../src/bank/key-ivf.js";
import { loadBinding } from "../src/native/binding.js";
import { median } from "./data.js";
import { TopicKeys, around, pick, uniform } from "./topic-keys.js";

const argv = process.argv.slice(2);
function flag(name: string, fallback: string): string {
  const i = argv.indexOf(name);
  return i >= 0 ? argv.splice(i, 2)[1] : fallback;
}
const mode = argv.shift() ?? "synth";
const nprobeArg = flag("--nprobe", "d,64,512").split(",");
const pgroupsArg = flag("--pgroups", "flat").split(",");
const pruneArg = flag("--prune", "off").split(",");
const i8Arg = flag("--i8", "off").split(",");
const centroidsArg = Number(flag("--centroids", "0"));
const reps = Number(flag("--reps", "3"));
const keyType = flag("--keytype", "f32") as "f32" | "f16";
const noisePool = Number(flag("--noise-pool", "0"));
// the vote's k (0: voteK of the bank's skills, the paper's); the route votes max(k, round(0.01·N)), at most 1,024
const voteKArg = Number(flag("--k", "0"));
const leaveOut = Number(flag("--leave-out", "0"));
const dim = 256;

function topCols(g: Float32Array, n: number): number[] {
  return Array.from(g.keys())
    .sort((a, b) => g[b] - g[a] || a - b)
    .slice(0, n);
}

function header(what: string): void {
  console.log(
    `${what}; ${cpus().length} cores (${cpus()[0]?.model}), ${loadBinding().kernelIsa()}, load ${loadavg().map((x) => x.toFixed(2)).join(" ")}, node ${process.version}, ${new Date().toISOString()}`,
  );
}

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; out: T }> {
  const t0 = performance.now();
  const out = await fn();
  return { ms: performance.now() - t0, out };
}

interface Task {
  queries: Float32Array;
}

/**
 * Exact vs IVF over `tasks`: per setting, median ms, agreement, same top-1, share scored. Interleaved:
 * each task runs the exact glance, then every setting, before the next task, so a change of the
 * machine's load falls on all of them alike; the ratio is the median of the per-task ratios.
 */
async function compare(bank: KeyBank, index: KeyIvf, tasks: Task[]): Promise<void> {
  const C = index.stats().centroids;
  const nprobes = nprobeArg.map((x) => (x === "d" ? defaultNprobe(C) : x === "all" ? ("all" as const) : Number(x)));
  const pgroups = pgroupsArg.map((x) => (x === "flat" ? undefined : Number(x)));
  type Setting = { np: number | "all"; pg: number | undefined; prune: boolean; i8: boolean };
  const settings = nprobes.flatMap((np): Setting[] =>
    pruneArg.flatMap((p): Setting[] =>
      i8Arg.flatMap((c): Setting[] => {
        const prune = p === "on", i8 = c === "on";
        if (np === "all" || prune || i8) return [{ np, pg: undefined, prune, i8 }];
        return pgroups.map((pg) => ({ np, pg, prune, i8 }));
      }),
    ),
  );
  const exactMs: number[] = [];
  const acc = settings.map(() => ({
    ms: [] as number[], ratio: [] as number[], centroid: [] as number[], probe: [] as number[], scan: [] as number[], vote: [] as number[],
    agree: 0, top1: 0, share: 0, coded: 0, codeMs: 0, same: true, groups: 0,
  }));
  const loads: number[] = [];
  const only = leaveOut > 0 ? { handles: bank.handles().slice(leaveOut) } : {};
  for (let i = 0; i < tasks.length; i++) {
    const t = tasks[i];
    const runs: number[] = [];
    let exactG!: Float32Array;
    for (let r = 0; r < reps; r++) {
      const { ms, out } = await timed(() => bank.glance(t.queries, { ...only, ...(voteKArg > 0 ? { k: voteKArg } : {}) }));
      runs.push(ms);
      exactG = out.g;
    }
    const em = median(runs);
    exactMs.push(em);
    for (let si = 0; si < settings.length; si++) {
      const { np, pg, prune, i8 } = settings[si], a = acc[si];
      const sr: number[] = [];
      let res!: Awaited<ReturnType<KeyIvf["glance"]>>;
      for (let r = 0; r < reps; r++) {
        const x = await timed(() => index.glance(bank, t.queries, { nprobe: np, probeGroups: pg, prune, i8, ...only, ...(voteKArg > 0 ? { k: voteKArg } : {}) }));
        sr.push(x.ms);
        res = x.out;
        a.codeMs = Math.max(a.codeMs, res.codeMs);
      }
      const m = median(sr);
      a.ms.push(m);
      a.ratio.push(em / m);
      a.groups = res.probeGroups;
      a.centroid.push(res.centroidMs);
      a.probe.push(res.probeMs);
      a.scan.push(res.scanMs);
      a.vote.push(res.voteMs);
      const top = topCols(exactG, 20), mine = new Set(topCols(res.g, 20));
      a.agree += top.filter((s) => mine.has(s)).length / top.length;
      a.top1 += top[0] === topCols(res.g, 1)[0] ? 1 : 0;
      a.share += res.scored / ((t.queries.length / dim) * res.bankRows);
      a.coded += res.coded / ((t.queries.length / dim) * res.bankRows);
      if (np === "all") a.same &&= res.g.every((v, s) => Object.is(v, exactG[s]));
    }
    loads.push(loadavg()[0]);
  }
  const n = tasks.length;
  console.log(`  exact glance: median ${median(exactMs).toFixed(1)} ms over ${n} tasks (per task: median of ${reps}); load over the run ${Math.min(...loads).toFixed(2)}-${Math.max(...loads).toFixed(2)}`);
  settings.forEach(({ np, prune, i8 }, si) => {
    const a = acc[si], parts: string[] = [];
    const m = median(a.ms);
    const probe = (np === "all" ? "" : a.groups > 0 ? `, probe groups ${a.groups}` : ", flat probe") + (prune ? ", list bound" : "") + (i8 ? ", int8 codes" : "");
    parts.push(`nprobe ${np}${probe}: median ${m.toFixed(1)} ms (${median(a.ratio).toFixed(1)}× faster than exact, per-task median)`);
    parts.push(`centroids ${median(a.centroid).toFixed(1)} ms + probe ${median(a.probe).toFixed(1)} ms, scan ${median(a.scan).toFixed(1)} ms, vote ${median(a.vote).toFixed(1)} ms`);
    parts.push(`top-20 agreement ${(a.agree / n).toFixed(3)}, same top-1 ${a.top1}/${n}, pairs scored ${((100 * a.share) / n).toFixed(2)}%`);
    if (i8) parts.push(`pairs coded ${((100 * a.coded) / n).toFixed(2)}%, coding every key (first glance) ${a.codeMs.toFixed(0)} ms`);
    if (np === "all") parts.push(a.same ? "g equal to the exact glance's bit for bit" : "g DIFFERS from the exact glance's");
    console.log(`  ${parts.join("; ")}`);
  });
}

/** One skill's install with and without the index following it (median ms over 9). */
async function installCost(bank: KeyBank, index: KeyIvf, keysPer: number): Promise<void> {
  const keys = new Float32Array(keysPer * dim);
  const plain: number[] = [], synced: number[] = [];
  for (let r = 0; r < 9; r++) {
    for (let j = 0; j < keysPer; j++) around(null, 0, 1, keys, j * dim, dim);
    let t0 = performance.now();
    const h = bank.add(keys);
    plain.push(performance.now() - t0);
    bank.remove(h);
    t0 = performance.now();
    bank.add(keys);
    await index.sync(bank);
    synced.push(performance.now() - t0);
  }
  console.log(`  install of one ${keysPer}-key skill: bank.add ${median(plain).toFixed(2)} ms; bank.add + index sync ${median(synced).toFixed(2)} ms (median of 9)`);
}

async function synth(): Promise<void> {
  const sizes = flag("--skills", "10000,100000").split(",").map(Number);
  const keysList = flag("--keys", "200,30").split(",").map(Number);
  const nqs = flag("--nq", "200").split(",").map(Number);
  const nTasks = Number(flag("--tasks", "5"));
  header(`key IVF, synthetic: dim ${dim}, ${keyType} keys, ${nqs.join(" and ")} task rows, ${nTasks} tasks, ${reps} reps`);
  const tk = new TopicKeys(dim, 8192, noisePool);
  for (let si = 0; si < sizes.length; si++) {
    const N = sizes[si];
    const keysPer = keysList[Math.min(si, keysList.length - 1)];
    tk.topics(N);
    const bank = new KeyBank(dim, { keyType });
    const tokenOf: Int32Array[] = [];
    const keys = new Float32Array(keysPer * dim);
    let t0 = performance.now();
    for (let s = 0; s < N; s++) {
      const toks = tk.skill(keysPer, keys);
      if (s < 64 * nTasks) tokenOf.push(toks);
      bank.add(keys);
    }
    console.log(`${N} skills × ${keysPer} keys = ${bank.keys} keys, bank ${(bank.bytes / 2 ** 20).toFixed(0)} MiB (built in ${((performance.now() - t0) / 1000).toFixed(0)} s)${leaveOut > 0 ? `; the first ${leaveOut} take no part in any glance` : ""}`);
    t0 = performance.now();
    const index = await KeyIvf.build(bank, centroidsArg > 0 ? { centroids: centroidsArg } : {});
    const st = index.stats();
    console.log(`  index: ${st.centroids} centroids, trained in ${((performance.now() - t0) / 1000).toFixed(1)} s, ${(st.bytes / 2 ** 20).toFixed(1)} MiB = ${(st.bytes / bank.bytes).toFixed(3)}× the bank; mean key–centroid cos ${st.trainMeanSim.toFixed(3)}`);
    for (const nq of nqs) {
      const tasks: Task[] = [];
      for (let t = 0; t < nTasks; t++) {
        const target = tokenOf[t * 64];
        const queries = new Float32Array(nq * dim);
        for (let i = 0; i < nq; i++) {
          const tok = uniform() < 0.2 ? target[pick(target.length)] : pick(tk.V);
          around(tk.vocab, tok * dim, tk.noise, queries, i * dim, dim);
        }
        tasks.push({ queries });
      }
      if (nqs.length > 1) console.log(`  ${nq} task rows:`);
      await compare(bank, index, tasks);
    }
    await installCost(bank, index, keysPer);
    bank.dispose();
  }
}

async function real(): Promise<void> {
  const nTasks = Number(flag("--tasks", "20"));
  const [bankDir, cachePath] = argv;
  if (!bankDir || !cachePath) throw new Error("usage: npm run bench -- kivf real <bank dir> <queries cache> [--tasks N]");
  const manifest = JSON.parse(readFileSync(`${bankDir}/manifest.json`, "utf8")) as { header: { dim: number; layer: number }; entries: { offset: number; nKeys: number }[] };
  if (manifest.header.dim !== dim) throw new Error(`dim ${manifest.header.dim}, expected ${dim}`);
  // read skill by skill: a 30K-skill bank's keys.bin passes node's 2 GiB readFileSync limit
  const fd = openSync(`${bankDir}/keys.bin`, "r");
  const bank = new KeyBank(dim);
  for (const e of manifest.entries) {
    const keys = new Float32Array(e.nKeys * dim);
    readSync(fd, new Uint8Array(keys.buffer), 0, keys.byteLength, e.offset * dim * 4);
    bank.add(keys);
  }
  closeSync(fd);
  const buf = readFileSync(cachePath);
  const hlen = buf.readUInt32LE(0);
  const head = JSON.parse(buf.toString("utf8", 4, 4 + hlen)) as { nq: number[] };
  const all = new Float32Array(buf.buffer.slice(buf.byteOffset + 4 + hlen, buf.byteOffset + buf.length));
  const starts: number[] = [];
  let at = 0;
  for (const n of head.nq) {
    starts.push(at);
    at += n * dim;
  }
  const n = head.nq.length;
  const order = Array.from({ length: Math.min(nTasks, n) }, (_, j) => (j * 97) % n);
  const tasks = order.map((i) => ({ queries: all.subarray(starts[i], starts[i] + head.nq[i] * dim) }));
  header(`key IVF, real bank ${bankDir}: ${bank.size} skills, ${bank.keys} keys, float32, ℓ${manifest.header.layer}; ${tasks.length} tasks (rows median ${median(order.map((i) => head.nq[i]))}), ${reps} reps`);
  const t0 = performance.now();
  const index = await KeyIvf.build(bank, centroidsArg > 0 ? { centroids: centroidsArg } : {});
  const st = index.stats();
  console.log(`  index: ${st.centroids} centroids, trained in ${((performance.now() - t0) / 1000).toFixed(1)} s, ${(st.bytes / 2 ** 20).toFixed(1)} MiB = ${(st.bytes / bank.bytes).toFixed(3)}× the bank; mean key–centroid cos ${st.trainMeanSim.toFixed(3)}`);
  await compare(bank, index, tasks);
  await installCost(bank, index, 200);
  bank.dispose();
}

(mode === "real" ? real() : synth()).catch((err) => {
  console.error(err);
  process.exit(1);
});
