/**
 * The glance index against the exact glance on synthetic libraries with topical structure: glance
 * ms (exact whole-bank vs pruned at the default knob and other settings), top-1 and top-20 agreement
 * with the exact glance, index memory against the bank's, training time, and the install cost of
 * one skill with and without the index following it.
 *
 * Run (from the package root): `npm run bench -- glance-index [sizes] [keys] [tokens] [tasks]`.
 *
 * Defaults: sizes "10000,100000" skills, 30 keys per skill (a compressed bank), 200 task rows, 8
 * tasks, dim 256, f16 keys (100K × 30 × 256 holds 1.5 GiB). The library: N/50 topics; each skill a
 * centre near a topic (cos ≈ 0.7), its keys near the centre (cos ≈ 0.65). A task: 60% of its rows
 * near the centre of one target skill (cos ≈ 0.86), 40% random directions (tokens that name no skill).
 * Set GAVEL_ADDON=/path/to/gavel.node to bench a build other than prebuilds/ or build/Release.
 */
import { KeyBank } from "../src/bank/key-bank.js";
import { GlanceIndex, glancePruned, type GlanceIndexKnob } from "../src/bank/glance-index.js";
import { loadBinding } from "../src/native/binding.js";
import { median } from "./data.js";
import { around as aroundIn, uniform } from "./topic-keys.js";

const sizes = (process.argv[2] ?? "10000,100000").split(",").map(Number);
const keysPer = Number(process.argv[3] ?? 30);
const nq = Number(process.argv[4] ?? 200);
const tasks = Number(process.argv[5] ?? 8);
const dim = 256;
const knobs: GlanceIndexKnob[] = [{}, { nprobe: 8, maxCandidates: 128 }, { nprobe: 8, maxCandidates: 512 }, { nprobe: 16, maxCandidates: 1024 }];

/** normalize(base + a · u) at this bench's dim (bench/topic-keys.ts: the same stream, noise norm ≈ a·√(dim/3)). */
function around(base: Float32Array | null, baseAt: number, a: number, out: Float32Array, at: number): void {
  aroundIn(base, baseAt, a, out, at, dim);
}

function topK(g: Float32Array, handles: Int32Array, k: number): number[] {
  const order = Array.from(g.keys()).sort((a, b) => g[b] - g[a] || handles[a] - handles[b]);
  return order.slice(0, k).map((i) => handles[i]);
}

async function main() {
  console.log(`glance index: ${keysPer} keys per skill, dim ${dim}, ${nq} task rows, ${tasks} tasks, f16 keys, ${loadBinding().kernelIsa()}`);
  const unitNoise = Math.sqrt(3 / dim); // noise of norm ≈ 1
  for (const N of sizes) {
    const nTopics = Math.max(10, Math.floor(N / 50));
    const topics = new Float32Array(nTopics * dim);
    for (let t = 0; t < nTopics; t++) around(null, 0, 1, topics, t * dim);
    const bank = new KeyBank(dim, { keyType: "f16" });
    const centre = new Float32Array(dim);
    const keys = new Float32Array(keysPer * dim);
    const centres = new Float32Array(N * dim);
    let addMs = 0;
    for (let s = 0; s < N; s++) {
      around(topics, Math.floor((uniform() + 1) / 2 * nTopics) % nTopics * dim, unitNoise, centre, 0);
      centres.set(centre, s * dim);
      for (let j = 0; j < keysPer; j++) around(centre, 0, 1.2 * unitNoise, keys, j * dim);
      const t0 = performance.now();
      bank.add(keys);
      addMs += performance.now() - t0;
    }
    let t0 = performance.now();
    const index = await GlanceIndex.build(bank);
    const trainMs = performance.now() - t0;
    const st = index.stats();

    // install: one skill added, with the index following it (a sync) and without; then removed again
    const syncMs: number[] = [], plainMs: number[] = [], added: number[] = [];
    for (let s = 0; s < 20; s++) {
      around(topics, (s % nTopics) * dim, unitNoise, centre, 0);
      for (let j = 0; j < keysPer; j++) around(centre, 0, 1.2 * unitNoise, keys, j * dim);
      t0 = performance.now();
      added.push(bank.add(keys));
      plainMs.push(performance.now() - t0);
      t0 = performance.now();
      await index.sync(bank);
      syncMs.push(performance.now() - t0);
    }
    for (const h of added) bank.remove(h);
    t0 = performance.now();
    await index.sync(bank);
    const removeMs = performance.now() - t0;

    const queries = new Float32Array(nq * dim);
    const exactMs: number[] = [];
    const per = knobs.map(() => ({ ms: [] as number[], top1: 0, top20: 0, survivors: [] as number[], stage1: [] as number[], searchMs: [] as number[] }));
    for (let t = 0; t < tasks; t++) {
      const target = Math.floor((uniform() + 1) / 2 * N) % N;
      for (let i = 0; i < nq; i++) {
        if (i % 5 < 3) around(centres, target * dim, 0.6 * unitNoise, queries, i * dim);
        else around(null, 0, 1, queries, i * dim);
      }
      t0 = performance.now();
      const exact = await bank.glance(queries, { detail: 0 });
      exactMs.push(performance.now() - t0);
      const want = topK(exact.g, exact.handles, 20);
      for (const [ki, knob] of knobs.entries()) {
        await glancePruned(bank, index, queries, { ...knob, detail: 0 }); // warm
        t0 = performance.now();
        const pruned = await glancePruned(bank, index, queries, { ...knob, detail: 0 });
        per[ki].ms.push(performance.now() - t0);
        const got = topK(pruned.g, pruned.handles, 20);
        const set = new Set(got);
        per[ki].top20 += want.filter((h) => set.has(h)).length / 20;
        per[ki].top1 += got[0] === want[0] ? 1 : 0;
        per[ki].survivors.push(pruned.search.survivors);
        per[ki].stage1.push(pruned.search.stage1);
        per[ki].searchMs.push(pruned.search.probeMs + pruned.search.stage1Ms + pruned.search.stage2Ms);
      }
    }
    console.log(
      `N ${N}  keys ${bank.keys}  bank ${(bank.bytes / 2 ** 20).toFixed(0)} MiB  index ${(st.bytes / 2 ** 20).toFixed(1)} MiB ` +
        `(${(st.bytes / bank.bytes).toFixed(3)}× bank)  centroids ${st.centroids}  train ${(trainMs / 1e3).toFixed(1)} s  ` +
        `bank filled in ${(addMs / 1e3).toFixed(1)} s (${(addMs / N).toFixed(3)} ms/skill)`,
    );
    console.log(`  install of one skill: add ${median(plainMs).toFixed(3)} ms, + index sync ${median(syncMs).toFixed(3)} ms (median of 20); sync after removing them ${removeMs.toFixed(1)} ms`);
    console.log(`  exact glance ${median(exactMs).toFixed(1)} ms (median of ${tasks})`);
    for (const [ki, knob] of knobs.entries()) {
      const p = per[ki];
      console.log(
        `  pruned nprobe ${String(knob.nprobe ?? "default")} maxCandidates ${String(knob.maxCandidates ?? "default")}: ${median(p.ms).toFixed(1)} ms  ` +
          `top-1 ${(p.top1 / tasks).toFixed(3)}  top-20 ${(p.top20 / tasks).toFixed(3)}  stage1 ${median(p.stage1)}  survivors ${median(p.survivors)}  (search ${median(p.searchMs).toFixed(1)} ms of it)`,
      );
    }
    bank.dispose();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
