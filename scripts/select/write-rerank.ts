/**
 * Writes a re-ranking cascade fitted by rerank.ts (`--cascade`: cascade.json) into a projections
 * file, keeping everything else in it: `npx vite-node scripts/select/write-rerank.ts -- CASCADE IN OUT`
 * (OUT may be IN) [--min-skills N] [--verdict-margin τ] [--verdict-min-skills N]. `--remove` instead
 * of CASCADE takes the re-ranker out.
 */
import { readFileSync } from "node:fs";
import { Projections } from "../../src/projections/projections.js";
import { checkRerankModel } from "../../src/projections/rerank-model.js";

const args = process.argv.slice(2).filter((a) => a !== "--");
const at = args.indexOf("--min-skills");
const minSkills = at >= 0 ? Number(args.splice(at, 2)[1]) : undefined;
const atM = args.indexOf("--verdict-margin");
const verdictMargin = atM >= 0 ? Number(args.splice(atM, 2)[1]) : undefined;
const atV = args.indexOf("--verdict-min-skills");
const verdictMinSkills = atV >= 0 ? Number(args.splice(atV, 2)[1]) : undefined;
const [cascade, src, out] = args;
if (!cascade || !src || !out) throw new Error("usage: write-rerank.ts CASCADE.json|--remove IN.gguf OUT.gguf");
const rerank = cascade === "--remove" ? null : checkRerankModel({ ...JSON.parse(readFileSync(cascade, "utf8")), ...(minSkills !== undefined ? { minSkills } : {}), ...(verdictMargin !== undefined ? { verdictMargin } : {}), ...(verdictMinSkills !== undefined ? { verdictMinSkills } : {}) });
const p = await Projections.load(src);
await p.withCalibration({ rerank }).save(out);
console.log(`wrote ${out}: re-ranker ${rerank ? `cascade, verdict on the cheap stage's best ${rerank.verdictTop}${rerank.verdictMargin !== undefined ? ` when its lead is under ${rerank.verdictMargin}` : ""}, from ${rerank.minSkills} skills, the verdict from ${rerank.verdictMinSkills}` : "removed"}`);
