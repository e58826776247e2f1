/**
 * gavel-router: route an agent to the right SKILL.md by reading the agent model's own forward passes.
 *
 * - {@link Model}: a frozen GGUF model run by llama.cpp (hidden states, scoring with cached prefixes).
 * - {@link Router}: install skills into ε-cover banks, glance, verdict, ruling.
 * - {@link Projections}: the trained maps W_q, W_s and the ruling's constants, in one GGUF file.
 */
export { GavelError, type GavelErrorCode } from "./errors.js";
export { Model, type ModelLoadOptions, type ModelInfo, type ScoreResult, type ScoreOptions, type CallOptions } from "./model/Model.js";
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
export { Projections, PROJECTION_DEFAULTS, type ProjectionsMeta, type RandomProjectionsOptions, type Calibration } from "./projections/projections.js";
export { modelFingerprint, type ModelFingerprint } from "./model/fingerprint.js";
export { loadSkills, parseSkillMarkdown, type Skill, type SkillInput, type SkillFailure, type LoadSkillsOptions, type LoadSkillsResult } from "./skills/index.js";
export { ChatTemplate, renderChat, renderSkill, renderTask, renderVerdict, type ChatMessage } from "./render/index.js";
export { KeyBank, glanceDevice } from "./bank/key-bank.js";
export { glance, coverFarthestFirst, coverFarthestFirstAsync, projectNormalize, voteK, decayWeights } from "./kernels/kernels.js";
export { BankStore, type BankHeader, type BankEntry } from "./bank/index.js";
export { GgufWriter, readGgufHeader, readGgufTensor } from "./gguf/index.js";
export { scanLayers, pickLayer, readLayerChoice, writeLayerChoice, layerChoiceOf, type LayerScan, type LayerChoice, type ScanLayersOptions } from "./train/layer.js";
export { matrixEntropy } from "./train/entropy.js";
export { trainProjections, type TrainProjectionsOptions, type TrainProjectionsResult } from "./train/pipeline.js";
export { evaluate, calibrate, Bm25Index, hitAt1, recallAt, acceptedIds, loadTasks, type CalibrationResult } from "./eval/index.js";
export { defaultModelPaths } from "./defaults.js";
/** @internal The raw addon, for tests and tools. */
export { loadBinding } from "./native/binding.js";
export { type GenerateOptions, type GenerateChunk, type GenerateResult, type StopReason } from "./model/generate.js";
export { generateChat, type GenerateChatOptions } from "./render/generate-chat.js";
export { LiveContext, type LiveScore } from "./route/live.js";
export { Gate, gateScoreFeatures, GATE_SCORE_FEATURES, loadGate, saveGate, type GateModel, type GateInfo } from "./route/gate.js";
export { selectLive, skillInjection, type LiveSelection, type LiveSelectOptions } from "./route/firing.js";
