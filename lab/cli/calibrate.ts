import { type AbstentionModel, type Command, config, describeAbstentionModel, intArg, invalidArgument, numberArg, parseFlags, routerOptions, routerOptionsHelp, table, UsageError } from "gavel-router/internal";
import { calibrate, PAPER_RULING, type CalibrationResult } from "../eval/calibrate.js";
import { checkPerQueryOutput, readPerQuery, writePerQuery } from "../eval/io.js";
import type { PerQueryRecord } from "../eval/evaluate.js";
import { fitAbstention, splitByDomain, type AbstentionFitReport, type AbstentionRecord } from "../eval/abstention-fit.js";
import { Projections, PROJECTION_DEFAULTS } from "gavel-router";
import { runEvaluation, taskOptions, taskOptionsHelp } from "./eval.js";

/** `gavel calibrate`'s options. */
const CALIBRATE_OPTIONS = {
  ...routerOptions,
  ...taskOptions,
  "per-query": { type: "string" },
  "save-per-query": { type: "string" },
  write: { type: "boolean" },
  out: { type: "string", short: "o" },
  "max-shortlist": { type: "string" },
  "no-lexical": { type: "boolean" },
  "off-domain": { type: "string" },
  "trigger-rate": { type: "string" },
} as const;

/** The abstention model fitted after the ruling's constants, with its report. */
type AbstentionFit = { model: AbstentionModel; report: AbstentionFitReport };

/**
 * Reads the off-domain records of `--off-domain` (each must have no accepted skill: a file of tasks
 * passed by mistake is refused).
 */
async function readOffDomain(path: string): Promise<AbstentionRecord[]> {
  const records: AbstentionRecord[] = await readPerQuery(path);
  const served = records.filter((r) => r.accepted.length > 0);
  if (served.length > 0) throw invalidArgument(`${path}: ${served.length} of ${records.length} records have accepted skills (e.g. ${served[0].id}); --off-domain takes prompts no skill serves`);
  return records.map((r) => ({ ...r, offDomain: true }));
}

/** Fits abstention under the fitted ruling: in-domain from --per-query, off-domain from --off-domain (and flagged records). */
function fitAbstentionAfter(fit: CalibrationResult, records: readonly AbstentionRecord[], off: readonly AbstentionRecord[], maxShortlist: number, target: number | undefined): AbstentionFit {
  const split = splitByDomain(records);
  const lexicalTemperature = fit.withoutLexicalHitAt1 !== undefined ? fit.lexicalTemperature : undefined;
  const ruling = { alpha: fit.alpha, gamma: fit.gamma, delta: fit.delta, beta: fit.beta, maxShortlist, lexicalTemperature };
  return fitAbstention(split.inDomain, [...split.offDomain, ...off], ruling, target === undefined ? {} : { targetTriggerRate: target });
}

function printAbstention({ model, report: r }: AbstentionFit): void {
  const pct = (x: number | undefined) => (x === undefined ? "–" : `${(100 * x).toFixed(1)}%`);
  console.log(
    `\nabstention: ${r.inDomain} in-domain, ${r.offDomain} off-domain records${r.skipped ? ` (${r.skipped} without read-outs left out)` : ""}; ` +
      `features ${r.features.join(", ")}; ${r.folds ? `${r.folds}-fold cross-validation` : "no cross-validation (too few records)"}`,
  );
  console.log(`target: triggers on ≤ ${pct(r.targetTriggerRate)} of off-domain prompts (in-domain abstentions aimed at ≤ ${pct(r.targetAbstentionRate)})`);
  const rows = r.candidates.map((c) => [c.label, pct(c.fitTriggerRate), pct(c.cv?.abstentionRate), pct(c.cv?.triggerRate), pct(c.fitting.abstentionRate), pct(c.fitting.triggerRate), String(Number(c.model.threshold.toPrecision(4)))]);
  console.log(table(["model", "set at", "CV abstain", "CV trigger", "fit abstain", "fit trigger", "threshold"], rows));
  const rated = r.cv ?? r.fitting;
  console.log(`chosen: ${r.chosen}: ${describeAbstentionModel(model)}`);
  console.log(
    `  abstains on ${pct(rated.abstentionRate)} of in-domain tasks, triggers on ${pct(rated.triggerRate)} of off-domain prompts ` +
      `(${r.cv ? "out of fold" : "on the fitting records"}; on the fitting records ${pct(r.fitting.abstentionRate)} and ${pct(r.fitting.triggerRate)})`,
  );
  if (!r.meetsTriggerTarget) console.log(`  the trigger target is not met: no model found triggers on ≤ ${pct(r.targetTriggerRate)} out of fold`);
  if (!r.meetsAbstentionTarget) console.log(`  the in-domain target is not met: ${pct(rated.abstentionRate)} > ${pct(r.targetAbstentionRate)}`);
}

