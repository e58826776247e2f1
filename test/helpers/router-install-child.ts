// A child process for the lexicon's crash test on a real model: opens a Router on stories260K with
// random projections (from a seed, so the parent makes the same ones) and, until the parent SIGKILLs
// it, installs random skills (committing after each; now and then a reinstall with new content) and
// uninstalls one, printing a line per skill. Run with vite-node:
//   router-install-child.ts <bankDir> <projections seed> <skills seed>
import { Model, Projections, Router } from "../../src/index.js";
import { mulberry32 } from "../../src/util/prng.js";
import { randomSkill } from "./lexicon-bank.js";
import { TINY_LLAMA_PATH } from "../fixtures/tiny-llama.js";

const [dir, projSeed, skillSeed] = process.argv.slice(2);
const model = await Model.load(TINY_LLAMA_PATH, { contextSize: 1024, sequences: 4, threads: 1 });
const projections = await Projections.random(model, { seed: Number(projSeed), dim: 32 });
const router = await Router.open(model, { projections, bankDir: dir, skillBudget: 128 });
const r = mulberry32(Number(skillSeed));
process.stdout.write("ready\n");
for (let round = 0; ; round++) {
  const have = router.list().map((s) => s.id);
  const batch = Array.from({ length: 3 }, (_, i) => randomSkill(r, have.length > 0 && r() < 0.3 ? have[Math.floor(r() * have.length)] : `k${skillSeed}-${round}-${i}`));
  const unique = [...new Map(batch.map((s) => [s.id, s])).values()];
  await router.install(unique, { commitEvery: 1, concurrency: 2, onProgress: (p) => process.stdout.write(`${p.skill} ${p.status}\n`) });
  if (have.length > 2) {
    const id = have[Math.floor(r() * have.length)];
    await router.uninstall(id);
    process.stdout.write(`${id} uninstalled\n`);
  }
}
