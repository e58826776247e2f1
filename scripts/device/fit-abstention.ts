/**
 * The default's abstention model, fitted on in-domain tasks of two shapes and on off-domain prompts:
 * long task statements over the full benchmark library (SWE-Skills-Bench batches 1–5, 30.6K skills)
 * and short everyday requests over a small library (the demo's tasks over examples/skills), against
 * the off-domain prompts of batches 1–5 routed over both libraries. Reported on what no fit read:
 * test tasks (batches 6–10), the ten everyday requests, and the off-domain prompts of batches 6–10.
 * A model fitted on one shape alone learns the query's length: short means off-domain.
 *
 * Off-domain prompts: every record flagged `offDomain`, or with `--off PREFIX` only those whose batch
 * starts with PREFIX (`--off offhw`: the hand-written prompts of bench/data/off-domain-prompts.jsonl,
 * not the templated ones of lab/eval/off-domain.ts). `--features a,b` limits the candidate features
 * (default: every one the records carry; `coverage` needs records whose lexical read-outs hold the
 * ceiling, as lexical-records.ts now writes them). `--compare P` prints the table of the abstention
 * model in projections file P on the same sets first (the model before a refit).
 *
 * Usage: npx vite-node scripts/device/fit-abstention.ts -- <selection.json> <name> <big-dir> <small.jsonl[.gz]>
 *          [--off PREFIX] [--features a,b,…] [--compare P] [--mid-gap] [--mid R.jsonl.gz]
 *          [--shape LABEL=R.jsonl.gz]… [--trigger-rate R] [--band-from N] [--write P]
 * `--mid R`: records of short in-domain requests and off-domain prompts over a mid-sized library
 * (batches ≤ 5 fitted on, the rest held out), a third shape beside the two above. `--shape LABEL=R`,
 * repeatable: further shapes of the same kind (libraries of other sizes), each weighed alike.
 * `--trigger-rate R`: the stated share of off-domain prompts that may load a skill (default 0.1).
 * `--band-from N`: fit on the records over libraries of N skills or more only, and write a by-size
 * model: the fitted one from N skills, the model the projections carry now (its small band) below.
 * `--band-below N`: the other band: fit on the records over libraries under N skills only (the
 * projections' model must be by size, from N), and keep the projections' large band.
 * `--band-from A --band-below B`: a middle band: fit on the records over libraries of A to B − 1
 * skills only and write a three-band model, the projections' small band under A (their model must be
 * by size, from A), the fitted one from A, the projections' large band from B.
 * scripts/device/refit-abstention.sh runs it from the records with the coverage recomputed.
 */
import { readFileSync } from "node:fs";
import { Projections } from "gavel-router";
import { readPerQuery } from "../../lab/eval/io.js";
import { evaluateAbstention, fitAbstention, replayAbstention, type AbstentionRuling } from "../../lab/eval/abstention-fit.js";
import { batchNumber } from "../../lab/eval/tasks.js";
import { decideAbstention, describeAbstentionModel, type AbstentionFeature, type AbstentionModel } from "gavel-router/internal";
import type { PerQueryRecord } from "../../lab/eval/evaluate.js";

