import { parseArgs } from "node:util";
import { invalidArgument } from "../../errors.js";
import { calibrate, PAPER_RULING } from "../../eval/calibrate.js";
import { checkPerQueryOutput, readPerQuery, writePerQuery } from "../../eval/io.js";
import type { PerQueryRecord } from "../../eval/evaluate.js";
import { Projections, PROJECTION_DEFAULTS } from "../../projections/projections.js";
import { intArg } from "../ui/options.js";
import { routerOptions, routerOptionsHelp } from "./common.js";
import { runEvaluation, taskOptions, taskOptionsHelp } from "./eval.js";
import type { Command } from "./types.js";

/** `gavel calibrate`: the ruling's α, γ, Δ fitted on validation tasks. */
export const calibrateCommand: Command = {
  summary: "fit the ruling's α, γ and Δ on validation tasks (and store them in the projections)",
  help: `usage: gavel calibrate --per-query F [--projections P] [--write] [options]
       gavel calibrate --tasks T --library L [--library …] --model M --projections P --bank B --batches 1-5 [--write]

Fits α, γ (S = g + αL + γV) and Δ (the glance's shortlist margin) by maximising Hit@1 on
validation tasks; ties go to the smaller average shortlist, then to the paper's values
(α=${PAPER_RULING.alpha}, γ=${PAPER_RULING.gamma}, Δ=${PAPER_RULING.delta}). Never calibrate on the tasks you report on.
When the records carry the lexical expert's read-outs (scripts/device/lexical-records.ts), its
temperature T is fitted by the gold's likelihood and β (S = g + αL + γV + βB) with α, γ, Δ;
β stays 0 unless it raises validation Hit@1.

  --per-query F         per-query records from gavel eval --per-query (on the validation split;
                        JSONL, or gzipped when F ends in .gz)
${taskOptionsHelp}
  --save-per-query F    (with --tasks) also keep the records computed here
  --write               store α, γ, Δ in the projections file (--projections)
  --out P2              write the calibrated projections to P2 instead of over P
  --max-shortlist N     most candidates a verdict examines (default: the projections')
  --no-lexical          leave the lexical expert out (β = 0) even when the records carry it
${routerOptionsHelp}`,
  async run(args) {
    const { values } = parseArgs({
      args,
      options: {
        ...routerOptions,
        ...taskOptions,
        "per-query": { type: "string" },
        "save-per-query": { type: "string" },
        write: { type: "boolean" },
        out: { type: "string", short: "o" },
        "max-shortlist": { type: "string" },
        "no-lexical": { type: "boolean" },
      },
    });
    const fromFile = values["per-query"];
    if (!fromFile === !values.tasks) {
      console.error(this.help);
      return 2;
    }
    const projectionsPath = values.projections ?? process.env.GAVEL_PROJECTIONS;
    const write = values.write || values.out !== undefined;
    if (write && !projectionsPath) throw invalidArgument("--write needs --projections <file.gguf> (the file whose α, γ, Δ are set)");
    if (values["save-per-query"]) checkPerQueryOutput(values["save-per-query"]);
    // The projections and options are read up front so that a bad one fails before minutes of evaluation.
    const projections = projectionsPath ? await Projections.load(projectionsPath) : undefined;
    const maxShortlist = intArg(values["max-shortlist"], "max-shortlist", { min: 1 }) ?? projections?.maxShortlist ?? PROJECTION_DEFAULTS.maxShortlist;

    let records: PerQueryRecord[];
    if (fromFile) records = await readPerQuery(fromFile);
    else {
      const result = await runEvaluation(values, ["glance", "ruling"]);
      records = result.perQuery;
      if (values["save-per-query"]) await writePerQuery(values["save-per-query"], records);
    }
    const fit = calibrate(records, { maxShortlist, ...(values["no-lexical"] ? { lexical: false } : {}) });
    let wrote: string | undefined;
    if (write) {
      wrote = values.out ?? projectionsPath!;
      const { alpha, gamma, delta, beta, lexicalTemperature } = fit;
      await projections!.withCalibration({ alpha, gamma, delta, beta, lexicalTemperature }).save(wrote);
    }
    if (values.json) {
      console.log(JSON.stringify({ ...fit, defaults: PAPER_RULING, maxShortlist, wrote: wrote ?? null }, null, 2));
      return 0;
    }
    const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
    console.log(`records: ${fit.evaluated} with verdict read-outs (of ${records.length}); ${fit.settings} settings tried`);
    const lexical = fit.withoutLexicalHitAt1 !== undefined;
    console.log(`best:     α=${fit.alpha}  γ=${fit.gamma}  Δ=${fit.delta.toPrecision(4)}   Hit@1 ${pct(fit.hitAt1)}  avg shortlist ${fit.avgShortlist.toFixed(2)}`);
    if (lexical) console.log(`lexical:  β=${fit.beta}  T=${fit.lexicalTemperature}   (without B, β = 0: Hit@1 ${pct(fit.withoutLexicalHitAt1!)})`);
    console.log(`defaults: α=${PAPER_RULING.alpha}  γ=${PAPER_RULING.gamma}  Δ=${PAPER_RULING.delta}   Hit@1 ${pct(fit.defaultHitAt1)}  avg shortlist ${fit.defaultAvgShortlist.toFixed(2)}`);
    console.log(`ceiling (a gold anywhere in the verdict pool of ${maxShortlist}): ${pct(fit.oracleHitAt1)}`);
    console.log(wrote ? `wrote α, γ, Δ into ${wrote}${lexical ? " (and β, T)" : ""}` : "(not written: pass --write to store them in the projections)");
    return 0;
  },
};
