import { Projections } from "/work/main/dist/index.js";
const p = await Projections.load("/work/main/models/gavel-mini.projections.gguf");
console.log(JSON.stringify({ ...p.rerank, cheap: undefined, full: undefined }));
await p.withCalibration({ rerank: { ...p.rerank, verdictMinSkills: 0 } }).save(process.argv[2]);
console.log(`wrote ${process.argv[2]}`);
