/**
 * Calibrates the embedded default pair's abstention on the library it ships with (issue 13):
 * models/gavel-mini.gguf + models/gavel-mini.projections.gguf over examples/skills (24 skills).
 *
 *   npx vite-node scripts/calibrate-default.ts [-- --dry-run] [--threads N] [--records out.jsonl]
 *
 * CPU only, about four minutes on two cores. It installs examples/skills into a temporary bank and
 * reads per-query records with `evaluate()` (methods bm25, glance, ruling, gL, gV; BM25's top 10 read
 * out too, lexicalPool 10) for:
 *   - in-domain, to fit on: the tasks of examples/demo-tasks.json with an expected skill;
 *   - in-domain, held out: {@link HELD_OUT_TASKS} below, one fresh task per example skill, written
 *     for this check and never fitted on;
 *   - off-domain: offDomainPrompts() batches 1–5 (the validation half) to fit on, batches 6–10 held
 *     back, and the demo's own off-domain entries (`"expected": null`).
 * Then: T of the lexical expert and the abstention model, under the projections' own α, γ, Δ and
 * β = 0 (only T and the abstention model change; the glance, the ruling and the first stage stay as
 * they were). T is first fitted by the gold's likelihood (fitLexicalTemperature); with β = 0, T only
 * matters to abstention, so when that T's model abstains on an in-domain record it is chosen on the
 * grid by fitAbstention's own cross-validated criterion instead (see chooseTemperature). The model is
 * measured on the held-back records and written with T into the projections file (unless --dry-run),
 * checking that nothing else of the file moved.
 *
 * Features measured on the full 30.6K library (the lift max B + log N) do not carry to 24 skills
 * (the lift is at most log 24 there), which is why the shipped pair is calibrated on its own library.
 * The records do not depend on the stored T or abstention model, so a second run fits the same model.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { DEFAULT_MODEL, DEFAULT_PROJECTIONS, PACKAGE_ROOT } from "../src/defaults.js";
import { Model } from "../src/model/Model.js";
import { Projections } from "../src/projections/projections.js";
import { needsVerdict } from "../src/projections/abstention-model.js";
import { describeAbstentionModel, decideAbstention, Router, type AbstentionModel } from "../src/route/index.js";
import { evaluate, type EvalLibrarySkill, type PerQueryRecord } from "../lab/eval/evaluate.js";
import { loadLibrary, writePerQuery } from "../lab/eval/io.js";
import { selectTasks, type EvalTask } from "../lab/eval/tasks.js";
import { offDomainPrompts } from "../lab/eval/off-domain.js";
import { fitLexicalTemperature, LEXICAL_T_GRID } from "../lab/eval/lexical-fit.js";
import { evaluateAbstention, fitAbstention, replayAbstention, type AbstentionFitReport, type AbstentionRecord, type AbstentionRuling } from "../lab/eval/abstention-fit.js";
import { table } from "../src/cli/ui/table.js";

/** The demo's settings (src/cli/commands/demo.ts), so that the records read what the demo reads. */
const SKILL_BUDGET = 1024;
const CONTEXT_SIZE = 16_384;
const SEQUENCES = 40;
const SKILLS_DIR = join(PACKAGE_ROOT, "examples", "skills");
const TASKS_FILE = join(PACKAGE_ROOT, "examples", "demo-tasks.json");
/** BM25's leaders that also get g and a verdict (as the H100 records of issue 13: POOL=10). */
const LEXICAL_POOL = 10;
/**
 * Candidates by g that get a verdict. The ruling only reads the Δ-shortlist (at most maxShortlist, by
 * g at β = 0), so records whose Δ-shortlist fits in this pool replay route() exactly; checkPool
 * verifies it for every record (the shipped Δ leaves one or two). 5 instead of 20 halves the time.
 */
const READ_POOL = 5;

/**
 * In-domain tasks held out from every fit: one per example skill, written for this check (after the
 * demo's, before any result of this script), in the demo's style.
 */
