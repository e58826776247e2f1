/**
 * Evaluation and calibration on a routing benchmark: BM25 and GAVEL's methods scored by raw Hit@1
 * and R@20 ({@link evaluate}), and the ruling's α, γ, Δ fitted on validation read-outs
 * ({@link calibrate}), and the abstention decision fitted from in-domain and off-domain records
 * ({@link fitAbstention}).
 */
export { acceptedIds, hitAt1, libraryIndex, LibraryIndex, recallAt, type LibraryEntry, type Ranked } from "./metrics.js";
export { batchNumber, loadTasks, parseBatches, selectTasks, type EvalTask } from "./tasks.js";
export {
  checkBank,
  EVAL_METHODS,
  evaluate,
  METHOD_LABELS,
  parseMethods,
  scoreRecords,
  type EvalLibrarySkill,
  type EvalMethod,
  type EvalProgress,
  type EvalResult,
  type EvalRow,
  type EvaluateOptions,
  type PerQueryRecord,
} from "./evaluate.js";
export type { RouterReadouts } from "./readouts.js";
export { calibrate, PAPER_RULING, type CalibrateOptions, type CalibrationGrid, type CalibrationResult } from "./calibrate.js";
export { loadLibrary, readPerQuery, writePerQuery, type LoadedLibrary } from "./io.js";
export {
  firstStageHit,
  firstStageRates,
  fitFirstStageBeta,
  fitLexicalTemperature,
  LEXICAL_T_GRID,
  lexicalB,
  unionRecall,
  type LexicalRecord,
  type LexicalTemperatureFit,
} from "./lexical-fit.js";
export {
  abstainCut,
  evaluateAbstention,
  familyLabel,
  fitAbstention,
  replayAbstention,
  splitByDomain,
  type AbstentionCandidate,
  type AbstentionEvaluation,
  type AbstentionFamily,
  type AbstentionFitReport,
  type AbstentionRates,
  type AbstentionRecord,
  type AbstentionRuling,
  type FitAbstentionOptions,
  type ReplayedAbstention,
} from "./abstention-fit.js";
export { fitLogistic, solveLinear, type LogisticFit, type LogisticOptions } from "./logistic.js";
