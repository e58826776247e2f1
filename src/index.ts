/**
 * gavel-router: route an agent to the right SKILL.md by reading the agent model's own forward passes.
 *
 * - {@link Model}: a frozen GGUF model run by llama.cpp (hidden states, scoring with cached prefixes).
 * - {@link Router}: install skills into ε-cover banks, glance, verdict, ruling.
 * - {@link Projections}: the trained maps W_q, W_s and the ruling's constants, in one GGUF file.
 * - {@link connect}, {@link routeViaServerIfRunning}: a client of a running `gavel serve`.
 * - {@link discoverSkills}: the skill folders an agent host reads, and the skills in them.
 *
 * Training, evaluation and calibration are the lab's: `gavel-router/lab` (lab/index.ts). The full
 * list with one line per export is docs/api.md.
 */
export { GavelError, GAVEL_ERROR_CODES, type GavelErrorCode } from "./errors.js";
export { Model, type ModelLoadOptions, type ModelInfo, type ScoreResult, type ScoreOptions, type CallOptions, type TokenizeOptions, type TokenizeAsyncOptions } from "./model/Model.js";
export {
  Router,
  type RouterOpenOptions,
  type RouteContext,
  type InstallOptions,
  type InstallProgress,
  type InstallReport,
  type InstallStages,
  type SkillWarnings,
  type InstalledSkill,
  type GlanceOptions,
  type ExclusionOptions,
  type GlanceHit,
  type RouteOptions,
  type RouteResult,
  type Candidate,
  type Vote,
  type RankOptions,
  type RankResult,
  type VerdictInputs,
  type KeyIvfWarm,
  getSkill,
  readSkillRecord,
  parseAllowedTools,
  skillHandle,
  locateSkill,
  type SkillRecord,
  type SkillHandle,
  type SkillProvenance,
  type SkillSourceStatus,
  type SkillHost,
  type SkillLocation,
  type SkillBankView,
  type SkillRouter,
} from "./route/index.js";
export { Projections, PROJECTION_DEFAULTS, type ProjectionsMeta, type RandomProjectionsOptions, type Calibration, type GlanceRowWeights, type RerankModel, type RerankStage, type RerankFeature, type AbstentionReference } from "./projections/projections.js";
export { modelFingerprint, type ModelFingerprint } from "./model/fingerprint.js";
export { loadSkills, parseSkillMarkdown, type Skill, type SkillInput, type SkillFailure, type LoadSkillsOptions, type LoadSkillsResult } from "./skills/index.js";
export { ChatTemplate, renderChat, renderSkill, renderTask, renderVerdict, type ChatMessage } from "./render/index.js";
export { KeyBank, glanceDevice } from "./bank/key-bank.js";
export {
  GlanceIndex,
  glancePruned,
  openGlanceIndex,
  saveGlanceIndex,
  defaultMaxCandidates,
  FULL_EXACTNESS,
  DEFAULT_NPROBE,
  type GlanceIndexKnob,
  type GlanceIndexTrainOptions,
  type GlanceIndexSearch,
  type GlanceIndexStats,
  type GlanceIndexSyncStats,
  type GlanceIndexOpenOutcome,
  type IndexedSkill,
  type PrunedGlanceOptions,
  type PrunedGlanceResult,
} from "./bank/glance-index.js";
export { glance, coverFarthestFirst, coverFarthestFirstAsync, projectNormalize, voteK, routeVoteK, MAX_VOTE_K, decayWeights } from "./kernels/kernels.js";
export { BankStore, type BankHeader, type BankEntry } from "./bank/index.js";
export { GgufWriter, readGgufHeader, readGgufTensor } from "./gguf/index.js";
export { Bm25Index, type Bm25Doc, type Bm25Hit, type Bm25Options } from "./lexical/bm25.js";
export { ReferenceIdf, type ReferenceIdfInit } from "./lexical/reference-idf.js";
export { DomainModel, domainWords, type DomainModelInit } from "./lexical/domain.js";
export { defaultModelPaths } from "./defaults.js";
/** @internal The raw addon, for tests and tools. */
export { loadBinding } from "./native/binding.js";
export { addonStatus, type AddonStatus, type AddonSource } from "./native/binding.js";
export { type CudaAddonStatus } from "./native/cuda-package.js";
export { type GenerateOptions, type GenerateChunk, type GenerateResult, type StopReason } from "./model/generate.js";
export { generateChat, type GenerateChatOptions } from "./render/generate-chat.js";
export { LiveContext, type LiveScore, type LiveScores, type LiveReadOptions } from "./route/live.js";
export { Gate, gateScoreFeatures, GATE_SCORE_FEATURES, loadGate, saveGate, type GateModel, type GateInfo } from "./route/gate.js";
export { selectLive, skillInjection, type LiveSelection, type LiveSelectOptions } from "./route/firing.js";
export {
  connect,
  connectIfRunning,
  isRunning,
  request,
  findEndpoint,
  routeViaServerIfRunning,
  ServeClient,
  type Endpoint,
  type EndpointOptions,
  type IsRunningOptions,
  type RequestOptions,
  type ServerRouteOptions,
} from "./serve/client.js";
export { serverRouter, type ServerRouter, type ServerRouterOptions } from "./serve/client-router.js";
// search_skills and load_skill as plain functions, for a tool in any framework (the adapters and `gavel mcp` use them)
export {
  searchSkills,
  searchText,
  skillText,
  SEARCH_SKILLS_DESCRIPTION,
  SEARCH_TASK_DESCRIPTION,
  LOAD_SKILL_DESCRIPTION,
  DEFAULT_SEARCH_K,
  MAX_SEARCH_K,
  type SkillSource,
  type SkillSummary,
  type SearchHit,
  type SearchResult,
  type SearchOptions,
} from "./adapters/skill-tools.js";
export { discoverSkills, skillRoots, SKILL_HOSTS, type DiscoverOptions, type DiscoverResult, type DiscoveryHost, type SkillRoot, type SkillScope, type ShadowedSkill } from "./skills/discover.js";
