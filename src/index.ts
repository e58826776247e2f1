export { GavelError, type GavelErrorCode } from "./errors.js";
export { Model, type ModelLoadOptions, type ModelInfo, type ScoreResult, type ScoreOptions, type CallOptions } from "./model/Model.js";
export { loadBinding } from "./native/binding.js";
