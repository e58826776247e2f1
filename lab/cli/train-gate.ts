import { Gate, type GateInfo, GavelError, type Router, saveGate } from "gavel-router";
import { checkOutPath, type Command, errnoError, intArg, invalidArgument, numberArg, Progress, routerOptions, routerOptionsHelp, table, withInterrupt, withRouter, writeFileDurable, UsageError, parseFlags, type ParsedFlags } from "gavel-router/internal";
import { fitGate } from "../eval/gate-fit.js";
import { loadTasks, parseBatches } from "../eval/tasks.js";
import { chooseFiringThreshold, collectGateFeatures, firingMetrics, firingSummary, labelledRows, positionMetrics, type FiringMetrics, type FiringThreshold, type PositionMetrics, type TrajectoryFeatures } from "../gate/gate-train.js";
import { buildTrajectories, splitTrajectories, type Trajectory } from "../gate/trajectories.js";

const options = {
  ...routerOptions,
  tasks: { type: "string" },
  batches: { type: "string" },
  "allow-test-batches": { type: "boolean" },
  seed: { type: "string" },
  "per-task": { type: "string" },
  negatives: { type: "string" },
  "max-tasks": { type: "string" },
  "max-task-chars": { type: "string" },
  "held-out": { type: "string" },
  calibration: { type: "string" },
  "state-layer": { type: "string" },
  window: { type: "string" },
  "random-positions": { type: "string" },
  lambda: { type: "string" },
  out: { type: "string", short: "o" },
  "save-trajectories": { type: "string" },
  "trajectories-only": { type: "boolean" },
} as const;

type Values = ParsedFlags<{ options: typeof options; args: string[] }>["values"];

/** The trajectories the flags ask for (batches 6–10 are refused unless --allow-test-batches). */
async function trajectoriesOf(v: Values): Promise<Trajectory[]> {
  const spec = v.batches ?? "1-5";
  const batches = parseBatches(spec);
  const test = [...batches].filter((b) => b >= 6 && b <= 10);
  if (test.length && !v["allow-test-batches"]) throw invalidArgument(`--batches ${spec} includes batches ${test.join(",")}, kept for testing; pass --allow-test-batches to train on them anyway`);
  const tasks = await loadTasks(v.tasks!);
  return buildTrajectories(tasks, {
    batches,
    seed: intArg(v.seed, "seed", { min: 0, max: 0xffffffff }) ?? 1,
    perTask: intArg(v["per-task"], "per-task", { min: 1, max: 100 }),
    negatives: intArg(v.negatives, "negatives", { min: 0 }),
    maxTasks: intArg(v["max-tasks"], "max-tasks", { min: 1 }),
    maxTaskChars: intArg(v["max-task-chars"], "max-task-chars", { min: 50 }),
  });
}

/** --state-layer: "star" (ℓ*, default), "final", "none", or a layer number. */
function stateLayerOf(v: string | undefined, router: Router): number | null {
  if (v === undefined || v === "star") return router.projections.layer;
  if (v === "none") return null;
  if (v === "final") return router.model.info.nLayer - 1;
  const n = intArg(v, "state-layer", { min: 0, max: router.model.info.nLayer - 1 });
  return n!;
}

interface TrainReport {
  trajectories: { train: number; calibration: number; held: number; skipped: number };
  rows: { train: number; positives: number };
  fit: { iterations: number; converged: boolean; loss: number; lambda: number };
  /** The firing threshold folded into the bias, chosen on the calibration trajectories (null: none, threshold 0). */
  calibration: FiringThreshold | null;
  train: PositionMetrics;
  held: PositionMetrics;
  firing: FiringMetrics;
  stateLayer: number | null;
}

/** Fits the gate on `fitF`'s sampled rows, then shifts its bias by the firing threshold chosen on `calF` (read at every position). */
function fitAndCalibrate(fitF: TrajectoryFeatures[], calF: TrajectoryFeatures[], lambda: number) {
  const { rows, labels } = labelledRows(fitF);
  if (!labels.includes(1) || !labels.includes(0)) throw new GavelError("the training trajectories gave rows of one class only: build more (--max-tasks, --negatives)", "INVALID_ARGUMENT");
  const fit = fitGate(rows, labels, { lambda });
  const raw = new Gate(fit.model);
  const calibration = calF.length ? chooseFiringThreshold(calF.map((f) => firingSummary(raw, f))) : null;
  const model = { weights: fit.model.weights, bias: fit.model.bias - (calibration?.threshold ?? 0) };
  return { fit, raw, calibration, model, rows: rows.length, positives: labels.filter((y) => y === 1).length };
}

