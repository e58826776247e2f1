/**
 * Install throughput on a given model (issue 15's install row): N synthetic skills of about T tokens
 * each, random projections at a chosen depth and width, installed through `Router.install`. The
 * figure to hold against llama.cpp's own prefill rate (llama-bench pp2048 with the same attention
 * setting) is tokens/s.
 *
 *   node install-model.bench.mjs model=PATH [skills=500] [tokens=2048] [dim=768] [layer=25]
 *        [context=4096] [batch=2048] [jobs=8] [gpuLayers=-1] [fa=auto|on|off] [threads=16]
 *
 * Skill texts are words drawn by a seeded generator from a fixed list, so they need no data files
 * (the GPU machine has no ../shared). Speed does not depend on the words; the token count does, and
 * the report gives the exact count the model read.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model } from "../src/model/Model.js";
import { Projections } from "../src/projections/projections.js";
import { Router } from "../src/route/Router.js";

const args = new Map(process.argv.slice(2).map((a) => a.split("=") as [string, string]));
const arg = (k: string, d: string) => args.get(k) ?? d;
const path = arg("model", "models/gavel-mini.gguf");
const nSkills = Number(arg("skills", "500"));
const tokens = Number(arg("tokens", "2048"));
const dim = Number(arg("dim", "768"));
const layerArg = args.get("layer");
const context = Number(arg("context", "4096"));
const batch = Number(arg("batch", "2048"));
const jobs = Number(arg("jobs", "8"));
const gpuLayers = Number(arg("gpuLayers", "-1"));
const threads = Number(arg("threads", "16"));
const fa = arg("fa", "auto");

const WORDS = (
  "the a build test deploy service config file error handle request response data table query index " +
  "cache server client token parse format render schema model route skill agent task step check run " +
  "install update remove create read write open close start stop retry timeout log trace metric alert " +
  "docker kubernetes python node rust go java script shell bash git branch merge commit review release"
).split(" ");

function skillText(i: number, nWords: number): string {
  let s = (i * 2654435761) >>> 0;
  const next = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0), s);
  const words: string[] = [];
  for (let w = 0; w < nWords; w++) words.push(WORDS[next() % WORDS.length]);
  const lines: string[] = [];
  for (let w = 0; w < words.length; w += 16) lines.push(words.slice(w, w + 16).join(" ") + ".");
  return `---\nname: synthetic-${i}\ndescription: Synthetic skill ${i} for install throughput.\n---\n\n${lines.join("\n")}\n`;
}

const model = await Model.load(path, {
  contextSize: context,
  batchSize: Math.min(batch, context),
  gpuLayers,
  threads,
  sequences: jobs + 1,
  ...(fa === "auto" ? {} : { flashAttention: fa === "on", kvCacheType: fa === "on" ? ("f16" as const) : ("f32" as const) }),
});
// about one token per word plus the period; tuned once on the model's own tokenizer below
const probe = model.tokenize(skillText(0, 1000)).length / 1000;
const nWords = Math.max(16, Math.round((tokens - 64) / probe));
const lib = mkdtempSync(join(tmpdir(), "gavel-install-lib-"));
for (let i = 0; i < nSkills; i++) {
  mkdirSync(join(lib, `s${i}`));
  writeFileSync(join(lib, `s${i}`, "SKILL.md"), skillText(i + 1, nWords));
}
const projections = await Projections.random(model, { seed: 1, dim, ...(layerArg ? { layer: Number(layerArg) } : {}) });
const bankDir = mkdtempSync(join(tmpdir(), "gavel-install-bank-"));
const router = await Router.open(model, { projections, bankDir, skillBudget: tokens + 256 });
console.log(
  `${path} (${model.info.architecture}, ${model.info.nLayer} layers, nEmbd ${model.info.nEmbd}): ${nSkills} skills of ~${tokens} tokens, ` +
    `dim ${dim}, layer ${projections.layer}, context ${context}, batch ${batch}, ${jobs} in flight, gpuLayers ${gpuLayers}, fa ${fa}`,
);
const report = await router.install(lib, { concurrency: jobs });
const n = report.installed.length;
console.log(`install: ${n} skills (${report.failed.length} failed, ${report.truncated.length} truncated) in ${report.seconds.toFixed(2)} s`);
console.log(`  ${(report.tokens / report.seconds).toFixed(0)} tokens/s (${report.tokens} tokens, ${(report.tokens / Math.max(1, n)).toFixed(0)} per skill); ${(n / report.seconds).toFixed(2)} skills/s`);
console.log(`  stages, summed over skills in flight (s): ${JSON.stringify(Object.fromEntries(Object.entries(report.stages).map(([k, v]) => [k, +v.toFixed(2)])))}`);
await router.close();
await model.dispose();
rmSync(lib, { recursive: true, force: true });
rmSync(bankDir, { recursive: true, force: true });
