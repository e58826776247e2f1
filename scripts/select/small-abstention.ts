/**
 * The cut of the abstention model's small band (libraries under its `from`, 125 skills), as a
 * function of where it lies: for each cut, the in-domain requests declined and the off-domain prompts
 * that load a skill, over every small library with records. The weights stay; only the cut moves.
 *
 * Shapes:
 *  - over examples/skills (24 skills), routed here through the router with the given projections: the
 *    in-domain requests of REQUESTS (fitting: all of them; --heldout FILES: held out) and the hand-written off-domain prompts
 *    (bench/data/off-domain-prompts.jsonl; batches 1-5 fitting, 6-10 held out);
 *  - the committed records over libraries of 3-5 skills, full and one-line, and of 124 skills
 *    (bench/results/2026-11-29-cpu-abstention-sizes/: batches ≤ 5 fitting, the rest held out),
 *    replayed under the shipped ruling (bench/results/2026-11-28-h200-default/selection.json, l1).
 * The rule (--trigger-rate, default 0.1): among the candidate cuts (every fitting off-domain score),
 * the one with the fewest fitting in-domain declines, each shape weighed alike, whose mean trigger
 * rate over the shapes' fitting prompts is at most the rate; placed midway in its gap.
 *
 * `--records DIR`: the three record files (tiny-3-5, oneline-3-5, short-124 .jsonl.gz) from DIR instead,
 * e.g. bench/results/2026-12-01-cpu-reference-coverage/skill-words/ (the same records with each pool
 * skill's reference coverage and word count, which a model reading gcov or skillWords needs: without
 * them the replay refuses).
 *
 *   npx vite-node scripts/select/small-abstention.ts -- REQUESTS.json[,MORE] [--heldout H.json[,MORE]]
 *     [--projections P] [--trigger-rate 0.1] [--records DIR]
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Model, Projections, Router } from "../../src/index.js";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS } from "../../src/defaults.js";
import { decideAbstention, readsFeature, type AbstentionModel } from "../../src/internal.js";
import { readPerQuery } from "../../lab/eval/io.js";
import { replayAbstention, type AbstentionRuling } from "../../lab/eval/abstention-fit.js";
import { batchNumber } from "../../lab/eval/tasks.js";
import { readRequests } from "./requests.js";

const argv = process.argv.slice(2).filter((a) => a !== "--");
const opt = (n: string) => { const i = argv.indexOf(n); return i >= 0 ? argv.splice(i, 2)[1] : undefined; };
const projPath = opt("--projections") ?? DEFAULT_PROJECTIONS;
const rate = Number(opt("--trigger-rate") ?? "0.1");
const heldout = opt("--heldout")?.split(",") ?? [];
const recordsDir = opt("--records") ?? "bench/results/2026-11-29-cpu-abstention-sizes";
const files = (argv[0] ?? "").split(",").filter(Boolean);
if (files.length === 0) throw new Error("usage: small-abstention.ts REQUESTS.json[,MORE] [--projections P] [--trigger-rate R]");
const p = await Projections.load(projPath);
const m = p.abstention;
if (!m || m.kind !== "bySize" || m.small.kind !== "logistic") throw new Error(`${projPath}: no by-size abstention model with a logistic small band`);
const small: AbstentionModel = m.small;

type Item = { score: number; early: boolean };
interface Shape { label: string; inDomain: Item[]; offDomain: Item[] }
const shapes: Shape[] = [];

// Over examples/skills, through the router.
const prompts = readFileSync("bench/data/off-domain-prompts.jsonl", "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as { text: string; batch: string });
const model = await Model.load(DEFAULT_MODEL, { contextSize: 2048 });
const dir = mkdtempSync(join(tmpdir(), "gavel-small-abstention-"));
try {
  const router = await Router.open(model, { projections: p, bankDir: join(dir, "bank") });
  await router.install("examples/skills");
  const scoreOf = async (text: string) => {
    const r = await router.route(text, { abstain: true, verdict: false });
    if (!r.abstention || !r.abstention.reason.includes(`under ${m.from} skills`)) throw new Error(`no small-band abstention for ${JSON.stringify(text)}: ${r.abstention?.reason}`);
    return r.abstention.score;
  };
  const inDomain: Item[] = [];
  for (const f of files) for (const t of readRequests(f)) if (t.expected !== null) inDomain.push({ score: await scoreOf(t.task), early: true });
  for (const f of heldout) for (const t of readRequests(f)) if (t.expected !== null) inDomain.push({ score: await scoreOf(t.task), early: false });
  const offDomain: Item[] = [];
  for (const q of prompts) offDomain.push({ score: await scoreOf(q.text), early: (batchNumber(q.batch) ?? 0) <= 5 });
  shapes.push({ label: "24 skills (examples/skills), through the router", inDomain, offDomain });
  await router.close();
} finally {
  await model.dispose();
  rmSync(dir, { recursive: true, force: true });
}

// The committed records over the other small libraries, replayed.
const c = (JSON.parse(readFileSync("bench/results/2026-11-28-h200-default/selection.json", "utf8")) as Record<string, { chosen: { alpha: number; gamma: number; delta: number; beta: number; T: number } }>).l1.chosen;
const ruling: AbstentionRuling = { alpha: c.alpha, gamma: c.gamma, delta: c.delta, beta: c.beta, maxShortlist: 20, lexicalTemperature: c.T };
const R = recordsDir;
for (const [label, file] of [["3-5 skills", "tiny-3-5"], ["3-5 one-line skills", "oneline-3-5"], ["124 skills", "short-124"]]) {
  const recs = await readPerQuery(`${R}/${file}.jsonl.gz`);
  const item = (r: (typeof recs)[number]): Item | null => {
    const x = replayAbstention(r, ruling);
    for (const f of ["gcov", "gcov2", "skillWords"] as const) {
      if (x && readsFeature(small, f) && x.features[f] === undefined) throw new Error(`${R}/${file}.jsonl.gz: record ${r.id} has no ${f}, which the model reads: pass --records with records that carry it (scripts/select/reference-coverage.ts)`);
    }
    return x ? { score: decideAbstention(small, x.features).score, early: (batchNumber(r.batch) ?? 0) <= 5 } : null;
  };
  shapes.push({
    label,
    inDomain: recs.filter((r) => !r.offDomain).map(item).filter((x): x is Item => x !== null),
    offDomain: recs.filter((r) => r.offDomain && String(r.batch).startsWith("offhw")).map(item).filter((x): x is Item => x !== null),
  });
}

const declined = (xs: Item[], cut: number) => xs.filter((x) => x.score > cut).length;
const loaded = (xs: Item[], cut: number) => xs.filter((x) => x.score <= cut).length;
const mean = (v: number[]) => v.reduce((a, b) => a + b, 0) / v.length;
const fitIn = (s: Shape) => s.inDomain.filter((x) => x.early);
const fitOff = (s: Shape) => s.offDomain.filter((x) => x.early);
const inRate = (cut: number) => mean(shapes.map((s) => declined(fitIn(s), cut) / fitIn(s).length));
const offRate = (cut: number) => mean(shapes.map((s) => loaded(fitOff(s), cut) / fitOff(s).length));
// candidate cuts: just under each fitting off-domain score (a prompt at the cut loads a skill)
const scores = [...new Set(shapes.flatMap((s) => fitOff(s).map((x) => x.score)))].sort((a, b) => a - b);
let best = { cut: -Infinity, inRate: inRate(-Infinity) };
for (let i = 0; i < scores.length; i++) {
  const cut = i === 0 ? scores[0] - 1e-9 : (scores[i - 1] + scores[i]) / 2;
  if (offRate(cut) <= rate && inRate(cut) < best.inRate) best = { cut, inRate: inRate(cut) };
}
const show = (cut: number, what: string) => {
  console.log(`\n${what}: cut ${cut.toFixed(3)} (fitting: in-domain declined ${inRate(cut).toFixed(3)}, off-domain loading ${offRate(cut).toFixed(3)}, each shape weighed alike)`);
  console.log("shape\tfit in-domain declined\tfit off-domain loaded\theld-out in-domain declined\theld-out off-domain loaded");
  for (const s of shapes) {
    const hi = s.inDomain.filter((x) => !x.early), ho = s.offDomain.filter((x) => !x.early);
    const f = (n: number, d: number) => (d ? `${n}/${d} (${(n / d).toFixed(3)})` : "–");
    console.log(`${s.label}\t${f(declined(fitIn(s), cut), fitIn(s).length)}\t${f(loaded(fitOff(s), cut), fitOff(s).length)}\t${f(declined(hi, cut), hi.length)}\t${f(loaded(ho, cut), ho.length)}`);
  }
};
console.log(`${projPath}: the small band's cut ${small.threshold.toFixed(3)}; rule: trigger rate at most ${rate}`);
show(small.threshold, "shipped");
show(best.cut, "chosen by the rule");