const HELD_OUT_TASKS: readonly { task: string; expected: string }[] = [
  { task: "My backup script dies halfway when a filename has a space in it and never notices when cp fails. Make it safe and give it a --dry-run flag.", expected: "bash-scripting" },
  { task: "On phones the sidebar overlaps the main content and the footer floats in the middle of the page. Make the page stack properly on small screens.", expected: "css-layout" },
  { task: "Package our Node API so it runs in a container with docker compose next to a Redis instance.", expected: "dockerfile" },
  { task: "I have nine messy work-in-progress commits on my feature branch; squash them into two clean ones before I open the merge request.", expected: "git-history" },
  { task: "Our workflow that publishes the package on every tag started failing with a permissions error; fix the release job.", expected: "github-actions-ci" },
  { task: "go build fails with 'missing go.sum entry' after I bumped a dependency, and we need to use our fork of the library instead of upstream.", expected: "go-modules" },
  { task: "Strip the GPS metadata from all the JPEGs in the uploads folder and shrink any that are wider than 2000 pixels.", expected: "image-resizing" },
  { task: "Convert docker-compose.yml to JSON and change the image tag of the web service from the command line.", expected: "jq-yq-transforms" },
  { task: "After the deploy, the pods of the payments service keep restarting with CrashLoopBackOff. Find out why and fix the deployment.", expected: "kubernetes-manifests" },
  { task: "We need endpoints for listing, creating and cancelling orders; sketch the API with proper status codes and cursor pagination, and write the spec.", expected: "openapi-design" },
  { task: "Merge sales.csv with the regions sheet of targets.xlsx and pivot monthly revenue per region; some rows have missing region codes.", expected: "pandas-data-cleaning" },
  { task: "We received 300 scanned invoices as PDFs; pull the invoice number, date and total from each into a spreadsheet.", expected: "pdf-extract" },
  { task: "The nightly Python job now takes three hours instead of forty minutes. Find out where the time goes.", expected: "performance-profiling" },
  { task: "Add a NOT NULL email_verified column to the users table, which has 40 million rows, without locking the site.", expected: "postgres-migrations" },
  { task: "One test in our suite fails about one run in ten; find out why it is flaky, make it reliable, and report coverage.", expected: "pytest-testing" },
  { task: "Make our internal utilities folder installable with pip and give it a command-line entry point called mytool.", expected: "python-packaging" },
  { task: "The search box component re-renders on every keystroke and fires a request each time; rewrite it with hooks and debounce the calls.", expected: "react-components" },
  { task: "Our repository has no documentation; write one page that explains how to install the tool, run it and contribute.", expected: "readme-writing" },
  { task: "Match UK postcodes in a form field and reject anything else; my current pattern accepts garbage.", expected: "regex-patterns" },
  { task: "cargo build complains that I cannot borrow self.items as mutable because it is also borrowed as immutable. Help me get it to compile.", expected: "rust-cargo" },
  { task: "Before we open-source this repository, check that no passwords or tokens are left anywhere in it, including old commits.", expected: "secrets-scanning" },
  { task: "The dashboard's report query times out on MySQL since the events table passed 50 million rows; speed it up.", expected: "sql-query-tuning" },
  { task: "We cannot follow a request across our three microservices in production. Add JSON logs with a request id, and tracing.", expected: "structured-logging" },
  { task: "Provision an S3 bucket and a CloudFront distribution for our static site on AWS, reusable across staging and production.", expected: "terraform-modules" },
];

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
const num = (x: number) => (Number.isFinite(x) ? String(Number(x.toPrecision(4))) : String(x));

/** The records' groups, as eval tasks. */
interface TaskSets {
  inDomain: EvalTask[];
  heldIn: EvalTask[];
  demoOff: EvalTask[];
  fitOff: EvalTask[];
  heldOff: EvalTask[];
}

