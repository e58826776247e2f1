import { parseArgs } from "node:util";
import { trainProjections } from "../../train/pipeline.js";
import { TRAIN_DEFAULTS } from "../../train/trainer.js";
import { intArg, listArg, numberArg } from "../ui/options.js";
import { openModel } from "./common.js";
import type { Command } from "./types.js";

/** `gavel train`: W_q and W_s trained on a library. */
export const train: Command = {
  summary: "train W_q and W_s (the glance head) on a skill library",
  help: `usage: gavel train --model M --library L (--pairs P | --self-supervised) --out proj.gguf [options]

  --pairs P             JSONL of { "query": ..., "gold_skill_ids": [...] }
  --self-supervised     query = a skill's description (or one sentence of it), positive = the skill
                        rendered without its description; negatives resampled each step
  --layer N | --layer-file F   ℓ* (default: the gavel layer JSON's choice, else 70% depth)
  --dim D               rows of W_q / W_s (default 768)
  --steps N             AdamW steps (default 1000; appendix C: 24,000)
  --lr X                learning rate (default 1e-3)
  --batch-tasks N       most tasks per step (default ${TRAIN_DEFAULTS.batchTasks}; paper 256)
  --batch-tokens N      most rows of states per step (default ${TRAIN_DEFAULTS.batchTokens}; paper 200,000)
  --negatives N         negatives per task (default ${TRAIN_DEFAULTS.negatives})
  --hard-negatives N    of those, N drawn from the task's BM25 look-alikes (top hits that are
                        neither its gold nor a copy of it: same name or description); default 0
  --in-batch            every skill a batch carries is also a negative of every other task
  --cache DIR           keep backbone states on disk (f16, tokens × n_embd × 2 bytes) across runs
  --resume              continue from <out>.ckpt (and <out>.finetune.ckpt)
  --checkpoint-every N  (default ${TRAIN_DEFAULTS.checkpointEvery})
  --finetune-steps N    then W_q alone against the ε-cover banks (lr --finetune-lr, default 1e-4)
  --eps X               ε of the banks (default 0.83)
  --exclude A,B         skill ids/names that never give a query or a gold label
  --exclude-tasks F     JSONL task file: pairs whose query equals a task text are dropped
  --val-fraction X      held-out pairs (default 0.05); --val-every N reports Hit@1 / R@10 by m̄
  --skill-tokens N      most keyed tokens per skill (default 8192)
  --limit N             read only the first N library entries
  --seed N, --threads N, --context N`,
  async run(args) {
    const { values } = parseArgs({
      args,
      options: {
        model: { type: "string", short: "m" }, library: { type: "string", short: "l" }, pairs: { type: "string" },
        "self-supervised": { type: "boolean" }, out: { type: "string", short: "o" }, layer: { type: "string" },
        "layer-file": { type: "string" }, dim: { type: "string" }, steps: { type: "string" }, lr: { type: "string" },
        "batch-tasks": { type: "string" }, "batch-tokens": { type: "string" }, negatives: { type: "string" },
        "hard-negatives": { type: "string" }, "in-batch": { type: "boolean" },
        cache: { type: "string" }, resume: { type: "boolean" }, "checkpoint-every": { type: "string" },
        "finetune-steps": { type: "string" }, "finetune-lr": { type: "string" }, eps: { type: "string" },
        exclude: { type: "string" }, "exclude-tasks": { type: "string" }, "val-fraction": { type: "string" },
        "val-every": { type: "string" }, "skill-tokens": { type: "string" }, limit: { type: "string" },
        seed: { type: "string" }, threads: { type: "string" }, context: { type: "string" },
      },
    });
    if (!values.out || !values.library || !values.pairs === !values["self-supervised"]) {
      console.error(this.help);
      return 2;
    }
    const model = await openModel({ model: values.model, context: values.context ?? "4096", threads: values.threads });
    try {
      const t0 = performance.now();
      const r = await trainProjections(model, {
        library: values.library, pairs: values.pairs, selfSupervised: values["self-supervised"], out: values.out,
        layer: intArg(values.layer, "layer"), layerFile: values["layer-file"], dim: intArg(values.dim, "dim"),
        steps: intArg(values.steps, "steps"), lr: numberArg(values.lr, "lr"), batchTasks: intArg(values["batch-tasks"], "batch-tasks"),
        batchTokens: intArg(values["batch-tokens"], "batch-tokens"), negatives: intArg(values.negatives, "negatives"),
        hardNegatives: intArg(values["hard-negatives"], "hard-negatives"), inBatch: values["in-batch"],
        cache: values.cache, resume: values.resume, checkpointEvery: intArg(values["checkpoint-every"], "checkpoint-every"),
        finetuneSteps: intArg(values["finetune-steps"], "finetune-steps"), finetuneLr: numberArg(values["finetune-lr"], "finetune-lr"),
        eps: numberArg(values.eps, "eps"), exclude: listArg(values.exclude),
        excludeTasks: values["exclude-tasks"], valFraction: numberArg(values["val-fraction"], "val-fraction"),
        valEvery: intArg(values["val-every"], "val-every"), skillTokens: intArg(values["skill-tokens"], "skill-tokens"),
        limit: intArg(values.limit, "limit"), seed: intArg(values.seed, "seed"), threads: intArg(values.threads, "threads"),
        trainedBy: `gavel train ${args.join(" ")}`,
        onLog: (line) => console.error(line),
        onProgress: (p) => {
          const val = p.val ? `  val Hit@1 ${p.val.hit1.toFixed(3)} R@10 ${p.val.recall10.toFixed(3)}` : "";
          console.error(`${p.phase} step ${p.step}/${p.steps}  loss ${p.loss.toFixed(4)}  |g| ${p.gradNorm.toExponential(2)}  ${p.tasks} tasks ${p.tokens} tok  ${p.tokensPerSec.toFixed(0)} tok/s  ${p.stepsPerSec.toFixed(2)} steps/s${val}`);
        },
      });
      console.log(`wrote ${values.out}: layer ${r.layer}, dim ${r.projections.dim}, ${r.skills} skills, ${r.trainPairs} train / ${r.valPairs} val tasks, ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    } finally {
      await model.dispose();
    }
    return 0;
  },
};