/** The three splits by task: fit (sampled rows), calibration and held out (every position). */
function splits(all: Trajectory[], v: Values, seed: number) {
  const heldFraction = numberArg(v["held-out"], "held-out") ?? 0.2;
  const calFraction = numberArg(v.calibration, "calibration") ?? 0.2;
  const { train: trainSet, held } = splitTrajectories(all, heldFraction, seed);
  const { train: fitSet, held: cal } = splitTrajectories(trainSet, calFraction, seed + 1);
  return { fitSet, cal, held };
}

/** Features of the splits, the fit, the firing threshold, the held-out figures, and the gate written to --out. */
async function train(router: Router, v: Values, all: Trajectory[], signal: AbortSignal): Promise<TrainReport> {
  const seed = intArg(v.seed, "seed", { min: 0, max: 0xffffffff }) ?? 1;
  const { fitSet, cal, held } = splits(all, v, seed);
  const stateLayer = stateLayerOf(v["state-layer"], router);
  const window = intArg(v.window, "window", { min: 1, max: 256 });
  const randomPositions = intArg(v["random-positions"], "random-positions", { min: 0, max: 4096 }) ?? 32;
  const lambda = numberArg(v.lambda, "lambda") ?? 0.1;
  if (!(lambda > 0)) throw invalidArgument(`--lambda must be > 0, got ${lambda}`);
  const progress = new Progress(process.stderr, { prefix: "features ", every: 10, rate: { unit: "trajectories" } });
  const everyPosition = new Set([...cal, ...held].map((t) => t.id));
  const heldIds = new Set(held.map((t) => t.id));
  const calIds = new Set(cal.map((t) => t.id));
  // Calibration and held-out trajectories are read at every position (firing), the others at sampled ones.
  const { features, skipped } = await collectGateFeatures(router, [...fitSet, ...cal, ...held], {
    stateLayer, window, randomPositions, seed, signal, allPositions: (t) => everyPosition.has(t.id),
    onProgress: (d, n, id) => progress.update(d, n, id),
  });
  for (const s of skipped) console.error(`skipped ${s.id}: ${s.reason}`);
  const fitF = features.filter((f) => !everyPosition.has(f.id));
  const calF = features.filter((f) => calIds.has(f.id));
  const heldF = features.filter((f) => heldIds.has(f.id));
  const r = fitAndCalibrate(fitF, calF, lambda);
  const gate = new Gate(r.model);
  const report: TrainReport = {
    trajectories: { train: fitF.length, calibration: calF.length, held: heldF.length, skipped: skipped.length },
    rows: { train: r.rows, positives: r.positives },
    fit: { iterations: r.fit.iterations, converged: r.fit.converged, loss: r.fit.loss, lambda },
    calibration: r.calibration,
    train: positionMetrics(gate, fitF),
    held: positionMetrics(gate, heldF),
    firing: firingMetrics(gate, heldF),
    stateLayer,
  };
  await saveGate(v.out!, r.model, gateInfo(router, stateLayer, v, report));
  return report;
}

function gateInfo(router: Router, stateLayer: number | null, v: Values, report: TrainReport): GateInfo {
  return {
    stateLayer,
    glanceLayer: router.projections.layer,
    model: router.projections.model,
    projections: router.projections.hash,
    librarySize: router.list().filter((s) => !s.disableModelInvocation).length,
    training: {
      by: "gavel train-gate",
      tasks: v.tasks,
      batches: v.batches ?? "1-5",
      seed: v.seed ?? "1",
      createdAt: new Date().toISOString(),
      ...report,
    },
  };
}

const pct = (x: number) => (Number.isFinite(x) ? `${(100 * x).toFixed(1)}%` : "–");

