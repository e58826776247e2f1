// Runs on the GPU machine with the CUDA addon (GAVEL_ADDON=…/gavel.node): the glance's CUDA max-sim
// (KeyBank.glance over the whole bank, and restricted to a subset of handles) against its CPU twin (the flat glance, which never leaves the
// CPU) on fresh random banks of awkward shapes, then one timing at library scale.
//
// Tolerances (float32 accumulations in different orders, unit vectors):
//   m:      max |Δ| ≤ 1e-5;
//   argmax: where the twins pick different keys, those keys' products differ by ≤ 1e-5 (a near tie);
//   g:      max |Δ| ≤ 1e-4 (a near tie at the k-th place may swap two skills in one token's top-k).
// Usage: node scripts/device/glance-twins.mjs [--scale skills,keysPerSkill,dim,nq]
import { KeyBank, glance, glanceDevice } from "../../dist/index.js";

const TOL_M = 1e-5, TOL_G = 1e-4;
const seed = Number(process.env.GAVEL_TEST_SEED ?? (Date.now() % 2 ** 31));
let state = seed >>> 0;
const rand = () => ((state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 2 ** 32);
const gauss = () => Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
function unitRows(n, dim) {
  const a = new Float32Array(n * dim);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let d = 0; d < dim; d++) s += (a[i * dim + d] = gauss()) ** 2;
    s = Math.sqrt(s);
    for (let d = 0; d < dim; d++) a[i * dim + d] /= s;
  }
  return a;
}
const dot = (a, i, b, j, dim) => { let s = 0; for (let d = 0; d < dim; d++) s += a[i * dim + d] * b[j * dim + d]; return s; };

const info = glanceDevice();
console.log(JSON.stringify({ seed, ...info }));
if (info.device !== "cuda" && !process.env.GLANCE_TWINS_ALLOW_CPU) { console.log("not a CUDA glance: nothing to compare"); process.exit(1); }

let ok = true;
const shapes = [
  // [skills, max keys per skill, dim, query rows]: tile edges (64), empty skills, odd dims
  [1, 1, 1, 1], [3, 0, 8, 5], [7, 65, 17, 63], [40, 130, 256, 64], [200, 64, 100, 65], [513, 40, 256, 300], [64, 200, 384, 129],
];
for (const [nSkills, maxKeys, dim, nq] of shapes) {
  const counts = Array.from({ length: nSkills }, (_, s) => (s % 5 === 4 ? 0 : Math.floor(rand() * (maxKeys + 1))));
  const offsets = new Int32Array(nSkills + 1);
  counts.forEach((c, s) => (offsets[s + 1] = offsets[s] + c));
  const keys = unitRows(offsets[nSkills], dim);
  const q = unitRows(nq, dim);
  const bank = new KeyBank(dim);
  for (let s = 0; s < nSkills; s++) bank.add(keys.slice(offsets[s] * dim, offsets[s + 1] * dim));
  const k = Math.max(1, Math.min(nSkills, 1 + Math.floor(rand() * 8)));
  const gpu = await bank.glance(q, { k });
  const cpu = await glance(q, keys, offsets, dim, { k });
  let dm = 0, dg = 0, argDiff = 0, worstTie = 0;
  for (let i = 0; i < nq; i++)
    for (let s = 0; s < nSkills; s++) {
      const c = i * nSkills + s;
      dm = Math.max(dm, Math.abs(gpu.m[c] - cpu.m[c]));
      if (gpu.argmax[c] !== cpu.argmax[c]) {
        argDiff++;
        if (gpu.argmax[c] < 0 || cpu.argmax[c] < 0) worstTie = Infinity;
        else worstTie = Math.max(worstTie, Math.abs(dot(q, i, keys, offsets[s] + gpu.argmax[c], dim) - dot(q, i, keys, offsets[s] + cpu.argmax[c], dim)));
      }
    }
  for (let s = 0; s < nSkills; s++) dg = Math.max(dg, Math.abs(gpu.g[s] - cpu.g[s]));
  const pass = dm <= TOL_M && dg <= TOL_G && worstTie <= TOL_M;
  ok &&= pass;
  console.log(JSON.stringify({ nSkills, keys: offsets[nSkills], dim, nq, k, maxMDiff: dm, maxGDiff: dg, argmaxDiffers: argDiff, worstTieGap: worstTie, pass }));

  // Restricted to a shuffled subset of handles (the device runs the whole bank and gathers the
  // columns): against the CPU flat glance over the same skills, in the same order.
  const all = Array.from(bank.handles());
  const pick = all.filter(() => rand() < 0.6).sort(() => rand() - 0.5);
  if (pick.length > 0) {
    const sub = pick.map((h) => all.indexOf(h));
    const subOffsets = new Int32Array(sub.length + 1);
    sub.forEach((s, j) => (subOffsets[j + 1] = subOffsets[j] + counts[s]));
    const subKeys = new Float32Array(subOffsets[sub.length] * dim);
    sub.forEach((s, j) => subKeys.set(keys.subarray(offsets[s] * dim, offsets[s + 1] * dim), subOffsets[j] * dim));
    const kr = Math.max(1, Math.min(sub.length, k));
    const rg = await bank.glance(q, { k: kr, handles: Int32Array.from(pick) });
    const rc = await glance(q, subKeys, subOffsets, dim, { k: kr });
    let rdm = 0, rdg = 0, rArg = 0;
    for (let c = 0; c < rc.m.length; c++) {
      rdm = Math.max(rdm, Math.abs(rg.m[c] - rc.m[c]));
      if (rg.argmax[c] !== rc.argmax[c]) rArg++;
    }
    for (let j = 0; j < sub.length; j++) rdg = Math.max(rdg, Math.abs(rg.g[j] - rc.g[j]));
    const order = rg.handles.length === pick.length && pick.every((h, j) => rg.handles[j] === h);
    const rPass = order && rdm <= TOL_M && rdg <= TOL_G;
    ok &&= rPass;
    console.log(JSON.stringify({ restricted: sub.length, of: nSkills, k: kr, maxMDiff: rdm, maxGDiff: rdg, argmaxDiffers: rArg, handlesInOrder: order, pass: rPass }));
  }
  bank.clear();
}

