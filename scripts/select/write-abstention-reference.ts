/**
 * Writes an abstention reference (the off-domain prompts a small library sets its own abstention cut
 * with: src/route/library-cut.ts) into a projections file, keeping everything else in it:
 *
 *   npx vite-node scripts/select/write-abstention-reference.ts -- PROMPTS.jsonl[,MORE.jsonl…] IN.gguf OUT.gguf
 *     [--batches offhw1,offhw2,…] [--pass K] [--below N]
 *
 * PROMPTS.jsonl: {id, text, batch} lines (bench/data/off-domain-prompts.jsonl and
 * bench/data/off-domain-reference-prompts.jsonl, comma-separated); `--batches` keeps those batches
 * (default offhw1-offhw5 and offref: 120 prompts; offhw6-10 stay held out). `--pass` defaults to the
 * largest K for which a library's realised rate of off-domain prompts let through exceeds 10% with
 * probability at most 0.2: that rate is Beta(K + 1, n − K) distributed over draws of the n prompts
 * (conformal), and P(Beta(K + 1, n − K) > 0.1) = P(Binomial(n, 0.1) ≤ K). `--below` defaults to the
 * by-size model's small-band edge, else 125. `--remove` instead of PROMPTS takes the reference out.
 */
import { readFileSync } from "node:fs";
import { Projections } from "../../src/projections/projections.js";
import { checkAbstentionReference } from "../../src/projections/abstention-model.js";

const args = process.argv.slice(2).filter((a) => a !== "--");
const opt = (n: string) => { const i = args.indexOf(n); return i >= 0 ? args.splice(i, 2)[1] : undefined; };
const batches = new Set((opt("--batches") ?? "offhw1,offhw2,offhw3,offhw4,offhw5,offref").split(","));
const passArg = opt("--pass");
const belowArg = opt("--below");
const [prompts, src, out] = args;
if (!prompts || !src || !out) throw new Error("usage: write-abstention-reference.ts PROMPTS.jsonl[,MORE.jsonl…]|--remove IN.gguf OUT.gguf [--batches …] [--pass K] [--below N]");
const p = await Projections.load(src);
if (prompts === "--remove") {
  await p.withCalibration({ abstentionReference: null }).save(out);
  console.log(`wrote ${out}: no abstention reference`);
} else {
  const texts = prompts.split(",").flatMap((f) => readFileSync(f, "utf8").split("\n")).filter(Boolean).map((l) => JSON.parse(l) as { text: string; batch: string }).filter((r) => batches.has(r.batch)).map((r) => r.text);
  const n = texts.length;
  const pass = passArg !== undefined ? Number(passArg) : widestPass(n, 0.1, 0.2);
  const model = p.abstention;
  const below = belowArg !== undefined ? Number(belowArg) : model?.kind === "bySize" ? model.from : 125;
  const reference = checkAbstentionReference({ prompts: texts, pass, below });
  await p.withCalibration({ abstentionReference: reference }).save(out);
  console.log(`wrote ${out}: ${n} reference prompts (${[...batches].join(", ")}), at most ${pass} may load a skill (bound ${((pass + 1) / (n + 1)).toFixed(3)}; over 10% with probability ${binomialCdf(n, 0.1, pass).toFixed(3)}), under ${below} skills`);
}

/** P(Binomial(n, p) ≤ k). */
function binomialCdf(n: number, p: number, k: number): number {
  let term = (1 - p) ** n; let sum = 0;
  for (let i = 0; i <= k; i++) { sum += term; term *= ((n - i) / (i + 1)) * (p / (1 - p)); }
  return Math.min(1, sum);
}

/** The largest pass whose realised rate exceeds `rate` with probability at most `risk`. */
function widestPass(n: number, rate: number, risk: number): number {
  let k = -1;
  while (k + 1 < n && binomialCdf(n, rate, k + 1) <= risk) k++;
  if (k < 0) throw new Error(`${n} prompts are too few: even pass 0 lets more than ${rate} through with probability over ${risk}`);
  return k;
}
