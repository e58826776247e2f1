import { parseArgs } from "node:util";
import { invalidArgument } from "../../errors.js";
import { Model } from "../../model/Model.js";
import { loadSkills } from "../../skills/index.js";
import {
  DEFAULT_LAYER_MAX_TOKENS,
  DEFAULT_LAYER_SAMPLE,
  defaultLayerChoicePath,
  layerChoiceOf,
  scanLayers,
  writeLayerChoice,
  type LayerScanProgress,
} from "../../train/layer.js";
import { table } from "./common.js";
import type { Command } from "./types.js";

const SPARK = "▁▂▃▄▅▆▇█";

/** One block character per value, scaled between the curve's min and max (NaN as a space). */
export function sparkline(values: ArrayLike<number>): string {
  const finite = Array.from(values).filter((v) => Number.isFinite(v));
  const lo = Math.min(...finite);
  const hi = Math.max(...finite);
  let out = "";
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (!Number.isFinite(v)) out += " ";
    else out += SPARK[hi > lo ? Math.round(((v - lo) / (hi - lo)) * (SPARK.length - 1)) : 0];
  }
  return out;
}

function int(v: string | undefined, name: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n)) throw invalidArgument(`--${name} must be an integer, got ${v}`);
  return n;
}

/** A one-line bar on a terminal; a line every 10% elsewhere (logs, CI). */
function progress(stream: NodeJS.WriteStream): (p: LayerScanProgress) => void {
  let lastPct = -10;
  return (p) => {
    const pct = Math.floor((100 * p.done) / Math.max(1, p.total));
    if (stream.isTTY) {
      stream.write(`\rscanning ${p.done}/${p.total} ${p.skill.slice(0, 40).padEnd(40)}`);
      if (p.done === p.total) stream.write("\n");
    } else if (pct >= lastPct + 10 || p.done === p.total) {
      lastPct = pct;
      stream.write(`scanned ${p.done}/${p.total} (${pct}%)\n`);
    }
  };
}

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
  async run(args) {
    const { positionals, values } = parseArgs({
      args,
      allowPositionals: true,
      options: {
        model: { type: "string", short: "m" },
        sample: { type: "string" },
        "max-tokens": { type: "string" },
        seed: { type: "string" },
        "keep-sink": { type: "boolean" },
        out: { type: "string", short: "o" },
        projections: { type: "string", short: "p" },
        bank: { type: "string", short: "b" },
        context: { type: "string" },
        threads: { type: "string" },
        "gpu-layers": { type: "string" },
        json: { type: "boolean" },
      },
    });
    if (positionals.length !== 1) {
      console.error(this.help);
      return 2;
    }
    const modelPath = values.model || process.env.GAVEL_MODEL;
    if (!modelPath) throw invalidArgument("no model: pass --model <file.gguf> or set GAVEL_MODEL");
    const maxTokens = int(values["max-tokens"], "max-tokens") ?? DEFAULT_LAYER_MAX_TOKENS;
    const out =
      values.out ??
      defaultLayerChoicePath({ projections: values.projections || process.env.GAVEL_PROJECTIONS || undefined, bank: values.bank || process.env.GAVEL_BANK || undefined });

    const controller = new AbortController();
    const onSigint = () => controller.abort();
    process.once("SIGINT", onSigint);
    try {
      const library = await loadSkills(positionals[0], { signal: controller.signal });
      if (library.failed.length) process.stderr.write(`skipped ${library.failed.length} skills that failed to load\n`);
      // The scaffolding before the keyed span is short; 256 tokens leave room for it.
      const model = await Model.load(modelPath, {
        contextSize: int(values.context, "context") ?? maxTokens + 256,
        sequences: 2,
        threads: int(values.threads, "threads"),
        gpuLayers: int(values["gpu-layers"], "gpu-layers"),
      });
      try {
        const scan = await scanLayers(model, library.skills, {
          sample: int(values.sample, "sample"),
          maxTokens,
          seed: int(values.seed, "seed"),
          dropTopNorm: !values["keep-sink"],
          signal: controller.signal,
          onProgress: progress(process.stderr),
        });
        const choice = await layerChoiceOf(model, scan);
        await writeLayerChoice(out, choice);
        if (values.json) {
          console.log(
            JSON.stringify(
              {
                layer: scan.layer,
                curve: Array.from(scan.curve),
                q25: Array.from(scan.q25),
                q75: Array.from(scan.q75),
                skills: scan.perSkill.length,
                skipped: scan.skipped,
                tokensPerSkill: scan.maxTokens,
                meanTokens: scan.tokens.reduce((a, b) => a + b, 0) / Math.max(1, scan.tokens.length),
                dropTopNorm: scan.dropTopNorm,
                seconds: scan.seconds,
                model: choice.model,
                out,
              },
              null,
              2,
            ),
          );
        } else {
          const rows = Array.from(scan.curve, (s, l) => [
            String(l),
            s,
            scan.q25[l],
            scan.q75[l],
            Math.exp(s),
            l === scan.layer ? "◀ ℓ*" : "",
          ]);
          console.log(table(["layer", "median S1", "q25", "q75", "exp(S1)", ""], rows));
          console.log(`\nS1 by layer: ${sparkline(scan.curve)}  (0 … ${scan.curve.length - 1})`);
          const mean = scan.tokens.reduce((a, b) => a + b, 0) / Math.max(1, scan.tokens.length);
          console.log(
            `ℓ* = ${scan.layer} of ${model.info.nLayer} layers (floor of the valley, layers 0 and ${model.info.nLayer - 1} excluded); ` +
              `${scan.perSkill.length} skills, ${mean.toFixed(0)} keyed tokens on average (cap ${scan.maxTokens}), ${scan.seconds.toFixed(1)} s`,
          );
          if (model.info.contextLength > 0 && model.info.contextLength < scan.maxTokens + 256) {
            console.log(`spans end at the model's trained context of ${model.info.contextLength} tokens (later positions are out of distribution)`);
          }
          if (scan.skipped.length) console.log(`skipped ${scan.skipped.length}: ${scan.skipped.slice(0, 3).map((s) => `${s.id} (${s.reason})`).join(", ")}`);
          console.log(`wrote ${out}`);
        }
        return 0;
      } finally {
        await model.dispose();
      }
    } finally {
      process.removeListener("SIGINT", onSigint);
    }
  },
};
