/**
 * The exact glance against the same glance through the int8 prefilter (native/src/kernels/i8_glance.h,
 * the binding's glanceExact8): ms of each, the prefilter's stages, the share of (row, skill) pairs
 * whose f32 max-sim it recomputes, whether g and the detail columns are bit-identical, and the int8
 * copy's memory against the f16 keys'.
 *
 *   npm run bench -- glance-exact8 synthetic [--skills 10000,30000] [--keys 30,200] [--dim 256]
 *     [--rows 256] [--k 10] [--reps 1] [--topics 256] [--noise 1]
 *   npm run bench -- glance-exact8 real <bank dir> <queries cache> [--tasks 8] [--reps 1]
 *   npm run bench -- glance-exact8 bank <bank dir> <queries cache> [--tasks 3]
 *
 * synthetic: `skills` skills of `keys` keys each (f16), every key near its skill's topic (one of
 * `topics` random unit directions; key = normalize(topic + noise·g/√dim), g standard normal), a task of `rows`
 * rows near random topics, weight 1. real: an installed bank's keys.bin (manifest order; f16-rounded
 * as a f16 KeyBank holds them) and the projected task rows cached by `npm run bench --
 * glance-index-real … --cache FILE --project-only` (weights 1, as that bench uses them).
 *
 * bank: the route's path, KeyBank.glance (detail 0) over the installed bank opened as a route opens
 * it (Library.openSnapshot with the default projections: f32 keys), GAVEL_GLANCE_EXACT8 off / on /
 * on / off / on per task through configure(): the first `on` includes the bank's quantisation.
 *
 * Both paths run in the same worker (glanceExact8 with and without `exact`), alternating which runs
 * first; wall ms and the process's CPU ms (all threads: on a shared machine, the glance's own work)
 * are the glance's alone (the copy of the arguments and the int8 quantisation of the keys, which a bank does once and
 * keeps, are outside; quantisation is reported apart). k = voteK(skills) unless --k; detail 20.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { cpus, loadavg } from "node:os";
import { loadBinding } from "../src/native/binding.js";
import { Library } from "../src/bank/library.js";
import { Projections } from "../src/projections/projections.js";
import { defaultModelPaths } from "../src/defaults.js";
import { voteK } from "../src/kernels/kernels.js";
import { mulberry32 } from "../src/util/prng.js";
import { median } from "./data.js";

const argv = process.argv.slice(2);
function flag(name: string, fallback: string): string {
  const i = argv.indexOf(name);
  return i >= 0 ? argv.splice(i, 2)[1] : fallback;
}
const b = loadBinding();
const reps = Number(flag("--reps", "1"));
const DETAIL = 20;

function gauss(r: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
}
function unitNear(r: () => number, center: Float32Array | null, noise: number, out: Float32Array, at: number, dim: number): void {
  let ss = 0;
  for (let d = 0; d < dim; d++) ss += (out[at + d] = (center ? center[d] : 0) + noise * gauss(r) / Math.sqrt(dim)) ** 2;
  const inv = 1 / Math.sqrt(ss);
  for (let d = 0; d < dim; d++) out[at + d] *= inv;
}

function toHalf(x: Float32Array): Uint16Array {
  const h = new Uint16Array(x.length);
  b.roundToHalf(x, h);  // rounds x in place too
  return h;
}

const bitsEqual = (a: Float32Array, c: Float32Array): boolean => a.length === c.length && Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.from(c.buffer, c.byteOffset, c.byteLength)) === 0;

interface Row { label: string; exactMs: number; i8Ms: number; exactCpu: number; i8Cpu: number; stage1Ms: number; stage2Ms: number; quantMs: number; share: number; same: boolean; isa: string; i8Bytes: number; f16Bytes: number }

async function compare(label: string, queries: Float32Array, bank: Uint16Array, offsets: Int32Array, dim: number, k: number): Promise<Row> {
  const nq = queries.length / dim;
  const weights = new Float32Array(nq).fill(1);
  const ex: number[] = [], i8: number[] = [], s1: number[] = [], s2: number[] = [], exCpu: number[] = [], i8Cpu: number[] = [];
  let same = true, share = 0, quantMs = 0, isa = "", i8Bytes = 0, f16Bytes = 0;
  for (let rep = 0; rep < reps; rep++) {
    // alternate the order so a load change does not favour one
    const runExact = () => b.glanceExact8(queries, bank, offsets, dim, weights, k, DETAIL, true);
    const runI8 = () => b.glanceExact8(queries, bank, offsets, dim, weights, k, DETAIL);
    const [e, p] = rep % 2 === 0 ? [await runExact(), await runI8()] : (([x, y]) => [y, x])([await runI8(), await runExact()]);
    ex.push(e.stats.totalMs);
    i8.push(p.stats.totalMs);
    exCpu.push(e.stats.cpuMs);
    i8Cpu.push(p.stats.cpuMs);
    s1.push(p.stats.stage1Ms);
    s2.push(p.stats.stage2Ms);
    same &&= bitsEqual(e.g, p.g) && bitsEqual(e.m, p.m) && Buffer.compare(Buffer.from(e.argmax.buffer), Buffer.from(p.argmax.buffer)) === 0 &&
      e.columns.join() === p.columns.join();
    share = p.stats.recomputed / Math.max(1, p.stats.pairs);
    quantMs = p.stats.quantMs;
    isa = p.stats.isa + (p.stats.exactFallback ? " (fell back to exact)" : "");
    i8Bytes = p.stats.i8Bytes;
    f16Bytes = p.stats.f16Bytes;
  }
  const row: Row = { label, exactMs: median(ex), i8Ms: median(i8), exactCpu: median(exCpu), i8Cpu: median(i8Cpu), stage1Ms: median(s1), stage2Ms: median(s2), quantMs, share, same, isa, i8Bytes, f16Bytes };
  console.log(`  ${label}: exact ${row.exactMs.toFixed(0)} ms (CPU ${row.exactCpu.toFixed(0)} ms), int8-prefiltered ${row.i8Ms.toFixed(0)} ms ` +
    `(CPU ${row.i8Cpu.toFixed(0)} ms; stage 1 ${row.stage1Ms.toFixed(0)}, stage 2 ${row.stage2Ms.toFixed(0)} ms wall), ×${(row.exactMs / row.i8Ms).toFixed(2)} wall, ` +
    `×${(row.exactCpu / row.i8Cpu).toFixed(2)} CPU; recomputed ${(100 * share).toFixed(2)}% of pairs; ` +
    `bit-identical ${same}; ${isa}; int8 keys ${(i8Bytes / 2 ** 20).toFixed(1)} MiB = ${(i8Bytes / f16Bytes).toFixed(3)}× the f16 keys ` +
    `(quantised in ${quantMs.toFixed(0)} ms); load ${loadavg().map((x) => x.toFixed(1)).join(" ")}`);
  return row;
}

function header(what: string): void {
  console.log(`glance-exact8 ${what}: ${cpus().length} cores (${cpus()[0]?.model}), kernels ${b.kernelIsa()}, node ${process.version}, ` +
    `${new Date().toISOString()}, load ${loadavg().map((x) => x.toFixed(1)).join(" ")}; ${reps} rep(s), median ms`);
}

async function synthetic(): Promise<void> {
  const skillsList = flag("--skills", "10000,30000").split(",").map(Number);
  const keysList = flag("--keys", "30,200").split(",").map(Number);
  const dim = Number(flag("--dim", "256"));
  const nq = Number(flag("--rows", "256"));
  const kFlag = flag("--k", "");
  const nTopics = Number(flag("--topics", "256"));
  const noise = Number(flag("--noise", "1"));
  header(`synthetic (dim ${dim}, ${nq} task rows, ${nTopics} topics, noise ${noise})`);
  const r = mulberry32(20261128);
  const topics = new Float32Array(nTopics * dim);
  for (let t = 0; t < nTopics; t++) unitNear(r, null, Math.sqrt(dim), topics, t * dim, dim);
  const queries = new Float32Array(nq * dim);
  for (let i = 0; i < nq; i++) unitNear(r, topics.subarray(Math.floor(r() * nTopics) * dim), noise, queries, i * dim, dim);
  for (const nSkills of skillsList)
    for (const keys of keysList) {
      const offsets = new Int32Array(nSkills + 1).map((_, s) => s * keys);
      // f16 keys made skill by skill (the float32 bank at 30K × 200 × 256 would be 6 GiB)
      const half = new Uint16Array(nSkills * keys * dim);
      const one = new Float32Array(keys * dim);
      for (let s = 0; s < nSkills; s++) {
        const topic = topics.subarray(Math.floor(r() * nTopics) * dim);
        for (let j = 0; j < keys; j++) unitNear(r, topic, noise, one, j * dim, dim);
        b.roundToHalf(one, half.subarray(s * keys * dim, (s + 1) * keys * dim));
      }
      const k = kFlag ? Number(kFlag) : voteK(nSkills);
      await compare(`${nSkills} skills × ${keys} keys, k ${k}`, queries, half, offsets, dim, k);
    }
}

async function real(): Promise<void> {
  const [bankDir, cachePath] = argv.slice(1);
  if (!bankDir || !cachePath) throw new Error("usage: glance-exact8 real <bank dir> <queries cache> [--tasks N]");
  const nTasks = Number(flag("--tasks", "8"));
  const manifest = JSON.parse(readFileSync(join(bankDir, "manifest.json"), "utf8")) as { header: { dim: number }; entries: { nKeys: number; offset: number }[] };
  const dim = manifest.header.dim;
  const entries = manifest.entries;
  const raw = readFileSync(join(bankDir, "keys.bin"));
  const all = new Float32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4);
  const rows = entries.reduce((a, e) => a + e.nKeys, 0);
  const bank = new Float32Array(rows * dim);
  const offsets = new Int32Array(entries.length + 1);
  entries.forEach((e, s) => {
    bank.set(all.subarray(e.offset * dim, (e.offset + e.nKeys) * dim), offsets[s] * dim);
    offsets[s + 1] = offsets[s] + e.nKeys;
  });
  const half = toHalf(bank);
  const buf = readFileSync(cachePath);
  const hlen = buf.readUInt32LE(0);
  const head = JSON.parse(buf.toString("utf8", 4, 4 + hlen)) as { nq: number[] };
  const q = new Float32Array(buf.buffer.slice(buf.byteOffset + 4 + hlen, buf.byteOffset + buf.length));
  const k = voteK(entries.length);
  header(`real bank ${bankDir} (${entries.length} skills, ${rows} keys, dim ${dim}, f16), ${Math.min(nTasks, head.nq.length)} tasks of ${cachePath}, k ${k}`);
  let at = 0;
  const out: Row[] = [];
  for (let t = 0; t < Math.min(nTasks, head.nq.length); t++) {
    const queries = q.slice(at, at + head.nq[t] * dim);
    at += head.nq[t] * dim;
    out.push(await compare(`task ${t} (${head.nq[t]} rows)`, queries, half, offsets, dim, k));
  }
  console.log(`  median over tasks: exact ${median(out.map((x) => x.exactMs)).toFixed(0)} ms (CPU ${median(out.map((x) => x.exactCpu)).toFixed(0)}), ` +
    `int8-prefiltered ${median(out.map((x) => x.i8Ms)).toFixed(0)} ms (CPU ${median(out.map((x) => x.i8Cpu)).toFixed(0)}), ` +
    `recomputed ${(100 * median(out.map((x) => x.share))).toFixed(2)}% of pairs, bit-identical on ${out.filter((x) => x.same).length} of ${out.length}`);
}

/** The cached task rows (see `real`). */
function cachedTasks(cachePath: string, dim: number): Float32Array[] {
  const buf = readFileSync(cachePath);
  const hlen = buf.readUInt32LE(0);
  const head = JSON.parse(buf.toString("utf8", 4, 4 + hlen)) as { nq: number[] };
  const q = new Float32Array(buf.buffer.slice(buf.byteOffset + 4 + hlen, buf.byteOffset + buf.length));
  let at = 0;
  return head.nq.map((n) => q.slice(at, (at += n * dim)));
}