/** `gavel calibrate`: the ruling's α, γ, Δ fitted on validation tasks. */
export const calibrateCommand: Command = {
  summary: "fit the ruling's α, γ and Δ on validation tasks (and store them in the projections)",
  help: `usage: gavel calibrate --per-query F [--off-domain O] [--projections P] [--write] [options]
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
  --off-domain O        per-query records of off-domain prompts (no accepted skill; JSONL[.gz]):
                        also fit the abstention decision on them and the in-domain records, under
                        the fitted constants (a threshold on one of the ruling's margin, V, g, B of
                        the winner, the best B, the lexical coverage and reach, or a small logistic
                        model, chosen by cross-validation); --write stores it. Without it, --write drops a stored
                        abstention model (it was fitted under the old constants).
  --trigger-rate R      the stated false-trigger rate: at most this share of off-domain prompts get a
                        skill (default 0.1)
${routerOptionsHelp}`,
  options: CALIBRATE_OPTIONS,
  async run(args) {
    const { values } = parseFlags("calibrate", { args, options: CALIBRATE_OPTIONS });
    const fromFile = values["per-query"];
    if (!fromFile === !values.tasks) {
      throw new UsageError("gavel calibrate needs --per-query F or --tasks T (one of them)", this.help);
    }
    const projectionsPath = values.projections || config().projections;
    const write = values.write || values.out !== undefined;
    if (write && !projectionsPath) throw invalidArgument("--write needs --projections <file.gguf> (the file whose α, γ, Δ are set)");
    if (values["save-per-query"]) checkPerQueryOutput(values["save-per-query"]);
    // The projections and options are read up front so that a bad one fails before minutes of evaluation.
    const projections = projectionsPath ? await Projections.load(projectionsPath) : undefined;
    const maxShortlist = intArg(values["max-shortlist"], "max-shortlist", { min: 1 }) ?? projections?.maxShortlist ?? PROJECTION_DEFAULTS.maxShortlist;
    const triggerRate = numberArg(values["trigger-rate"], "trigger-rate");
    if (triggerRate !== undefined && !(triggerRate >= 0 && triggerRate < 1)) throw invalidArgument(`--trigger-rate must be in [0, 1), got ${triggerRate}`);
    const offDomain = values["off-domain"] ? await readOffDomain(values["off-domain"]) : undefined;

    let records: PerQueryRecord[];
    if (fromFile) records = await readPerQuery(fromFile);
    else {
      // Δ is fitted over the wide pool: the glance's top maxShortlist each get a verdict, whatever Δ
      const result = await runEvaluation(values, ["glance", "ruling"], { pool: maxShortlist });
      records = result.perQuery;
      if (values["save-per-query"]) await writePerQuery(values["save-per-query"], records);
    }
    const fit = calibrate(records, { maxShortlist, ...(values["no-lexical"] ? { lexical: false } : {}) });
    const abstention = offDomain ? fitAbstentionAfter(fit, records, offDomain, maxShortlist, triggerRate) : undefined;
    // no gold in any record's verdict pool: every setting scores 0 and the fit says nothing
    if (fit.evaluated > 0 && fit.oracleHitAt1 === 0) {
      console.error(`gavel: warning: none of the ${fit.evaluated} records has a gold in its verdict pool (ceiling 0%): every setting scores 0, so the constants below are arbitrary${write ? " (written as asked)" : ""}; records whose pools hold their golds (better projections, or a wider --pool when they are made) give the fit something to go on`);
    }
    let wrote: string | undefined;
    if (write) {
      wrote = values.out ?? projectionsPath!;
      const { alpha, gamma, delta, beta, lexicalTemperature } = fit;
      await projections!.withCalibration({ alpha, gamma, delta, beta, lexicalTemperature, abstention: abstention?.model ?? null }).save(wrote);
    }
    if (values.json) {
      console.log(JSON.stringify({ ...fit, defaults: PAPER_RULING, maxShortlist, ...(abstention ? { abstention } : {}), wrote: wrote ?? null }, null, 2));
      return 0;
    }
    // the records' own pool (`gavel eval --pool N`) where they say it, else the projections' maxShortlist
    const pools = records.map((r) => r.pool).filter((p): p is number => typeof p === "number");
    printCalibration(fit, records.length, pools.length ? Math.max(...pools) : maxShortlist);
    if (abstention) printAbstention(abstention);
    const dropped = !abstention && projections?.abstention ? " (and dropped its abstention model, fitted under the old constants: refit it with --off-domain)" : "";
    const what = `into ${wrote}${fit.withoutLexicalHitAt1 !== undefined ? " (and β, T)" : ""}${abstention ? " and the abstention model" : ""}`;
    console.log(wrote ? `wrote α, γ, Δ ${what}${dropped}` : "(not written: pass --write to store them in the projections)");
    return 0;
  },
};

function printCalibration(fit: CalibrationResult, total: number, pool: number): void {
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  console.log(`records: ${fit.evaluated} with verdict read-outs (of ${total}); ${fit.settings} settings tried`);
  const lexical = fit.withoutLexicalHitAt1 !== undefined;
  console.log(`best:     α=${fit.alpha}  γ=${fit.gamma}  Δ=${fit.delta.toPrecision(4)}   Hit@1 ${pct(fit.hitAt1)}  avg shortlist ${fit.avgShortlist.toFixed(2)}`);
  if (lexical) console.log(`lexical:  β=${fit.beta}  T=${fit.lexicalTemperature}   (without B, β = 0: Hit@1 ${pct(fit.withoutLexicalHitAt1!)})`);
  console.log(`defaults: α=${PAPER_RULING.alpha}  γ=${PAPER_RULING.gamma}  Δ=${PAPER_RULING.delta}   Hit@1 ${pct(fit.defaultHitAt1)}  avg shortlist ${fit.defaultAvgShortlist.toFixed(2)}`);
  console.log(`ceiling (a gold anywhere in the verdict pool of ${pool}): ${pct(fit.oracleHitAt1)}`);
}
