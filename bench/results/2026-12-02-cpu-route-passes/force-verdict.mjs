// A copy of the shipped projections whose re-ranker runs the verdict on every route (any library
// size, any lead). Run from the repository root after `npx tsup`:
//   node bench/results/2026-12-02-cpu-route-passes/force-verdict.mjs OUT.gguf
import { Projections } from "../../../dist/index.js";
const p = await Projections.load("models/gavel-mini.projections.gguf");
await p.withCalibration({ rerank: { ...p.rerank, verdictMinSkills: 0, verdictMargin: 1e9 } }).save(process.argv[2]);
console.log(`wrote ${process.argv[2]}`);