/** The demo's tasks, the held-out ones and the off-domain prompts as eval tasks (gold: the expected skill's id). */
async function taskSets(library: readonly EvalLibrarySkill[]): Promise<TaskSets> {
  const entries = JSON.parse(await readFile(TASKS_FILE, "utf8")) as { task: string; expected: string | null }[];
  const byName = new Map(library.map((s) => [s.name, s.id]));
  const gold = (name: string, where: string) => {
    const id = byName.get(name);
    if (!id) throw new Error(`${where}: no skill named ${name} in ${SKILLS_DIR}`);
    return [id];
  };
  const sets: TaskSets = { inDomain: [], heldIn: [], demoOff: [], fitOff: [], heldOff: [] };
  entries.forEach((e, i) => {
    if (e.expected === null) sets.demoOff.push({ id: `demo-off-${i + 1}`, text: e.task, gold_skill_ids: [], batch: "demo", off_domain: true });
    else sets.inDomain.push({ id: `demo-${i + 1}`, text: e.task, gold_skill_ids: gold(e.expected, `${TASKS_FILE}[${i}]`), batch: "demo" });
  });
  HELD_OUT_TASKS.forEach((t, i) => sets.heldIn.push({ id: `held-${i + 1}`, text: t.task, gold_skill_ids: gold(t.expected, `HELD_OUT_TASKS[${i}]`), batch: "held" }));
  const all = offDomainPrompts();
  sets.fitOff = selectTasks(all, { batches: "1-5" });
  sets.heldOff = selectTasks(all, { batches: "6-10" });
  return sets;
}

/** Installs the example skills into a temporary bank and reads every task's record there. */
async function readRecords(before: Projections, library: EvalLibrarySkill[], tasks: EvalTask[], threads: number | undefined): Promise<PerQueryRecord[]> {
  // Only the verdict pool is narrowed (READ_POOL); the keys, the glance and the ruling are the file's.
  const reading = new Projections({ ...before.meta, wq: before.wq, ws: before.ws, maxShortlist: READ_POOL });
  const model = await Model.load(DEFAULT_MODEL, { contextSize: CONTEXT_SIZE, sequences: SEQUENCES, flashAttention: true, threads });
  const bankDir = await mkdtemp(join(tmpdir(), "gavel-calibrate-default-"));
  try {
    const router = await Router.open(model, { projections: reading, bankDir, skillBudget: SKILL_BUDGET });
    try {
      const report = await router.install(SKILLS_DIR);
      if (report.failed.length) throw new Error(`install failed: ${report.failed.map((f) => f.where).join(", ")}`);
      console.log(`installed ${report.installed.length} skills of ${SKILLS_DIR} in ${report.seconds.toFixed(1)} s; reading ${tasks.length} tasks`);
      let last = performance.now();
      const { perQuery, skipped } = await evaluate({
        router,
        tasks,
        library,
        methods: ["bm25", "glance", "ruling", "gL", "gV"],
        pool: READ_POOL,
        lexicalPool: LEXICAL_POOL,
        onProgress: (p) => {
          if (p.done === p.total || performance.now() - last > 30_000) {
            last = performance.now();
            console.log(`  ${p.done}/${p.total} tasks read`);
          }
        },
      });
      if (skipped.length) throw new Error(`tasks without a gold in the library: ${skipped.join(", ")}`);
      return perQuery;
    } finally {
      await router.close();
    }
  } finally {
    await model.dispose();
    await rm(bankDir, { recursive: true, force: true });
  }
}

/** Every record's Δ-shortlist (by g, β = 0) must lie in the verdict's pool, so that the replay is route()'s. */
function checkPool(records: readonly PerQueryRecord[], delta: number): void {
  let widest = 0;
  for (const r of records) {
    const best = r.glance![0].g;
    const n = r.glance!.filter((c) => c.g >= best - delta).length;
    widest = Math.max(widest, n);
    if (n > READ_POOL) throw new Error(`${r.id}: ${n} candidates within Δ of the best, more than the verdict pool of ${READ_POOL}: raise READ_POOL`);
  }
  console.log(`every Δ-shortlist fits the verdict pool of ${READ_POOL} (the widest holds ${widest}): the records replay route() exactly`);
}

/** One T's fit, as chooseTemperature compares them. */
interface TemperatureFit {
  T: number;
  ruling: AbstentionRuling;
  model: AbstentionModel;
  report: AbstentionFitReport;
  /** In-domain fitting records it abstains on. */
  abstainsOn: string[];
}

function fitAt(T: number, before: Projections, inDomain: AbstentionRecord[], offDomain: AbstentionRecord[]): TemperatureFit {
  const ruling: AbstentionRuling = { alpha: before.alpha, gamma: before.gamma, delta: before.delta, beta: 0, maxShortlist: before.maxShortlist, lexicalTemperature: T };
  const { model, report } = fitAbstention(inDomain, offDomain, ruling);
  const abstainsOn = inDomain.filter((r) => decideAbstention(model, replayAbstention(r, ruling)!.features).abstain).map((r) => r.id);
  return { T, ruling, model, report, abstainsOn };
}

