/**
 * Writes an abstention reference (the off-domain prompts a small library sets its own abstention cut
 * with: src/route/library-cut.ts) into a projections file, keeping everything else in it:
 *
 *   npx vite-node scripts/select/write-abstention-reference.ts -- PROMPTS.jsonl IN.gguf OUT.gguf
 *     [--batches offhw1,offhw2,…] [--pass K] [--below N]
 *
 * PROMPTS.jsonl: {id, text, batch} lines (bench/data/off-domain-prompts.jsonl); `--batches` keeps
 * those batches (default offhw1-offhw5, the prompts the abstention model is fitted on; 6-10 stay held
 * out). `--pass` (default: the conformal choice, the largest K with (K + 1)/(n + 1) ≤ 0.10 for n
 * prompts) and `--below` (default the by-size model's small-band edge, else 125). `--remove` instead of
 * PROMPTS takes the reference out.
 */
import { readFileSync } from "node:fs";
import { Projections } from "../../src/projections/projections.js";
import { checkAbstentionReference } from "../../src/projections/abstention-model.js";

const args = process.argv.slice(2).filter((a) => a !== "--");
const opt = (n: string) => { const i = args.indexOf(n); return i >= 0 ? args.splice(i, 2)[1] : undefined; };
const batches = new Set((opt("--batches") ?? "offhw1,offhw2,offhw3,offhw4,offhw5").split(","));
const passArg = opt("--pass");
const belowArg = opt("--below");
const [prompts, src, out] = args;
if (!prompts || !src || !out) throw new Error("usage: write-abstention-reference.ts PROMPTS.jsonl|--remove IN.gguf OUT.gguf [--batches …] [--pass K] [--below N]");
const p = await Projections.load(src);
if (prompts === "--remove") {
  await p.withCalibration({ abstentionReference: null }).save(out);
  console.log(`wrote ${out}: no abstention reference`);
} else {
  const texts = readFileSync(prompts, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as { text: string; batch: string }).filter((r) => batches.has(r.batch)).map((r) => r.text);
  const n = texts.length;
  const pass = passArg !== undefined ? Number(passArg) : Math.floor(0.1 * (n + 1)) - 1;
  const model = p.abstention;
  const below = belowArg !== undefined ? Number(belowArg) : model?.kind === "bySize" ? model.from : 125;
  const reference = checkAbstentionReference({ prompts: texts, pass, below });
  await p.withCalibration({ abstentionReference: reference }).save(out);
  console.log(`wrote ${out}: ${n} reference prompts (${[...batches].join(", ")}), at most ${pass} may load a skill (bound ${((pass + 1) / (n + 1)).toFixed(3)}), under ${below} skills`);
}
