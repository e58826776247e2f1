// Experiment (not part of the package): does a per-skill prior against hub skills help the glance's
// vote at library scale? CSLS-style (Conneau et al. 2018): a skill's hubness r(s) is the mean of its
// K largest max-sims over reference query tokens (descriptions of public skills outside the library,
// rendered as tasks: no benchmark text), and the vote runs on m_i(s) − λ·r(s) instead of m_i(s).
// λ = 0 is the paper's vote (and reproduces `gavel eval --methods glance`).
//
// Usage: npx vite-node scripts/experiments/skill-prior.ts -- <model> <projections> <bank> <tasks.jsonl>
//          <reference.jsonl> <nReference> <out.json> --library <a.jsonl> [--library <b.jsonl> …]
// Prints Hit@1 / R@20 per λ, for the tasks of batches 1-5 (validation) and 6-10 (test) separately.
import { readFileSync, writeFileSync } from "node:fs";
import { Model } from "../../src/model/Model.js";
import { Projections } from "../../src/projections/projections.js";
import { BankStore, bankHeaderFor } from "../../src/bank/index.js";
import { projectNormalize, voteK } from "../../src/kernels/kernels.js";
import { KeyBank } from "../../src/bank/key-bank.js";
import { RenderEncoder } from "../../src/render/encode.js";
import { acceptedIds, LibraryIndex } from "../../lab/eval/metrics.js";

const args = process.argv.slice(2).filter((a) => a !== "--");
const libs: string[] = [];
for (let i = args.indexOf("--library"); i >= 0; i = args.indexOf("--library")) libs.push(...args.splice(i, 2).slice(1));
const [modelPath, projPath, bankDir, tasksPath, refPath, nRefArg, outPath] = args;
const LAMBDAS = [0, 0.25, 0.5, 0.75, 1];
const K_REF = 10;

const model = await Model.load(modelPath, { contextSize: 2048, threads: 2 });
const proj = await Projections.load(projPath);
const nEmbd = model.info.nEmbd;
const encoder = new RenderEncoder(model, 512);
const taskBudget = 2048 - 512 - encoder.verdictOverhead;
const store = await BankStore.open(bankDir, bankHeaderFor(proj));
const bank = new KeyBank(proj.dim);
const ids: string[] = [];
await store.forEachKeyBatch(256 * 2 ** 20, (b) => b.entries.forEach((e, s) => {
  bank.add(b.keys.subarray(b.offsets[s] * proj.dim, b.offsets[s + 1] * proj.dim));
  ids.push(e.id);
}));
const nS = ids.length;
const k = voteK(nS);

async function queries(text: string): Promise<Float32Array> {
  const enc = encoder.encodeTask(text, taskBudget);
  const states = await model.hiddenStates(enc.tokens, proj.layer);
  return projectNormalize(states.subarray(enc.taskStart * nEmbd, enc.taskEnd * nEmbd), nEmbd, proj.wq, proj.dim);
}

// r(s): mean of each skill's K_REF largest max-sims over the reference tokens.
const refs = readFileSync(refPath, "utf8").trim().split("\n").slice(0, Number(nRefArg)).map((l) => JSON.parse(l) as { description: string });
const top = Array.from({ length: nS }, () => [] as number[]);
for (const r of refs) {
  const q = await queries(r.description);
  const { m } = await bank.glance(q, { k });
  const nq = q.length / proj.dim;
  for (let i = 0; i < nq; i++)
    for (let s = 0; s < nS; s++) {
      const t = top[s];
      const v = m[i * nS + s];
      if (t.length < K_REF) t.push(v), t.sort((a, b) => b - a);
      else if (v > t[K_REF - 1]) (t[K_REF - 1] = v), t.sort((a, b) => b - a);
    }
}
const prior = Float64Array.from(top, (t) => t.reduce((a, b) => a + b, 0) / Math.max(1, t.length));

// The vote of the paper on shifted scores: token i gives m_i(s) − λ r(s) to its top-k skills by it.
function vote(m: Float32Array, nq: number, lambda: number): Float64Array {
  const g = new Float64Array(nS);
  const row = new Float64Array(nS);
  for (let i = 0; i < nq; i++) {
    for (let s = 0; s < nS; s++) row[s] = m[i * nS + s] - lambda * prior[s];
    const best: number[] = [];
    for (let s = 0; s < nS; s++) {
      if (best.length < k) { best.push(s); best.sort((a, b) => row[b] - row[a] || a - b); }
      else if (row[s] > row[best[k - 1]]) { best[k - 1] = s; best.sort((a, b) => row[b] - row[a] || a - b); }
    }
    for (const s of best) g[s] += row[s];
  }
  for (let s = 0; s < nS; s++) g[s] /= nq;
  return g;
}

const library = libs.flatMap((f) => readFileSync(f, "utf8").trim().split("\n").map((l) => JSON.parse(l)));
const index = new LibraryIndex(library);
const tasks = readFileSync(tasksPath, "utf8").trim().split("\n").map((l) => JSON.parse(l) as { id: string; text: string; gold_skill_ids: string[] });
const res: Record<string, { split: string; n: number; hit: number; r20: number }> = {};
const tally = LAMBDAS.map(() => ({ val: [0, 0, 0], test: [0, 0, 0] }));
for (const t of tasks) {
  const accepted = acceptedIds(t.gold_skill_ids, index);
  if (accepted.size === 0) continue;
  const split = /^batch([1-5])\//.test(t.id) ? "val" : "test";
  const q = await queries(t.text);
  const nq = q.length / proj.dim;
  const { m } = await bank.glance(q, { k });
  LAMBDAS.forEach((lambda, li) => {
    const g = vote(m, nq, lambda);
    const order = Array.from(g.keys()).sort((a, b) => g[b] - g[a] || a - b).slice(0, 20).map((s) => ids[s]);
    const c = tally[li][split as "val" | "test"];
    c[0]++;
    if (accepted.has(order[0])) c[1]++;
    if (order.some((id) => accepted.has(id))) c[2]++;
  });
}
LAMBDAS.forEach((lambda, li) => {
  for (const split of ["val", "test"] as const) {
    const [n, h, r] = tally[li][split];
    res[`${split} λ=${lambda}`] = { split, n, hit: h / n, r20: r / n };
    console.log(`${split.padEnd(4)} λ=${String(lambda).padEnd(4)} n=${n} Hit@1 ${(h / n).toFixed(3)} R@20 ${(r / n).toFixed(3)}`);
  }
});
writeFileSync(outPath, JSON.stringify({ nReference: refs.length, kRef: K_REF, k, nSkills: nS, results: res }, null, 2));
await store.close();
await model.dispose();