async function bankPath(): Promise<void> {
  const [bankDir, cachePath] = argv.slice(1);
  if (!bankDir || !cachePath) throw new Error("usage: glance-exact8 bank <bank dir> <queries cache> [--tasks N]");
  const nTasks = Number(flag("--tasks", "3"));
  const library = await Library.openSnapshot(bankDir, await Projections.load(defaultModelPaths().projections));
  const bank = library.keys;
  const tasks = cachedTasks(cachePath, bank.dim).slice(0, nTasks);
  header(`KeyBank.glance (detail 0) over ${bankDir} (${bank.size} skills, ${bank.keys} keys, ${bank.keyType}), ${tasks.length} tasks`);
  for (const [t, queries] of tasks.entries()) {
    const weights = new Float32Array(queries.length / bank.dim).fill(1);
    const cells: string[] = [];
    let gOff: Float32Array | undefined, same = true;
    for (const setting of ["off", "on", "on", "off", "on"] as const) {
      b.configure({ glanceDevice: "cpu", glanceExact8: setting });
      const c0 = process.cpuUsage(), t0 = performance.now();
      const { g } = await bank.glance(queries, { weights, detail: 0 });
      const ms = performance.now() - t0, c = process.cpuUsage(c0);
      cells.push(`${setting} ${ms.toFixed(0)} ms (CPU ${((c.user + c.system) / 1e3).toFixed(0)})`);
      if (setting === "off") gOff = g;
      else if (gOff) same &&= bitsEqual(g, gOff);
    }
    console.log(`  task ${t} (${weights.length} rows): ${cells.join(", ")}; g bit-identical ${same}; load ${loadavg().map((x) => x.toFixed(1)).join(" ")}`);
  }
  b.configure({ glanceExact8: "off" });
  bank.dispose();
}

const mode = argv[0];
if (mode === "synthetic") await synthetic();
else if (mode === "real") await real();
else if (mode === "bank") await bankPath();
else {
  console.error("usage: npm run bench -- glance-exact8 synthetic|real|bank …");
  process.exit(2);
}