/**
 * fitAbstention's own preference between two fits (the cross-validated rates: the trigger target met,
 * then fewer in-domain abstentions, then no verdict needed, then a threshold), then no in-domain
 * fitting record abstained on, then the T nearer the likelihood's (in log).
 */
function preferFit(a: TemperatureFit, b: TemperatureFit, likelihoodT: number): number {
  const ra = a.report.cv ?? a.report.fitting;
  const rb = b.report.cv ?? b.report.fitting;
  if (a.report.meetsTriggerTarget !== b.report.meetsTriggerTarget) return a.report.meetsTriggerTarget ? -1 : 1;
  if (ra.abstentionRate !== rb.abstentionRate) return ra.abstentionRate - rb.abstentionRate;
  const v = (f: TemperatureFit) => (needsVerdict(f.model) ? 1 : 0);
  if (v(a) !== v(b)) return v(a) - v(b);
  const t = (f: TemperatureFit) => (f.model.kind === "threshold" ? 0 : 1);
  if (t(a) !== t(b)) return t(a) - t(b);
  if (a.abstainsOn.length !== b.abstainsOn.length) return a.abstainsOn.length - b.abstainsOn.length;
  return Math.abs(Math.log(a.T / likelihoodT)) - Math.abs(Math.log(b.T / likelihoodT));
}

/**
 * T and the model: the likelihood's T when its model abstains on no in-domain fitting record, else the
 * grid's T whose fit {@link preferFit} ranks first (every T's fit is printed).
 */
function chooseTemperature(before: Projections, inDomain: AbstentionRecord[], offDomain: AbstentionRecord[]): TemperatureFit {
  const lik = fitLexicalTemperature(inDomain.map((r) => r.lexical!));
  console.log(`\nT by the gold's likelihood over the ${inDomain.length} in-domain records: ${lik.temperature} (mean log p(gold) ${lik.meanLogLikelihood.toFixed(3)} nats)`);
  const atLik = fitAt(lik.temperature, before, inDomain, offDomain);
  console.log(`  its model: ${atLik.report.chosen}: ${describeAbstentionModel(atLik.model)}; abstains on ${atLik.abstainsOn.length ? atLik.abstainsOn.join(", ") : "no in-domain record"}`);
  if (atLik.abstainsOn.length === 0) return atLik;
  console.log("  it abstains on an in-domain demo task: with β = 0, T only serves abstention, so T is chosen on the grid by the fit's cross-validation");
  const fits = LEXICAL_T_GRID.map((T) => fitAt(T, before, inDomain, offDomain));
  const rows = fits.map((f) => {
    const r = f.report.cv ?? f.report.fitting;
    return [num(f.T), f.report.chosen, pct(r.abstentionRate), pct(r.triggerRate), f.abstainsOn.join(" ") || "–", num(f.model.threshold)];
  });
  console.log(table(["T", "fitAbstention's choice", "CV abstain", "CV trigger", "abstains on (fit)", "threshold"], rows));
  return [...fits].sort((a, b) => preferFit(a, b, lik.temperature))[0];
}

/** The chosen fit's candidates, as `gavel calibrate --off-domain` prints them. */
function printFit(f: TemperatureFit): void {
  const r = f.report;
  console.log(
    `\nabstention fit at T = ${f.T}: ${r.inDomain} in-domain, ${r.offDomain} off-domain records; features ${r.features.join(", ")}; ` +
      `${r.folds ? `${r.folds}-fold cross-validation` : "no cross-validation"}; target: triggers on ≤ ${pct(r.targetTriggerRate)}, in-domain abstentions ≤ ${pct(r.targetAbstentionRate)}`,
  );
  const dash = (x: number | undefined) => (x === undefined ? "–" : pct(x));
  const rows = r.candidates.map((c) => [c.label, dash(c.fitTriggerRate), dash(c.cv?.abstentionRate), dash(c.cv?.triggerRate), pct(c.fitting.abstentionRate), pct(c.fitting.triggerRate), num(c.model.threshold)]);
  console.log(table(["model", "set at", "CV abstain", "CV trigger", "fit abstain", "fit trigger", "threshold"], rows));
  const rated = r.cv ?? r.fitting;
  console.log(`chosen: ${r.chosen}: ${describeAbstentionModel(f.model)}`);
  console.log(`  ${JSON.stringify(f.model)}`);
  console.log(`  out of fold: abstains on ${pct(rated.abstentionRate)} of in-domain tasks, triggers on ${pct(rated.triggerRate)}; on the fitting records ${pct(r.fitting.abstentionRate)} and ${pct(r.fitting.triggerRate)}`);
}

