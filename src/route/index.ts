/**
 * The route stage's public surface: the {@link Router} and its option and result types, the ruling
 * (one implementation, used by the router and replayed by evaluation and calibration), and one
 * skill's key encoding (used by install and by training). `train/` and `eval/` import route only
 * from here.
 *
 * @module
 */
export { Router } from "./Router.js";
export {
  COMMIT_INTERVAL_MS,
  type Candidate,
  type GlanceHit,
  type GlanceOptions,
  type ExclusionOptions,
  type InstalledSkill,
  type InstallOptions,
  type InstallProgress,
  type InstallReport,
  type InstallStages,
  type SkillWarnings,
  type RankOptions,
  type RankResult,
  type RouteContext,
  type RouteOptions,
  type RouteResult,
  type RouterOpenOptions,
  type Vote,
} from "./types.js";
export type { VerdictInputs } from "./verdict.js";
export type { KeyIvfWarm } from "./glance-index-use.js";
export {
  chooseByRuling,
  firstStage,
  firstStageOrder,
  firstStageShortlist,
  logSumExp,
  meanLogLikelihood,
  rule,
  ruledShortlist,
  ruling,
  shortlist,
  yesNoLogOdds,
  type Ruled,
  type RulingParams,
  type RulingWeights,
  type VerdictRecord,
} from "./ruling.js";
export {
  ABSTENTION_FEATURES,
  abstentionFeatures,
  checkAbstentionModel,
  decideAbstention,
  describeAbstentionModel,
  featureValue,
  logisticLogit,
  modelFeatures,
  needsLexical,
  needsVerdict,
  readsFeature,
  type AbstentionDecision,
  type AbstentionFeature,
  type AbstentionFeatures,
  type AbstentionModel,
  bandFor,
  type BandAbstention,
  type BySizeAbstention,
  type LogisticAbstention,
  type RuledForAbstention,
  type ThresholdAbstention,
} from "./abstention.js";
export { coverKeys, encodeSkillKeys, type CoveredKeys, type SkillKeys, type StageLap } from "./keys.js";
export {
  getSkill,
  parseAllowedTools,
  readSkillRecord,
  skillHandle,
  locateSkill,
  skillFileOf,
  type SkillBankView,
  type SkillHandle,
  type SkillHost,
  type SkillLocation,
  type SkillProvenance,
  type SkillRecord,
  type SkillRouter,
  type SkillSourceStatus,
} from "./skill-record.js";
