/**
 * `gavel layer`: scans a library's skills for the glance's layer ℓ* (train/layer.ts) and prints the
 * entropy curve, writing the choice for `gavel train`.
 */
import { bankOptions, checkOutPath, type Command, config, intArg, invalidArgument, modelOptions, Progress, parseFlags, sparkline, table, withInterrupt, UsageError } from "gavel-router/internal";
import { loadSkills, Model } from "gavel-router";
import {
  DEFAULT_LAYER_MAX_TOKENS,
  DEFAULT_LAYER_SAMPLE,
  defaultLayerChoicePath,
  layerChoiceOf,
  scanLayers,
  writeLayerChoice,
  type LayerChoice,
  type LayerScan,
} from "../train/layer.js";

/** `gavel layer`'s options. */
const LAYER_OPTIONS = {
  ...modelOptions,
  ...bankOptions,
  sample: { type: "string" },
  "max-tokens": { type: "string" },
  seed: { type: "string" },
  "keep-sink": { type: "boolean" },
  out: { type: "string", short: "o" },
} as const;

/** `gavel layer`: ℓ* picked at the floor of the entropy valley. */
export const layer: Command = {
  summary: "pick the glance's layer ℓ* at the floor of the model's entropy valley (appendix B)",
  help: `usage: gavel layer <dir|library.jsonl[.gz]> --model M [options]

For a seeded sample of skills, renders each as r(s), runs one forward pass, and takes for every layer
the matrix entropy S1 = -Σ p log p of the spectrum of the keyed span's token states (header + body,
the tokens the glance reads), top-norm (sink) token dropped. Prints the median curve and picks ℓ*, the
layer of minimum median entropy excluding layer 0 and the last layer, and writes it for training.

  --model, -m M        the agent model (GGUF)                          [$GAVEL_MODEL]
  --sample N           skills sampled from the library (default ${DEFAULT_LAYER_SAMPLE})
  --max-tokens N       keyed tokens per skill, the first ones (default ${DEFAULT_LAYER_MAX_TOKENS})
  --seed S             seed of the sample (default 0)
  --keep-sink          do not drop the top-norm token
  --out, -o F          where to write the choice (default: gavel-layer.json next to
                       --projections, else next to --bank, else in the working directory)
  --projections, -p P  projections the trainer will write (locates the default --out) [$GAVEL_PROJECTIONS]
  --bank, -b DIR       bank directory (locates the default --out)                   [$GAVEL_BANK]
  --context N          context size (default: max-tokens + 256)
  --threads N          CPU threads
  --gpu-layers N       layers offloaded to a GPU (CUDA build)
  --json               print JSON`,
  options: LAYER_OPTIONS,
  async run(args) {
    const { positionals, values } = parseFlags("layer", { args, allowPositionals: true, options: LAYER_OPTIONS });
    if (positionals.length !== 1) {
      throw new UsageError("gavel layer needs one skill folder or library file", this.help);
    }
    const modelPath = values.model || config().model;
    if (!modelPath) throw invalidArgument("no model: pass --model <file.gguf> or set GAVEL_MODEL");
    const maxTokens = intArg(values["max-tokens"], "max-tokens") ?? DEFAULT_LAYER_MAX_TOKENS;
    const out =
      values.out ??
      defaultLayerChoicePath({ projections: values.projections || config().projections, bank: values.bank || config().bank });
    // before the scan (the writer makes a missing folder): a folder in the file's place fails at once
    await checkOutPath(out, "the layer choice file", { makesFolder: true });

    return withInterrupt(async (signal) => {
      const library = await loadSkills(positionals[0], { signal });
      if (library.failed.length) process.stderr.write(`skipped ${library.failed.length} skills that failed to load\n`);
      // The scaffolding before the keyed span is short; 256 tokens leave room for it.
      const model = await Model.load(modelPath, {
        contextSize: intArg(values.context, "context") ?? maxTokens + 256,
        sequences: 2,
        threads: intArg(values.threads, "threads"),
        gpuLayers: intArg(values["gpu-layers"], "gpu-layers"),
      });
      try {
        // a line rewritten in place on a terminal; every 10% elsewhere
        const progress = new Progress(process.stderr, { prefix: "scanning ", every: 10, logLine: (done, total, pct) => `scanned ${done}/${total} (${pct}%)` });
        const scan = await scanLayers(model, library.skills, {
          sample: intArg(values.sample, "sample"),
          maxTokens,
          seed: intArg(values.seed, "seed"),
          dropTopNorm: !values["keep-sink"],
          signal,
          onProgress: (p) => progress.update(p.done, p.total, p.skill),
        });
        const choice = await layerChoiceOf(model, scan);
        await writeLayerChoice(out, choice);
        if (values.json) console.log(JSON.stringify(scanJson(scan, choice, out), null, 2));
        else printScan(scan, model, out);
        return 0;
      } finally {
        await model.dispose();
      }
    });
  },
};

function meanTokens(scan: LayerScan): number {
  return scan.tokens.reduce((a, b) => a + b, 0) / Math.max(1, scan.tokens.length);
}

/** The scan as `--json` prints it. */
function scanJson(scan: LayerScan, choice: LayerChoice, out: string) {
  return {
    layer: scan.layer,
    curve: Array.from(scan.curve),
    q25: Array.from(scan.q25),
    q75: Array.from(scan.q75),
    skills: scan.perSkill.length,
    skipped: scan.skipped,
    tokensPerSkill: scan.maxTokens,
    meanTokens: meanTokens(scan),
    dropTopNorm: scan.dropTopNorm,
    seconds: scan.seconds,
    model: choice.model,
    out,
  };
}

/** The scan as text: the curve by layer, a sparkline, ℓ* and what the scan read. */
function printScan(scan: LayerScan, model: Model, out: string): void {
  const rows = Array.from(scan.curve, (s, l) => [String(l), s, scan.q25[l], scan.q75[l], Math.exp(s), l === scan.layer ? "◀ ℓ*" : ""]);
  console.log(table(["layer", "median S1", "q25", "q75", "exp(S1)", ""], rows));
  console.log(`\nS1 by layer: ${sparkline(scan.curve)}  (0 … ${scan.curve.length - 1})`);
  console.log(
    `ℓ* = ${scan.layer} of ${model.info.nLayer} layers (floor of the valley, layers 0 and ${model.info.nLayer - 1} excluded); ` +
      `${scan.perSkill.length} skills, ${meanTokens(scan).toFixed(0)} keyed tokens on average (cap ${scan.maxTokens}), ${scan.seconds.toFixed(1)} s`,
  );
  if (model.info.contextLength > 0 && model.info.contextLength < scan.maxTokens + 256) {
    console.log(`spans end at the model's trained context of ${model.info.contextLength} tokens (later positions are out of distribution)`);
  }
  if (scan.skipped.length) console.log(`skipped ${scan.skipped.length}: ${scan.skipped.slice(0, 3).map((s) => `${s.id} (${s.reason})`).join(", ")}`);
  console.log(`wrote ${out}`);
}
