/**
 * gavel-router/lab: training, evaluation and calibration of the router, apart from the runtime.
 *
 * - {@link trainProjections}: train W_q and W_s (the glance head) on a skill library.
 * - {@link scanLayers}, {@link pickLayer}: the glance's layer ℓ* at the floor of the entropy valley.
 * - {@link evaluate}, {@link calibrate}: score the methods on a benchmark; fit the ruling's constants.
 * - {@link fitAbstention}, {@link fitGate}, {@link buildTrajectories}: the abstention decision and
 *   the live gate, fitted from records and agent trajectories.
 * - {@link labCommands}: the `gavel train|eval|calibrate|layer|train-gate` commands.
 *
 * The lab reaches the runtime only through `gavel-router` and `gavel-router/internal`
 * (`npm run lint:deps` checks it), and the runtime never imports the lab but for the CLI's dynamic
 * import of this entry. ESM only. The full list with one line per export is docs/api.md.
 *
 * @module
 */
export { trainProjections, type TrainProjectionsOptions, type TrainProjectionsResult } from "./train/pipeline.js";
export { assertTrainerDevice, TRAIN_DEFAULTS, type TrainProgress, type RetrievalMetrics } from "./train/trainer.js";
export { parseQueryKinds, type QueryKind } from "./train/queries/index.js";
export {
  scanLayers,
  pickLayer,
  readLayerChoice,
  writeLayerChoice,
  layerChoiceOf,
  defaultLayerChoicePath,
  type LayerScan,
  type LayerChoice,
  type ScanLayersOptions,
  type LayerScanSkill,
  type LayerScanProgress,
} from "./train/layer.js";
export { matrixEntropy } from "./train/entropy.js";
export * from "./eval/index.js";
export { fitGate, type GateFit } from "./eval/gate-fit.js";
export { offDomainPrompts, type OffDomainOptions } from "./eval/off-domain.js";
export { buildTrajectories, splitTrajectories, type Trajectory, type TrajectoryOptions, type TrajectoryScenario, type TrajectoryTask } from "./gate/trajectories.js";
export {
  collectGateFeatures,
  labelledRows,
  positionMetrics,
  firingMetrics,
  chooseFiringThreshold,
  type CollectOptions,
  type TrajectoryFeatures,
  type PositionMetrics,
  type FiringMetrics,
  type FiringThreshold,
} from "./gate/gate-train.js";
export { labCommands } from "./cli/index.js";