/** Each record's decision under the model, one line each. */
function printDecisions(title: string, records: readonly AbstentionRecord[], f: TemperatureFit, only?: (abstained: boolean, hit: boolean) => boolean): void {
  const lines: string[] = [];
  for (const r of records) {
    const x = replayAbstention(r, f.ruling)!;
    const d = decideAbstention(f.model, x.features);
    if (only && !only(d.abstain, x.hit)) continue;
    const { lift, B, g, V, candidates } = x.features;
    const what = d.abstain ? "abstains" : `→ ${x.chosen}${r.offDomain ? "" : x.hit ? " ✓" : " ✗"}`;
    lines.push(`  ${what.padEnd(26)} [${r.id}] B ${num(B ?? NaN)}, lift ${num(lift ?? NaN)}, g ${num(g)}, V ${num(V)}, ${candidates} cand.`);
  }
  console.log(`\n${title}${lines.length ? "" : ": none"}`);
  for (const l of lines) console.log(l);
}

/** The rates on the held-back and fitting records, and what a BENCHMARKS entry needs. */
function printMeasures(f: TemperatureFit, g: Record<keyof TaskSets, AbstentionRecord[]>, seconds: number): void {
  const heldOff = evaluateAbstention(f.model, [], g.heldOff, f.ruling);
  const fitOff = evaluateAbstention(f.model, [], g.fitOff, f.ruling);
  const demo = evaluateAbstention(f.model, g.inDomain, g.demoOff, f.ruling);
  const heldIn = evaluateAbstention(f.model, g.heldIn, [], f.ruling);
  const count = (rate: number, n: number) => `${pct(rate)} (${Math.round(rate * n)} of ${n})`;
  console.log("\nrates");
  console.log(`  held-back off-domain prompts (batches 6–10): triggers on ${count(heldOff.triggerRate, heldOff.offDomain)}`);
  console.log(`  fitting off-domain prompts (batches 1–5):    triggers on ${count(fitOff.triggerRate, fitOff.offDomain)}`);
  console.log(`  the demo's off-domain entries:               triggers on ${count(demo.triggerRate, demo.offDomain)}`);
  console.log(`  held-out in-domain tasks:                    abstains on ${count(heldIn.abstentionRate, heldIn.inDomain)}; Hit@1 ${pct(heldIn.hitAt1)} (${pct(heldIn.hitAt1WithoutAbstention)} without abstention)`);
  console.log(`  in-domain demo tasks (fitted on):            abstains on ${count(demo.abstentionRate, demo.inDomain)}; Hit@1 ${pct(demo.hitAt1)} (${pct(demo.hitAt1WithoutAbstention)} without abstention)`);
  printDecisions("in-domain demo tasks", g.inDomain, f);
  printDecisions("the demo's off-domain entries", g.demoOff, f);
  printDecisions("held-out in-domain tasks it abstains on or misroutes", g.heldIn, f, (a, hit) => a || !hit);
  printDecisions("held-back off-domain prompts it triggers on", g.heldOff, f, (a) => !a);
  if (f.abstainsOn.length) console.log(`\nWARNING: the chosen model abstains on in-domain demo tasks: ${f.abstainsOn.join(", ")}`);
  console.log(`\nfor BENCHMARKS: npx vite-node scripts/calibrate-default.ts (${seconds.toFixed(0)} s on this CPU)`);
  console.log(`  library examples/skills; fitted on ${demo.inDomain} in-domain demo tasks and off-domain batches 1–5 (${fitOff.offDomain}); α, γ, Δ, β = 0 kept`);
  console.log(`  T = ${f.T}; ${f.report.chosen}: ${describeAbstentionModel(f.model)} (threshold ${num(f.model.threshold)}, marginCap ${num(f.model.marginCap)})`);
  console.log(`  held back: triggers on ${pct(heldOff.triggerRate)} of ${heldOff.offDomain} off-domain prompts; abstains on ${pct(heldIn.abstentionRate)} of ${heldIn.inDomain} held-out in-domain tasks`);
}

