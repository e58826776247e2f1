import { appendFile } from "node:fs/promises";
import { trainProjections, type TrainProjectionsOptions } from "../train/pipeline.js";
import { parseQueryKinds } from "../train/queries/index.js";
import { assertTrainerDevice, TRAIN_DEFAULTS, type TrainProgress } from "../train/trainer.js";
import { type Command, intArg, invalidArgument, listArg, numberArg, openModel, parseFlags, type ParsedFlags, UsageError, withInterrupt } from "gavel-router/internal";
import type { Model } from "gavel-router";

/** Exit status of a run stopped by --stop-after before the schedule's end (run again with --resume). */
export const EXIT_UNFINISHED = 75;

const OPTIONS = {
  model: { type: "string", short: "m" }, library: { type: "string", short: "l" }, pairs: { type: "string" },
  "extra-pairs": { type: "string" }, "extra-repeat": { type: "string" },
  "self-supervised": { type: "boolean" }, queries: { type: "string" }, "queries-per-skill": { type: "string" },
  out: { type: "string", short: "o" }, layer: { type: "string" },
  "layer-file": { type: "string" }, dim: { type: "string" }, steps: { type: "string" }, lr: { type: "string" },
  "batch-tasks": { type: "string" }, "batch-tokens": { type: "string" }, negatives: { type: "string" },
  "hard-negatives": { type: "string" }, "glance-negatives": { type: "string" }, "refresh-every": { type: "string" },
  "refresh-tasks": { type: "string" }, "glance-pool": { type: "string" }, "in-batch": { type: "boolean" },
  cache: { type: "string" }, resume: { type: "boolean" }, "checkpoint-every": { type: "string" }, "stop-after": { type: "string" },
  "finetune-steps": { type: "string" }, "finetune-lr": { type: "string" }, eps: { type: "string" },
  exclude: { type: "string" }, "exclude-tasks": { type: "string" }, "val-fraction": { type: "string" },
  "val-every": { type: "string" }, "log-every": { type: "string" }, "log-file": { type: "string" }, "states-workers": { type: "string" },
  "skill-tokens": { type: "string" }, limit: { type: "string" }, "prepare-only": { type: "boolean" },
  seed: { type: "string" }, threads: { type: "string" }, context: { type: "string" },
  device: { type: "string" }, precision: { type: "string" }, "glance-vote": { type: "string" },
} as const;

type Values = ParsedFlags<{ options: typeof OPTIONS; args: string[] }>["values"];

/** `--glance-vote ROWS/SHARE` (ROWS uniform or idf, SHARE in [0, 1]), or undefined when absent. */
function glanceVote(v: string | undefined): { glanceRowWeights: "uniform" | "idf"; glanceVoteShare: number } | undefined {
  if (v === undefined) return undefined;
  const m = /^(uniform|idf)\/([0-9]*\.?[0-9]+(?:e-?[0-9]+)?)$/.exec(v);
  const share = m ? Number(m[2]) : NaN;
  if (!m || !(share >= 0 && share <= 1)) throw invalidArgument(`--glance-vote must be uniform/SHARE or idf/SHARE with SHARE in [0, 1] (e.g. idf/0.01, uniform/0), got ${JSON.stringify(v)}`);
  return { glanceRowWeights: m[1] as "uniform" | "idf", glanceVoteShare: share };
}

/** The pipeline's options from the flags (progress and log callbacks added by the caller). */
function pipelineOptions(values: Values, args: string[]): TrainProjectionsOptions {
  return {
    library: values.library!, pairs: values.pairs, extraPairs: values["extra-pairs"], extraRepeat: intArg(values["extra-repeat"], "extra-repeat", { min: 1 }), selfSupervised: values["self-supervised"], out: values.out!,
    queries: values.queries === undefined ? undefined : parseQueryKinds(values.queries), queriesPerSkill: intArg(values["queries-per-skill"], "queries-per-skill", { min: 1 }),
    layer: intArg(values.layer, "layer"), layerFile: values["layer-file"], dim: intArg(values.dim, "dim"),
    steps: intArg(values.steps, "steps"), lr: numberArg(values.lr, "lr"), batchTasks: intArg(values["batch-tasks"], "batch-tasks"),
    batchTokens: intArg(values["batch-tokens"], "batch-tokens"), negatives: intArg(values.negatives, "negatives"),
    hardNegatives: intArg(values["hard-negatives"], "hard-negatives"), glanceNegatives: intArg(values["glance-negatives"], "glance-negatives", { min: 0 }),
    refreshEvery: intArg(values["refresh-every"], "refresh-every", { min: 1 }), refreshTasks: intArg(values["refresh-tasks"], "refresh-tasks", { min: 1 }),
    glancePool: intArg(values["glance-pool"], "glance-pool", { min: 1 }), inBatch: values["in-batch"],
    cache: values.cache, resume: values.resume, checkpointEvery: intArg(values["checkpoint-every"], "checkpoint-every"),
    stopAfterSeconds: numberArg(values["stop-after"], "stop-after"), prepareOnly: values["prepare-only"],
    finetuneSteps: intArg(values["finetune-steps"], "finetune-steps"), finetuneLr: numberArg(values["finetune-lr"], "finetune-lr"),
    eps: numberArg(values.eps, "eps"), exclude: listArg(values.exclude),
    excludeTasks: values["exclude-tasks"], valFraction: numberArg(values["val-fraction"], "val-fraction"),
    valEvery: intArg(values["val-every"], "val-every"), skillTokens: intArg(values["skill-tokens"], "skill-tokens"),
    limit: intArg(values.limit, "limit"), seed: intArg(values.seed, "seed"), threads: intArg(values.threads, "threads"),
    device: values.device as TrainProjectionsOptions["device"], precision: values.precision as TrainProjectionsOptions["precision"],
    ...glanceVote(values["glance-vote"]),
    trainedBy: `gavel train ${args.join(" ")}`,
  };
}

