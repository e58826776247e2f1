import { Projections } from "../../../dist/index.js";
const p = await Projections.load("models/gavel-mini.projections.gguf");
await p.withCalibration({ rerank: { ...p.rerank, verdictMinSkills: 0, verdictMargin: 1e9 } }).save("process.argv[2]");
console.log("ok");
