/**
 * gavel-router/internal: the runtime's internals that the lab (lab/, `gavel-router/lab`) and the
 * repository's tools build on, and that the public entry (src/index.ts) does not carry: the native
 * trainer's binding types, kernels' and routing stages' building blocks, the bank's helpers, the
 * `gavel` CLI's option parsing and output.
 *
 * NOT A STABLE API. Anything here may change or go in any release without notice; applications use
 * `gavel-router` (and its adapter subpaths) only. The lab imports the runtime through this file and
 * src/index.ts and nothing else (`npm run lint:deps` checks it), so this list is exactly what the lab
 * needs of the runtime beyond the public API.
 *
 * @module
 */
export { invalidArgument } from "./errors.js";
export { UsageError } from "./cli/usage-error.js";
export { config, threadPoolSize } from "./config.js";
export { abortedError, checkFinite, checkInt, checkLayer, INT32_MAX, intOption } from "./util/validate.js";
export { mulberry32, Rng } from "./util/prng.js";
export { readJsonl } from "./util/jsonl.js";
export { writeFileDurable } from "./util/durable-file.js";
export { inOrder } from "./util/in-order.js";
export type { NativeResidentBatch, NativeTrainBatch, NativeTrainer, NativeTrainerOptions, NativeTrainerState } from "./native/binding.js";
export { describeMismatch, describeModel, isModelFingerprint } from "./model/fingerprint.js";
export { StatesCache } from "./model/states-cache.js";
export { RenderEncoder } from "./render/encode.js";
export { SKILL_INTRO, type RenderableSkill } from "./render/index.js";
export { defaultLayer, type AbstentionModel } from "./projections/projections.js";
export type { BandAbstention } from "./projections/abstention-model.js";
export { bm25Tokens } from "./lexical/bm25.js";
export { bm25Ceiling, lexicalCoverage, lexicalReach } from "./lexical/postings.js";
export { referenceCoverage } from "./lexical/reference-idf.js";
export { lexicalPosterior, logPartition } from "./lexical/posterior.js";
export {
  ABSTENTION_FEATURES,
  abstentionFeatures,
  chooseByRuling,
  coverKeys,
  decideAbstention,
  describeAbstentionModel,
  featureValue,
  firstStage,
  firstStageOrder,
  logisticLogit,
  needsVerdict,
  readsFeature,
  ruledShortlist,
  ruling,
  shortlist,
  type AbstentionFeature,
  type AbstentionFeatures,
  type RulingParams,
  type VerdictRecord,
} from "./route/index.js";
export type { Command } from "./cli/commands/types.js";
export { bankOptions, modelOptions, openModel, routerOptions, routerOptionsHelp, withRouter, type RouterArgs } from "./cli/commands/common.js";
export { withInterrupt } from "./cli/ui/interrupt.js";
export { intArg, listArg, numberArg } from "./cli/ui/options.js";
export { checkOutPath } from "./cli/ui/out-path.js";
export { errnoError } from "./util/errno.js";
export { parseFlags, type FlagSpecs, type ParsedFlags } from "./cli/ui/flags.js";
export { Progress } from "./cli/ui/progress.js";
export { sparkline, table } from "./cli/ui/table.js";
