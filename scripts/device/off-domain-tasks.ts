/**
 * Writes the off-domain prompt set (lab/eval/off-domain.ts, default seed and size) as a tasks JSONL
 * for `gavel eval --tasks`: npx vite-node scripts/device/off-domain-tasks.ts -- <out.jsonl>
 */
import { writeFileSync } from "node:fs";
import { offDomainPrompts } from "../../lab/eval/off-domain.js";

const out = process.argv.slice(2).filter((a) => a !== "--")[0];
if (!out) throw new Error("usage: off-domain-tasks.ts <out.jsonl>");
const tasks = offDomainPrompts();
writeFileSync(out, tasks.map((t) => JSON.stringify(t)).join("\n") + "\n");
console.log(`${tasks.length} off-domain prompts → ${out}`);
