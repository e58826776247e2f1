// A copy of the shipped projections whose re-ranker runs the verdict at any library size
// (verdictMinSkills 0), on close calls as shipped (verdictMargin kept). Run from the repository root
// after `npx tsup`:
//   node bench/results/2026-12-02-cpu-verdict-24/verdict-small.mjs OUT.gguf
import { Projections } from "../../../dist/index.js";
const p = await Projections.load("models/gavel-mini.projections.gguf");
console.log(JSON.stringify({ ...p.rerank, cheap: undefined, full: undefined }));
await p.withCalibration({ rerank: { ...p.rerank, verdictMinSkills: 0 } }).save(process.argv[2]);
console.log(`wrote ${process.argv[2]}`);