/** One progress line: loss, gradient norm, batch, speed, and validation Hit@1 / R@10 / R@20 when computed. */
export function progressLine(p: TrainProgress): string {
  const val = p.val ? `  val Hit@1 ${p.val.hit1.toFixed(3)} R@10 ${p.val.recall10.toFixed(3)} R@20 ${p.val.recall20.toFixed(3)}` : "";
  return `${p.phase} step ${p.step}/${p.steps}  loss ${p.loss.toFixed(4)}  |g| ${p.gradNorm.toExponential(2)}  ${p.tasks} tasks ${p.tokens} tok  ${p.tokensPerSec.toFixed(0)} tok/s  ${p.stepsPerSec.toFixed(2)} steps/s${val}`;
}

/** `gavel train`: W_q and W_s trained on a library. */
export const train: Command = {
  summary: "train W_q and W_s (the glance head) on a skill library",
  help: `usage: gavel train --model M --library L (--queries K | --pairs P | --self-supervised) --out proj.gguf [options]

  --queries K           pseudo-queries generated from every skill, K = a comma list of
                        description,cloze,triggers,headings,composite (or all); each against its skill
                        rendered as installed, the copied text's tokens masked out (docs/TRAINING.md)
  --queries-per-skill N (default 2)
  --pairs P             JSONL of { "query": ..., "gold_skill_ids": [...] }
  --extra-pairs P       more { query, gold_skill_ids } rows added to the training split of any mode
                        (e.g. pseudo-labelled task statements beside --queries); --extra-repeat N
                        trains on each N times (default 1)
  --self-supervised     query = a skill's description (or one sentence of it), positive = the skill
                        rendered without its description (the earlier recipe)
  --layer N | --layer-file F   ℓ* (default: the gavel layer JSON's choice, else 70% depth)
  --dim D               rows of W_q / W_s (default 768)
  --steps N             AdamW steps (default 1000; appendix C: 24,000)
  --lr X                learning rate (default 1e-3)
  --batch-tasks N       most tasks per step (default ${TRAIN_DEFAULTS.batchTasks}; paper 256)
  --batch-tokens N      most rows of states per step (default ${TRAIN_DEFAULTS.batchTokens}; paper 200,000)
  --negatives N         negatives per task (default ${TRAIN_DEFAULTS.negatives})
  --hard-negatives N    of those, N drawn from the task's BM25 look-alikes (top hits that are
                        neither its gold nor a copy of it: same name or description); default 0
  --glance-negatives N  and N from the current glance's top skills (W_q / W_s as trained so far),
                        recomputed every --refresh-every steps (default ${TRAIN_DEFAULTS.refreshEvery}) for all train
                        tasks, or --refresh-tasks N of them in turn; --glance-pool N kept (default ${TRAIN_DEFAULTS.glancePool})
  --in-batch            every skill a batch carries is also a negative of every other task
  --cache DIR           keep backbone states on disk (f16, tokens × n_embd × 2 bytes) across runs
  --resume              continue from <out>.ckpt (and <out>.finetune.ckpt)
  --checkpoint-every N  (default ${TRAIN_DEFAULTS.checkpointEvery})
  --stop-after S        stop training S seconds into this call (checkpoint written, exit ${EXIT_UNFINISHED});
                        run again with --resume to go on (a device call is time-limited)
  --prepare-only        tokenize only: write the masks and BM25 look-alikes beside --cache (no forward
                        pass, no training), for a later run elsewhere to read back
  --finetune-steps N    then W_q alone against the ε-cover banks (lr --finetune-lr, default 1e-4)
  --eps X               ε of the banks (default 0.83)
  --glance-vote R/S     the glance's vote written into the projections: row weights R (uniform or
                        idf), vote share S in [0, 1] (a task token votes for its max(10, round(S·N))
                        best of N skills, at most 1,024); default ${TRAIN_DEFAULTS.glanceRowWeights}/${TRAIN_DEFAULTS.glanceVoteShare} (chosen on
                        gavel-mini), uniform/0 the paper's vote
  --exclude A,B         skill ids/names that never give a query or a gold label
  --exclude-tasks F     JSONL task file: queries equal to a task text or sharing 12 words in a row
                        with one are dropped (the skills stay in the library)
  --val-fraction X      held-out pairs (default 0.05); --val-every N reports Hit@1 / R@10 / R@20 by m̄
  --log-every N         print a progress line every N steps (default 1) and on validation steps
  --log-file F          append every step's progress to F as JSON lines
  --skill-tokens N      most keyed tokens per skill (default 8192)
  --limit N             read only the first N library entries
  --device cpu|cuda     where the trainer's step runs (default cpu; cuda needs a CUDA build of the
                        addon, docs/DEVICE.md, else CUDA_UNAVAILABLE before any work)
  --precision bf16|fp32 the CUDA trainer's max-sim (default bf16: tensor cores pick the argmax key,
                        rescored in fp32; fp32: the CPU's exact twin)
  --states-workers N    N instances of the model compute the states pass side by side (default 1)
  --seed N, --threads N, --context N`,
  options: OPTIONS,
  async run(args) {
    const { values } = parseFlags("train", { args, options: OPTIONS });
    const modes = [values.pairs, values["self-supervised"], values.queries].filter((v) => v !== undefined && v !== false).length;
    if (!values.out || !values.library || modes !== 1) {
      throw new UsageError("gavel train needs --out, --library and exactly one of --queries, --pairs, --self-supervised", this.help);
    }
    const opts = pipelineOptions(values, args);
    // Before the model loads: a --device the addon cannot serve fails at once.
    assertTrainerDevice(opts.device, opts.precision);
    const logEvery = intArg(values["log-every"], "log-every", { min: 1 }) ?? 1;
    const logFile = values["log-file"];
    let pending = Promise.resolve();
    const model = await openModel({ model: values.model, context: values.context, threads: values.threads });
    // --states-workers N: N − 1 more instances of the model share the states pass (a GPU's small-model
    // passes are bound by launches and host work; several contexts keep it busier)
    const workers: Model[] = [];
    const nWorkers = intArg(values["states-workers"], "states-workers", { min: 1 }) ?? 1;
    try {
      for (let i = 1; i < nWorkers; i++) workers.push(await openModel({ model: values.model, context: values.context, threads: values.threads }));
    } catch (e) {
      for (const w of workers) await w.dispose();
      await model.dispose();
      throw e;
    }
    try {
      const t0 = performance.now();
      // Ctrl-C: the run stops at its next step, writes its checkpoint and exits 130 (--resume goes on)
      const r = await withInterrupt((signal) => trainProjections(model, {
        ...opts,
        signal,
        statesWorkers: workers,
        onLog: (line) => console.error(line),
        onProgress: (p) => {
          if (p.val || p.step % logEvery === 0 || p.step === p.steps) console.error(progressLine(p));
          if (logFile) pending = pending.then(() => appendFile(logFile, `${JSON.stringify({ time: new Date().toISOString(), ...p })}\n`));
        },
      }));
      await pending;
      const secs = ((performance.now() - t0) / 1000).toFixed(1);
      const kinds = r.kinds ? ` (${Object.entries(r.kinds).map(([k, n]) => `${k} ${n}`).join(", ")})` : "";
      if (opts.prepareOnly) {
        console.log(`prepared ${r.prepared}: ${r.skills} skills, ${r.trainPairs} train / ${r.valPairs} val tasks, ${secs} s (no forward pass; copy it beside the states cache where training runs)`);
        return 0;
      }
      if (!r.finished) {
        console.log(`stopped at main step ${r.mainSteps}, fine-tune step ${r.finetuneSteps} after ${secs} s: run again with --resume`);
        return EXIT_UNFINISHED;
      }
      console.log(`wrote ${values.out}: layer ${r.layer}, dim ${r.projections!.dim}, ${r.skills} skills, ${r.trainPairs} train${kinds} / ${r.valPairs} val tasks, ${secs} s`);
      const v = (name: string, m?: { hit1: number; recall10: number; recall20: number; tasks: number }) =>
        m && console.log(`${name} val (${m.tasks} held-out queries, m̄ over the library): Hit@1 ${m.hit1.toFixed(3)} R@10 ${m.recall10.toFixed(3)} R@20 ${m.recall20.toFixed(3)}`);
      v(`main (${r.mainSteps} steps)`, r.val);
      v(`fine-tune (${r.finetuneSteps} steps)`, r.finetuneVal);
    } finally {
      for (const w of workers) await w.dispose();
      await model.dispose();
    }
    return 0;
  },
};
