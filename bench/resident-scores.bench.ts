/**
 * One glance-refresh round (every task's m̄ over the whole library) two ways: the host path
 * (projectKeys: every skill through W_s into a native KeyBank, then per task projectNormalize +
 * spanMeanScores) against the trainer scoring its resident store (residentSpanMeans). The upload
 * into the store (uploadSkills, once per run in runTraining) is timed apart. Also reports how far
 * the two sets of scores are apart (the store holds f16-rounded states) and how many of each task's
 * top-20 agree.
 *
 * Run: npm run bench -- resident-scores [skills] [rows] [nEmbd] [dim] [tasks] [queryRows] [threads]
 * Defaults: 2000 skills × 200 rows, nEmbd 384, dim 768, 64 tasks × 32 query rows, every core.
 */
import { projectNormalize } from "../src/kernels/kernels.js";
import { residentSpanMeans } from "../lab/train/resident-scores.js";
import { projectKeys, rankByScore, spanMeanScores } from "../lab/train/retrieval.js";
import { createTrainer, uploadSkills } from "../lab/train/trainer.js";
import { randomMatrix } from "./data.js";

const [nSkills, rows, nEmbd, dim, nTasks, qRows, threads] = [2000, 200, 384, 768, 64, 32, 0].map((d, i) => Number(process.argv[2 + i] ?? d));

async function main() {
  const skills = Array.from({ length: nSkills }, (_, s) => randomMatrix(rows * nEmbd, 10 + s));
  const tasks = Array.from({ length: nTasks }, (_, t) => ({ query: randomMatrix(qRows * nEmbd, 100_000 + t) }));
  const trainer = createTrainer({ nEmbd, dim, seed: 1, threads: threads || undefined });
  try {
    const { wq, ws } = trainer.getWeights();
    console.log(`${nSkills} skills × ${rows} rows, nEmbd ${nEmbd}, dim ${dim}; ${nTasks} tasks × ${qRows} query rows`);

    let t0 = performance.now();
    const kb = await projectKeys(skills, ws, nEmbd, dim);
    const tProject = performance.now() - t0;
    t0 = performance.now();
    const host: Float64Array[] = [];
    try {
      for (const t of tasks) host.push(await spanMeanScores(await projectNormalize(t.query, nEmbd, wq, dim), kb));
    } finally {
      kb.dispose();
    }
    const tGlance = performance.now() - t0;
    console.log(`host:     ${((tProject + tGlance) / 1e3).toFixed(2)} s  (projectKeys ${(tProject / 1e3).toFixed(2)} s, glances ${(tGlance / 1e3).toFixed(2)} s)`);

    t0 = performance.now();
    uploadSkills(trainer, skills, nEmbd);
    const tUpload = performance.now() - t0;
    t0 = performance.now();
    const res = await residentSpanMeans(trainer, skills, tasks);
    const tRes = performance.now() - t0;
    console.log(`resident: ${(tRes / 1e3).toFixed(2)} s  (+ uploadSkills ${(tUpload / 1e3).toFixed(2)} s, once per run; store ${(trainer.residentBytes / 2 ** 20).toFixed(0)} MiB)`);

    let worst = 0;
    let agree = 0;
    host.forEach((h, k) => {
      h.forEach((x, s) => (worst = Math.max(worst, Math.abs(x - res[k][s]))));
      const a = new Set(rankByScore(h).slice(0, 20));
      agree += rankByScore(res[k]).slice(0, 20).filter((s) => a.has(s)).length;
    });
    console.log(`max |Δm̄| ${worst.toExponential(2)} (f16-rounded store vs f32 states); top-20 agreement ${((agree / (20 * nTasks)) * 100).toFixed(1)}%`);
  } finally {
    trainer.dispose();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
