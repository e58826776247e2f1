/**
 * The install's render cost: r(s) through the chat template, tokenized, cut to the skill budget. It
 * runs synchronously on the JS thread, so on a GPU, where the forward pass is cheap, it bounds the
 * install (docs/BENCHMARKS.md).
 *
 *   npm run bench -- render [skills=400] [budget=512]
 *
 * gavel-mini (the embedded default; its template and tokenizer), skills from
 * ../shared/data/skills-mit.jsonl.gz (the first N; the first 50 warm up and are not timed).
 */
import { resolve } from "node:path";
import { DEFAULT_MODEL } from "../src/defaults.js";
import { Model } from "../src/model/Model.js";
import { RenderEncoder } from "../src/render/encode.js";
import { loadSkills } from "../src/skills/index.js";

const [nSkills, budget] = [400, 512].map((d, i) => Number(process.argv[2 + i] ?? d));
const model = await Model.load(DEFAULT_MODEL, { threads: 1, contextSize: 2048 });
const encoder = new RenderEncoder(model, budget);
const { skills } = await loadSkills(resolve("..", "shared", "data", "skills-mit.jsonl.gz"), { limit: nSkills });
const warm = Math.min(50, Math.floor(skills.length / 4));
for (const s of skills.slice(0, warm)) encoder.encodeSkill(s);
let tokens = 0;
let cut = 0;
const t0 = performance.now();
for (const s of skills.slice(warm)) {
  const e = encoder.encodeSkill(s);
  tokens += e.tokens.length;
  if (e.truncated) cut++;
}
const ms = performance.now() - t0;
const n = skills.length - warm;
console.log(`render: ${n} skills, budget ${budget}: ${(ms / n).toFixed(2)} ms a skill, ${Math.round(tokens / n)} tokens a skill, ${cut} cut to the budget`);
await model.dispose();