function printReport(r: TrainReport, out: string): void {
  const f = r.firing;
  console.log(`trajectories: ${r.trajectories.train} training, ${r.trajectories.calibration} calibration, ${r.trajectories.held} held out${r.trajectories.skipped ? `, ${r.trajectories.skipped} skipped` : ""}; ${r.rows.train} training rows (${r.rows.positives} positive)`);
  console.log(`state: ${r.stateLayer === null ? "none (score features only)" : `layer ${r.stateLayer}`}; logistic fit λ=${r.fit.lambda}, ${r.fit.iterations} Newton steps${r.fit.converged ? "" : " (not converged)"}`);
  const c = r.calibration;
  if (c) console.log(`firing threshold ${c.threshold.toPrecision(4)} (folded into the bias), chosen on the calibration trajectories: F1 ${pct(c.f1)}, recall ${pct(c.recall)}, precision ${pct(c.precision)}, negatives fired ${pct(c.falseFireRate)}`);
  console.log(table(["rows", "n", "accuracy", "precision", "recall"], [
    ["training", String(r.train.n), pct(r.train.accuracy), pct(r.train.precision), pct(r.train.recall)],
    ["held out", String(r.held.n), pct(r.held.accuracy), pct(r.held.precision), pct(r.held.recall)],
  ]));
  console.log(`held-out firing (two consecutive tokens): ${f.onTime}/${f.positives} on time (recall ${pct(f.recall)}), ${f.early} early, ${f.missed} missed; ${f.falseFires}/${f.negatives} negatives fired; precision ${pct(f.precision)}`);
  // no held-out trajectory fired on time: no latency to report (the medians are NaN)
  if (Number.isFinite(f.medianFromNeedStart)) console.log(`latency: median ${f.medianFromNeedStart} tokens after the need's message starts, ${f.medianBeforeDecision} before its end`);
  else console.log("latency: none measured (no held-out trajectory fired on time)");
  console.log(`wrote ${out}`);
}

/** `gavel train-gate`: the live gate, trained on bash-agent trajectories. */
export const trainGate: Command = {
  summary: "train the live gate (when to route mid-rollout) on bash-agent trajectories",
  help: `usage: gavel train-gate --tasks T --out gate.json [options]

Builds bash-agent trajectories from benchmark tasks (SWE-Skills-Bench's tasks.jsonl): chore noise,
then the task at a decision point (a user request, or a ticket file's cat output); negatives carry a
chore ticket there. Runs the model over each with router.live(), and fits a logistic gate over the
glance's accumulated score features and the state at --state-layer. Held-out trajectories are read
token by token to report the gate's firing (two consecutive positive tokens).

  --tasks T               tasks JSONL {id, text, gold_skill_ids, batch}
  --out, -o F             the gate file to write (JSON; Gate.load reads it)
  --batches SPEC          default 1-5 (batches 6-10 are kept for testing: refused unless
                          --allow-test-batches)
  --seed N                seed of the trajectories, the split and the sampled positions (default 1)
  --per-task N            trajectories per task (default 1)
  --negatives N           negative trajectories (default: as many as positives)
  --max-tasks N           a seeded sample of N tasks
  --max-task-chars N      cut each task's text (default 1500)
  --held-out F            share held out, by task (default 0.2)
  --calibration F         share of the rest read at every position to choose the firing threshold
                          (the logit the two-token rule compares with; best firing F1), folded into
                          the bias (default 0.2; 0: threshold 0)
  --state-layer L         star (the router's ℓ*, each chunk's state in Model.generate: default),
                          final (the last layer, each chunk's finalState with generate's
                          finalState: true), none, or a layer number (not captured by generate)
  --window N              positive tokens at the end of a decision point (default 4)
  --random-positions N    negative rows per training trajectory besides message ends (default 32)
  --lambda X              L2 penalty on the standardised weights (default 0.1)
  --save-trajectories F   write the trajectories (JSONL)
  --trajectories-only     only build (and save) the trajectories: no model
${routerOptionsHelp}

The skills the gate's scores come from are the bank's: install the library first (gavel install).`,
  options,
  async run(args) {
    const { values } = parseFlags("train-gate", { args, options });
    if (!values.tasks || (!values.out && !values["trajectories-only"])) {
      throw new UsageError("gavel train-gate needs --tasks T and --out F (or --trajectories-only)", this.help);
    }
    if (values.out && values["trajectories-only"]) {
      throw new UsageError("gavel train-gate --trajectories-only writes no gate file: drop --out (--save-trajectories F keeps the trajectories)", this.help);
    }
    // the output paths first: a bad one fails in one line, before the trajectories and the model
    const save = values["save-trajectories"];
    if (values.out) await checkOutPath(values.out, "the gate file");
    if (save) await checkOutPath(save, "the trajectories file", { flag: "--save-trajectories" });
    const all = await trajectoriesOf(values);
    if (save) {
      await writeFileDurable(save, all.map((t) => JSON.stringify(t)).join("\n") + "\n").catch((err: unknown) => {
        throw errnoError(err, `--save-trajectories: cannot write ${save}`);
      });
    }
    console.error(`trajectories: ${all.length} (${all.filter((t) => t.needsSkill).length} need a skill)`);
    if (values["trajectories-only"]) return 0;
    const report = await withInterrupt((signal) => withRouter(values, (router) => train(router, values, all, signal)));
    if (values.json) console.log(JSON.stringify(report, null, 2));
    else printReport(report, values.out!);
    return 0;
  },
};