/** Everything of the file but T and the abstention model must be as it was. */
function checkUnchanged(before: Projections, after: Projections, f: TemperatureFit): void {
  const bytes = (a: Float32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);
  const problems: string[] = [];
  if (!bytes(before.wq).equals(bytes(after.wq))) problems.push("W_q");
  if (!bytes(before.ws).equals(bytes(after.ws))) problems.push("W_s");
  if (before.hash !== after.hash || before.keysHash !== after.keysHash) problems.push("hash");
  for (const k of ["layer", "dim", "tau", "eps", "alpha", "gamma", "delta", "beta", "maxShortlist", "trainedBy", "createdAt"] as const) {
    if (before[k] !== after[k]) problems.push(`${k} ${String(before[k])} → ${String(after[k])}`);
  }
  if (JSON.stringify(before.model) !== JSON.stringify(after.model)) problems.push("model fingerprint");
  if (after.lexicalTemperature !== f.T) problems.push(`T ${after.lexicalTemperature} ≠ ${f.T}`);
  // the file's reader builds the model in its own key order: compare the values
  const canonical = (m: object | null) => JSON.stringify(m && Object.fromEntries(Object.entries(m).sort(([x], [y]) => x.localeCompare(y))));
  if (canonical(after.abstention) !== canonical(f.model)) problems.push("the abstention model read back differs");
  if (problems.length) throw new Error(`the written projections differ beyond T and the abstention model: ${problems.join(", ")}`);
  console.log(`checked: W_q, W_s (hash ${after.hash.slice(0, 12)}…), ℓ*=${after.layer}, α=${after.alpha}, γ=${after.gamma}, Δ=${num(after.delta)}, β=${after.beta}, maxShortlist ${after.maxShortlist} unchanged; T and the model read back`);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2).filter((a) => a !== "--");
  const { values } = parseArgs({ args, options: { "dry-run": { type: "boolean" }, threads: { type: "string" }, records: { type: "string" } } });
  const t0 = performance.now();
  const before = await Projections.load(DEFAULT_PROJECTIONS);
  console.log(`projections ${DEFAULT_PROJECTIONS}: ℓ*=${before.layer}, α=${before.alpha}, γ=${before.gamma}, Δ=${num(before.delta)}, β=${before.beta}, T=${before.lexicalTemperature}, abstention: ${describeAbstentionModel(before.abstention)}`);
  const { skills: library } = await loadLibrary([SKILLS_DIR]);
  const sets = await taskSets(library);
  const tasks = Object.values(sets).flat();
  const records = await readRecords(before, library, tasks, values.threads ? Number(values.threads) : undefined);
  if (values.records) await writePerQuery(values.records, records);
  checkPool(records, before.delta);
  const byId = new Map(records.map((r) => [r.id, r as AbstentionRecord]));
  const groups = Object.fromEntries(Object.entries(sets).map(([k, ts]) => [k, (ts as EvalTask[]).map((t) => byId.get(t.id)!)])) as Record<keyof TaskSets, AbstentionRecord[]>;
  const chosen = chooseTemperature(before, groups.inDomain, groups.fitOff);
  printFit(chosen);
  printMeasures(chosen, groups, (performance.now() - t0) / 1000);
  if (values["dry-run"]) {
    console.log("\n(--dry-run: the projections file is not written)");
    return;
  }
  await before.withCalibration({ lexicalTemperature: chosen.T, abstention: chosen.model }).save(DEFAULT_PROJECTIONS);
  console.log(`\nwrote T = ${chosen.T} and the abstention model into ${DEFAULT_PROJECTIONS}`);
  checkUnchanged(before, await Projections.load(DEFAULT_PROJECTIONS), chosen);
}

await main();