const args = process.argv.slice(2).filter((a) => a !== "--");
const writeAt = args.indexOf("--write");
const write = writeAt >= 0 ? args.splice(writeAt, 2)[1] : undefined;
const valueOf = (flag: string): string | undefined => {
  const at = args.indexOf(flag);
  return at >= 0 ? args.splice(at, 2)[1] : undefined;
};
const offPrefix = valueOf("--off");
const featureList = valueOf("--features")?.split(",") as AbstentionFeature[] | undefined;
const compare = valueOf("--compare");
const triggerRate = Number(valueOf("--trigger-rate") ?? "0.1");
const bandFromArg = valueOf("--band-from");
const bandFrom = bandFromArg === undefined ? undefined : Number(bandFromArg);
const bandBelowArg = valueOf("--band-below");
const bandBelow = bandBelowArg === undefined ? undefined : Number(bandBelowArg);
if (bandFrom !== undefined && bandBelow !== undefined && !(bandBelow > bandFrom)) throw new Error("--band-from A --band-below B (a middle band) needs B > A");
const midPath = valueOf("--mid");
const shapeSpecs: string[] = [];
for (let at = args.indexOf("--shape"); at >= 0; at = args.indexOf("--shape")) shapeSpecs.push(args.splice(at, 2)[1]);
const monotoneAt = args.indexOf("--monotone");
const monotone = monotoneAt >= 0 && args.splice(monotoneAt, 1).length > 0;
const midGapAt = args.indexOf("--mid-gap");
const midGap = midGapAt >= 0 && args.splice(midGapAt, 1).length > 0;
const [selection, name, big, small] = args;
const c = JSON.parse(readFileSync(selection, "utf8"))[name].chosen;
const ruling: AbstentionRuling = { alpha: c.alpha, gamma: c.gamma, delta: c.delta, beta: c.beta, maxShortlist: 20, lexicalTemperature: c.T };
const early = (r: { batch?: string | number }) => (batchNumber(r.batch) ?? 0) <= 5;
const bigVal = await readPerQuery(`${big}/val.jsonl.gz`);
const bigTest = await readPerQuery(`${big}/test.jsonl.gz`);
const isOff = (r: { offDomain?: boolean; batch?: string | number }) => r.offDomain === true && (offPrefix === undefined || String(r.batch).startsWith(offPrefix));
const bigOff = (await readPerQuery(`${big}/offdomain.jsonl.gz`)).filter(isOff);
const smallAll = await readPerQuery(small);
const smallIn = smallAll.filter((r) => !r.offDomain);
const smallOff = smallAll.filter(isOff);
// Each shape weighs the same in the fit: the few short tasks are repeated to the long tasks' count
// (and the off-domain prompts of each library likewise), so that neither shape alone sets the model.
const repeat = <T>(xs: T[], n: number): T[] => Array.from({ length: n }, (_, i) => xs[i % xs.length]);
const shortIn = smallIn.filter(early);
const bigOffFit = bigOff.filter(early);
const smallOffFit = smallOff.filter(early);
// --mid R / --shape LABEL=R (repeatable): short requests and off-domain prompts over another library
// (records of `gavel eval --methods bm25,glance,ruling` there, their lexical read-outs recomputed over
// that library): further shapes, each weighed as the others, so that neither "short" nor "long"
// stands for a library's size. Batches ≤ 5 are fitted on, the rest held out.
const shapes: { label: string; records: PerQueryRecord[] }[] = [];
if (midPath) shapes.push({ label: "mid library", records: await readPerQuery(midPath) });
for (const spec of shapeSpecs) {
  const eq = spec.indexOf("=");
  shapes.push({ label: spec.slice(0, eq), records: await readPerQuery(spec.slice(eq + 1)) });
}
const shapeSets = shapes.map(({ label, records }) => {
  const ins = records.filter((r) => !r.offDomain);
  const offs = records.filter(isOff);
  return { label, inFit: ins.filter(early), offFit: offs.filter(early), inHeld: ins.filter((r) => !early(r)), offHeld: offs.filter((r) => !early(r)) };
});
// --band-from N: the fit reads only records over libraries of N skills or more (the large band of a
// by-size model; the small band is the model the projections carry now)
// (--band-below N: only records under N skills, the small band)
const inBand = (r: PerQueryRecord) => (bandFrom === undefined || (r.lexical?.size ?? 0) >= bandFrom) && (bandBelow === undefined || (r.lexical?.size ?? Infinity) < bandBelow);
const sets = (xs: PerQueryRecord[], n: number) => { const b = xs.filter(inBand); return b.length ? repeat(b, n) : []; };
const fitIn = [...bigVal.filter(inBand), ...sets(shortIn, bigVal.length), ...shapeSets.flatMap((x) => sets(x.inFit, bigVal.length))];
const fitOff = [...bigOffFit.filter(inBand), ...sets(smallOffFit, bigOffFit.length), ...shapeSets.flatMap((x) => sets(x.offFit, bigOffFit.length))];
if (fitIn.length === 0 || fitOff.length === 0) throw new Error("no fitting records in the band");
const fitted = fitAbstention(fitIn, fitOff, ruling, { targetTriggerRate: triggerRate, ...(featureList ? { features: featureList } : {}), ...(monotone ? { monotone } : {}) });
const { report } = fitted;
/** The model's score of one record (the logit, or the feature for a threshold model). */
function scoreOf(m: AbstentionModel, r: PerQueryRecord): number {
  const x = replayAbstention(r, ruling);
  return x ? decideAbstention(m, x.features).score : NaN;
}
// The fit places the cut at the edge of the in-domain scores; over the small library every score lies
// within a few tenths of it, in-domain or not, so a slightly larger library can move an in-domain
// request across. --mid-gap moves the cut to the middle of the large library's gap (where in-domain
// and off-domain separate): no in-domain request measured comes near it, and over the small library
// nothing is declined at all. The model shipped on 2026-11-28 kept the fitted cut (docs/history/BENCHMARKS.md,
// "Routing quality: the abstention models before the by-size model").
let model: AbstentionModel = fitted.model;
if (bandFrom !== undefined && bandBelow !== undefined) {
  const current = (await Projections.load(write ?? compare ?? "models/gavel-mini.projections.gguf")).abstention;
  if (current?.kind !== "bySize" || current.from !== bandFrom) throw new Error(`--band-from ${bandFrom} --band-below ${bandBelow} needs projections (--write or --compare) whose model is by size, from ${bandFrom}`);
  model = { kind: "bySize", from: bandFrom, small: current.small, mid: fitted.model, midUntil: bandBelow, large: current.large };
  console.log(`by size: under ${bandFrom} skills the projections' small band, from ${bandFrom} to ${bandBelow - 1} the fitted one, from ${bandBelow} the projections' large band`);
} else if (bandFrom !== undefined) {
  const current = (await Projections.load(write ?? compare ?? "models/gavel-mini.projections.gguf")).abstention;
  if (!current) throw new Error("--band-from needs projections (--write or --compare) that carry a model for the small band");
  const small = current.kind === "bySize" ? current.small : current;
  model = { kind: "bySize", from: bandFrom, small, large: fitted.model };
  console.log(`by size: under ${bandFrom} skills the projections' model, from ${bandFrom} the fitted one`);
}
if (bandBelow !== undefined && bandFrom === undefined) {
  const current = (await Projections.load(write ?? compare ?? "models/gavel-mini.projections.gguf")).abstention;
  if (current?.kind !== "bySize" || current.from !== bandBelow) throw new Error(`--band-below ${bandBelow} needs projections (--write or --compare) whose model is by size, from ${bandBelow}`);
  model = { kind: "bySize", from: bandBelow, small: fitted.model, large: current.large };
  console.log(`by size: under ${bandBelow} skills the fitted model, from ${bandBelow} the projections' large band`);
}
if (midGap && model.kind === "logistic") {
  const inMax = Math.max(...bigVal.map((r) => scoreOf(model, r)));
  const offMin = Math.min(...bigOffFit.map((r) => scoreOf(model, r)));
  if (inMax < offMin) {
    console.log(`the large library's gap: in-domain logits up to ${inMax.toFixed(3)}, off-domain from ${offMin.toFixed(3)}: the cut moves from ${model.threshold.toFixed(3)} to its middle`);
    model = { ...model, threshold: (inMax + offMin) / 2 };
  }
}
const pct = (x: number) => x.toFixed(3);
const rows: [string, typeof bigVal, typeof bigVal][] = [
  ["fit: long tasks, 30.6K skills + prompts 1–5", bigVal, bigOff.filter(early)],
  ["fit: demo tasks, 24 skills + prompts 1–5", smallIn.filter(early), smallOff.filter(early)],
  ["held out: test tasks, 30.6K skills + prompts 6–10", bigTest, bigOff.filter((r) => !early(r))],
  ["held out: everyday requests, 24 skills + prompts 6–10", smallIn.filter((r) => !early(r)), smallOff.filter((r) => !early(r))],
  ...shapeSets.flatMap((x): [string, typeof bigVal, typeof bigVal][] => [
    [`fit: ${x.label} + prompts 1–5`, x.inFit, x.offFit],
    [`held out: ${x.label} + prompts 6–10`, x.inHeld, x.offHeld],
  ]),
];
function table(m: AbstentionModel): void {
  console.log("\n| set | in-domain abstention | off-domain trigger | Hit@1, abstentions as misses |\n| --- | --- | --- | --- |");
  for (const [label, ins, offs] of rows) {
    const e = evaluateAbstention(m, ins, offs, ruling);
    console.log(`| ${label} | ${pct(e.abstentionRate)} (${e.inDomain}) | ${pct(e.triggerRate)} (${e.offDomain}) | ${pct(e.hitAt1)} |`);
  }
}
if (compare) {
  const before = (await Projections.load(compare)).abstention;
  console.log(`before: the abstention model of ${compare}: ${describeAbstentionModel(before)}\n${JSON.stringify(before)}`);
  if (before) table(before);
  console.log("");
}
console.log(`fitted on ${bigVal.length} long and ${shortIn.length} short in-domain tasks (the short repeated to ${bigVal.length}), ${bigOffFit.length} + ${smallOffFit.length} off-domain prompts (the second repeated to ${bigOffFit.length})${shapeSets.map((x) => `; ${x.label}: ${x.inFit.length} in-domain and ${x.offFit.length} off-domain, each repeated likewise`).join("")}`);
for (const k of report.candidates) console.log(`  ${k.label.padEnd(42)} cv abstain ${k.cv ? pct(k.cv.abstentionRate) : "–"} trigger ${k.cv ? pct(k.cv.triggerRate) : "–"}`);
console.log("chosen:", JSON.stringify(model));
table(model);
if (write) {
  const p = await Projections.load(write);
  await p.withCalibration({ abstention: model }).save(write);
  console.log(`wrote the abstention model into ${write}`);
}