// The bank changes between glances: the device copy must follow (add, remove, clear).
{
  const dim = 32, bank = new KeyBank(dim);
  const a = unitRows(10, dim), b = unitRows(10, dim), q = unitRows(3, dim);
  const ha = bank.add(a);
  const g1 = await bank.glance(q, { k: 1 });
  const hb = bank.add(b);
  const g2 = await bank.glance(q, { k: 2 });
  bank.remove(ha);
  const g3 = await bank.glance(q, { k: 1 });
  const pass = g1.handles.length === 1 && g2.handles.length === 2 && g3.handles.length === 1 && g3.handles[0] === hb
    && Math.abs(g3.g[0] - (await glance(q, b, new Int32Array([0, 10]), dim, { k: 1 })).g[0]) <= TOL_G;
  ok &&= pass;
  console.log(JSON.stringify({ check: "bank changes reach the device copy", pass }));
}

// Library scale: a CUDA glance against the CPU one on the same bank (timing, and the twins once more).
const scaleArg = process.argv.indexOf("--scale");
const [S, K, D, NQ] = (scaleArg > 0 ? process.argv[scaleArg + 1] : "30000,200,256,1300").split(",").map(Number);
{
  const bank = new KeyBank(D);
  const block = unitRows(K * 50, D); // 50 distinct skills' worth, reused (the timing does not care)
  for (let s = 0; s < S; s++) bank.add(block.subarray((s % 50) * K * D, ((s % 50) + 1) * K * D));
  const q = unitRows(NQ, D);
  let t = performance.now();
  await bank.glance(q);
  const first = performance.now() - t;
  t = performance.now();
  const r = await bank.glance(q);
  const again = performance.now() - t;
  const flops = 2 * NQ * S * K * D;
  console.log(JSON.stringify({ scale: { skills: S, keysPerSkill: K, dim: D, queryRows: NQ }, firstGlanceMs: Math.round(first), glanceMs: Math.round(again), tflops: +(flops / again / 1e9).toFixed(2), gFinite: r.g.every(Number.isFinite) }));
}
console.log(ok ? "CUDA glance matches the CPU twin within tolerances" : "CUDA glance DIFFERS from the CPU twin");
process.exitCode = ok ? 0 : 1;
